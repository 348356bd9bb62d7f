// berth.tokenizer(DIR): berth's tokenizers (any tokenizer.json) with HF tokenizers' method and field names.
#include <pybind11/stl.h>

#include "bindings.h"

#include "berth/tokenizer/tokenizer.h"
#include "berth/tokenizer/tokenizer_files.h"

namespace py = pybind11;

namespace berth::python {
namespace {

using tokenizer::Encoding;
using tokenizer::Tokenizer;

// HF tokenizers' Encoding.tokens: the token text of every id.
std::vector<std::string> encoding_tokens(const Tokenizer& tok, const Encoding& e) {
  std::vector<std::string> tokens;
  tokens.reserve(e.ids.size());
  for (int64_t id : e.ids) tokens.push_back(tok.id_to_token(id));
  return tokens;
}

// HF's word_ids / sequence_ids: None where berth keeps -1 (special tokens, padding).
template <typename T>
py::list none_for_negative(const std::vector<T>& values) {
  py::list out;
  for (T v : values)
    out.append(v < 0 ? py::object(py::none()) : py::object(py::int_(static_cast<int64_t>(v))));
  return out;
}

// One encoding as HF tokenizers' Encoding fields; the tokens are looked up once here.
struct PyEncoding {
  Encoding encoding;
  std::vector<std::string> tokens;
};

PyEncoding wrap(const Tokenizer& tok, Encoding e) {
  auto tokens = encoding_tokens(tok, e);
  return PyEncoding{std::move(e), std::move(tokens)};
}

tokenizer::EncodeInput encode_input(const py::handle& item) {
  if (py::isinstance<py::str>(item)) return {item.cast<std::string>(), std::nullopt};
  const auto pair = item.cast<std::pair<std::string, std::string>>();
  return {pair.first, pair.second};
}

void bind_encoding(py::module_& m) {
  py::class_<PyEncoding>(m, "Encoding")
      .def_property_readonly("ids", [](const PyEncoding& e) { return e.encoding.ids; })
      .def_property_readonly("type_ids", [](const PyEncoding& e) { return e.encoding.type_ids; })
      .def_property_readonly("attention_mask", [](const PyEncoding& e) { return e.encoding.attention_mask; })
      .def_property_readonly("special_tokens_mask",
                             [](const PyEncoding& e) { return e.encoding.special_tokens_mask; })
      .def_property_readonly("offsets", [](const PyEncoding& e) { return e.encoding.offsets; })
      .def_property_readonly("tokens", [](const PyEncoding& e) { return e.tokens; })
      .def_property_readonly("word_ids",
                             [](const PyEncoding& e) { return none_for_negative(e.encoding.word_ids); })
      .def_property_readonly("sequence_ids",
                             [](const PyEncoding& e) { return none_for_negative(e.encoding.sequence_ids); })
      .def("__len__", [](const PyEncoding& e) { return e.encoding.ids.size(); });
}

}  // namespace

void bind_tokenizer(py::module_& m) {
  bind_encoding(m);
  py::class_<Tokenizer>(m, "Tokenizer")
      .def_static("from_pretrained", &tokenizer::load_tokenizer, py::arg("dir"))
      .def_static("from_file", &Tokenizer::from_file, py::arg("path"))
      .def(
          "encode",
          [](const Tokenizer& tok, const std::string& sequence, std::optional<std::string> pair,
             bool add_special_tokens) {
            std::optional<std::string_view> pair_view;
            if (pair) pair_view = *pair;
            return wrap(tok, tok.encode(sequence, pair_view, add_special_tokens));
          },
          py::arg("sequence"), py::arg("pair") = py::none(), py::arg("add_special_tokens") = true)
      .def(
          "encode_batch",
          [](const Tokenizer& tok, const py::list& inputs, bool add_special_tokens) {
            std::vector<tokenizer::EncodeInput> batch;
            for (const auto& item : inputs) batch.push_back(encode_input(item));
            std::vector<Encoding> encoded;
            {
              py::gil_scoped_release release;  // the batch encodes on every CPU
              encoded = tok.encode_batch(batch, add_special_tokens);
            }
            std::vector<PyEncoding> out;
            for (auto& e : encoded) out.push_back(wrap(tok, std::move(e)));
            return out;
          },
          py::arg("input"), py::arg("add_special_tokens") = true)
      .def("decode", &Tokenizer::decode, py::arg("ids"), py::arg("skip_special_tokens") = true)
      .def("token_to_id", &Tokenizer::token_to_id, py::arg("token"))
      .def("id_to_token", &Tokenizer::id_to_token, py::arg("id"))
      .def("get_vocab_size", [](const Tokenizer& tok) { return tok.vocab_size(); });
}

}  // namespace berth::python
