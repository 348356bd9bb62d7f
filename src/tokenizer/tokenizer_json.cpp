// read_tokenizer_json: nlohmann's SAX parser building the JSON itself, except for model.vocab and
// model.merges, which go to flat arrays: a third of the time of a full DOM for Gemma 3's 33 MB file.
#include "tokenizer_json.h"

#include "berth/core/error.h"
#include "serde_float.h"

namespace berth::tokenizer {
namespace {

using json = nlohmann::json;

class Reader : public nlohmann::json_sax<json> {
 public:
  json root;
  ModelArrays arrays;

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override { return number(v, static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override {
    return v > static_cast<number_unsigned_t>(INT64_MAX) ? value(v)
                                                         : number(static_cast<int64_t>(v), double(v));
  }
  bool number_float(number_float_t v, const string_t& text) override {
    if (mode_ == Mode::Scores && depth_ == 2) return scored_ = serde_json_float(text), true;
    return mode_ == Mode::Dom && value(v);
  }
  bool binary(binary_t&) override { return false; }
  bool string(string_t& v) override;
  bool key(string_t& k) override;
  bool start_object(std::size_t) override;
  bool end_object() override;
  bool start_array(std::size_t) override;
  bool end_array() override;
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  enum class Mode { Dom, Vocab, Scores, Merges };

  // A scalar or a new container at the current place of the JSON; returns it.
  json* put(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *stack_.back();
    if (top.is_object()) return &(top[key_] = std::move(v));
    top.push_back(std::move(v));
    return &top.back();
  }
  bool value(json v) {
    if (mode_ != Mode::Dom) return false;  // an irregular array: the plain parse reports it
    put(std::move(v));
    return true;
  }
  bool number(int64_t v, double as_double) {
    if (mode_ == Mode::Vocab && depth_ == 1) return arrays.vocab->emplace_back(std::move(key_), v), true;
    if (mode_ == Mode::Scores && depth_ == 2) return scored_ = as_double, true;
    return value(v);
  }
  // Entering model.vocab or model.merges as a container of `mode`.
  bool enter(Mode mode) {
    mode_ = mode;
    depth_ = 1;
    put(nullptr);
    if (mode == Mode::Vocab) arrays.vocab.emplace();
    if (mode == Mode::Scores) arrays.scores.emplace();
    if (mode == Mode::Merges) arrays.merges.emplace();
    return true;
  }

  std::vector<json*> stack_;  // the open containers
  std::string key_;           // the key of the next value in an object
  json* model_ = nullptr;     // root["model"] while it is open
  Mode mode_ = Mode::Dom;
  int depth_ = 0;                   // inside an array read flat: 1 in it, 2 in an entry
  std::vector<std::string> entry_;  // the strings of the entry being read
  std::optional<double> scored_;
};

bool Reader::string(string_t& v) {
  if (mode_ == Mode::Dom) return value(std::move(v));
  if (mode_ == Mode::Merges && depth_ == 1) {
    const size_t space = v.find(' ');
    if (space == std::string::npos || v.find(' ', space + 1) != std::string::npos) return false;
    arrays.merges->emplace_back(v.substr(0, space), v.substr(space + 1));
    return true;
  }
  if (depth_ != 2 || entry_.size() >= 2) return false;
  entry_.push_back(std::move(v));
  return true;
}

bool Reader::key(string_t& k) {
  if (mode_ != Mode::Dom) {
    if (mode_ != Mode::Vocab || depth_ != 1) return false;
    key_ = std::move(k);
    return true;
  }
  key_ = std::move(k);
  return true;
}

bool Reader::start_object(std::size_t) {
  if (mode_ != Mode::Dom) return false;
  const bool model_vocab = stack_.size() == 2 && stack_.back() == model_ && key_ == "vocab";
  if (model_vocab) return enter(Mode::Vocab);
  json* object = put(json::object());
  if (stack_.size() == 1 && key_ == "model") model_ = object;
  stack_.push_back(object);
  return true;
}

bool Reader::end_object() {
  if (mode_ == Mode::Vocab && depth_ == 1) {
    mode_ = Mode::Dom;
    return true;
  }
  if (mode_ != Mode::Dom) return false;
  if (stack_.back() == model_) model_ = nullptr;
  stack_.pop_back();
  return true;
}

bool Reader::start_array(std::size_t) {
  if (mode_ == Mode::Dom) {
    const bool in_model = stack_.size() == 2 && stack_.back() == model_;
    if (in_model && key_ == "vocab") return enter(Mode::Scores);
    if (in_model && key_ == "merges") return enter(Mode::Merges);
    stack_.push_back(put(json::array()));
    return true;
  }
  if (depth_ != 1 || mode_ == Mode::Vocab) return false;
  depth_ = 2;
  entry_.clear();
  scored_.reset();
  return true;
}

bool Reader::end_array() {
  if (mode_ == Mode::Dom) {
    stack_.pop_back();
    return true;
  }
  if (depth_ == 1) {
    mode_ = Mode::Dom;
    return true;
  }
  depth_ = 1;
  if (mode_ == Mode::Merges && entry_.size() == 2 && !scored_) {
    arrays.merges->emplace_back(std::move(entry_[0]), std::move(entry_[1]));
    return true;
  }
  if (mode_ == Mode::Scores && entry_.size() == 1 && scored_) {
    arrays.scores->emplace_back(std::move(entry_[0]), *scored_);
    return true;
  }
  return false;
}

}  // namespace

TokenizerJson read_tokenizer_json(std::string_view text, const std::string& source) {
  Reader reader;
  if (json::sax_parse(text, &reader)) return {std::move(reader.root), std::move(reader.arrays)};
  // Not JSON, or arrays of another shape: the plain parse names the error, or the components do.
  try {
    return {json::parse(text), {}};
  } catch (const json::exception& e) {
    BERTH_FAIL(source, ": not valid JSON (", e.what(), "). Fix: repair or regenerate the file");
  }
}

}  // namespace berth::tokenizer
