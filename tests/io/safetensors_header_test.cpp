// Tests for the torch-free safetensors header parser: every hostile case by its message, no over-read,
// layout.
#include "berth/io/safetensors_header.h"

#include "berth/core/error.h"
#include "support/safetensors_files.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using berth::io::parse_safetensors_header;
using berth::io::SafetensorsDtype;
using berth::io::SafetensorsEntry;
using berth::io::SafetensorsHeader;

// The image in a heap block of exactly its size, so that a read past the end is one ASan reports.
SafetensorsHeader parse_exact(const std::string& bytes, const std::string& source = "test.safetensors") {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
  std::copy(bytes.begin(), bytes.end(), copy.get());
  return parse_safetensors_header(copy.get(), bytes.size(), source);
}

TEST(SafetensorsHeader, EveryHostileFileFailsWithItsMessage) {
  for (const auto& c : berth::testing::hostile_safetensors_cases()) {
    SCOPED_TRACE(c.name);
    const std::string text = berth::testing::error_text([&] { parse_exact(c.bytes, "hostile.safetensors"); });
    EXPECT_EQ(text.rfind("hostile.safetensors: ", 0), 0u) << text;
    berth::testing::expect_contains(text, c.message);
    EXPECT_TRUE(berth::testing::contains(text, "Fix:") || berth::testing::contains(text, "berth reads"))
        << text;
  }
}

TEST(SafetensorsHeader, EveryValidFileParses) {
  for (const auto& c : berth::testing::valid_safetensors_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_NO_THROW(parse_exact(c.bytes));
  }
}

// Each prefix of a valid file is a truncated file: refused, and never read past its end.
TEST(SafetensorsHeader, EveryTruncationIsRefusedWithoutOverRead) {
  for (const auto& c : berth::testing::valid_safetensors_cases()) {
    for (size_t size = 0; size < c.bytes.size(); ++size) {
      SCOPED_TRACE(c.name + " cut to " + std::to_string(size));
      EXPECT_THROW(parse_exact(c.bytes.substr(0, size)), berth::Error);
    }
  }
}

TEST(SafetensorsHeader, ReadsEntriesByOffsetAndMetadata) {
  const auto cases = berth::testing::valid_safetensors_cases();
  const SafetensorsHeader header = parse_exact(cases[2].bytes);  // two_tensors
  ASSERT_EQ(cases[2].name, "two_tensors");
  ASSERT_EQ(header.entries.size(), 2u);
  EXPECT_EQ(header.entries[0].name, "a");
  EXPECT_EQ(header.entries[0].dtype, SafetensorsDtype::F32);
  EXPECT_EQ(header.entries[0].shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(header.entries[0].begin, 0u);
  EXPECT_EQ(header.entries[0].end, 8u);
  EXPECT_EQ(header.entries[1].name, "b");
  EXPECT_EQ(header.entries[1].dtype, SafetensorsDtype::I16);
  EXPECT_EQ(header.entries[1].shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(header.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  const size_t header_length = cases[2].bytes.size() - 8 - 12;
  EXPECT_EQ(header.data_offset, 8 + header_length);

  const SafetensorsHeader reordered = parse_exact(cases[4].bytes);  // out_of_order: by offset, not by key
  ASSERT_EQ(cases[4].name, "out_of_order");
  ASSERT_EQ(reordered.entries.size(), 2u);
  EXPECT_EQ(reordered.entries[0].name, "a");
  EXPECT_EQ(reordered.entries[1].name, "b");
  EXPECT_TRUE(reordered.metadata.empty());
}

TEST(SafetensorsHeader, ScalarsAndEmptyTensors) {
  const auto cases = berth::testing::valid_safetensors_cases();
  ASSERT_EQ(cases[3].name, "scalar_and_empty");
  const SafetensorsHeader header = parse_exact(cases[3].bytes);
  ASSERT_EQ(header.entries.size(), 3u);
  EXPECT_EQ(header.entries[0].name, "s");
  EXPECT_TRUE(header.entries[0].shape.empty());
  EXPECT_EQ(header.entries[1].end - header.entries[1].begin, 0u);
  EXPECT_EQ(header.entries[2].shape, (std::vector<int64_t>{3, 0}));
}

TEST(SafetensorsHeader, DtypeNamesAndSizes) {
  const std::vector<std::pair<std::string, size_t>> expected = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
  for (const auto& [name, size] : expected) {
    const auto dtype = berth::io::parse_dtype(name);
    ASSERT_TRUE(dtype.has_value()) << name;
    EXPECT_EQ(berth::io::dtype_name(*dtype), name);
    EXPECT_EQ(berth::io::dtype_size(*dtype), size) << name;
  }
  EXPECT_FALSE(berth::io::parse_dtype("U32").has_value());
  EXPECT_FALSE(berth::io::parse_dtype("f32").has_value());
}

// HF's writer: dtype descending in its enum order, then by name.
TEST(SafetensorsHeader, LayoutOrderIsTheReferenceOrder) {
  std::vector<SafetensorsEntry> entries;
  for (const char* dtype : {"BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "F64", "I64"}) {
    for (const char* name : {"b", "a"}) {
      SafetensorsEntry entry;
      entry.name = std::string(name) + "_" + dtype;
      entry.dtype = *berth::io::parse_dtype(dtype);
      entries.push_back(entry);
    }
  }
  std::vector<std::string> order;
  for (size_t i : berth::io::safetensors_layout_order(entries)) order.push_back(entries[i].name);
  const std::vector<std::string> expected = {"a_I64", "b_I64",  "a_F64",  "b_F64", "a_F32",  "b_F32", "a_I32",
                                             "b_I32", "a_BF16", "b_BF16", "a_F16", "b_F16",  "a_I16", "b_I16",
                                             "a_I8",  "b_I8",   "a_U8",   "b_U8",  "a_BOOL", "b_BOOL"};
  EXPECT_EQ(order, expected);
}

TEST(SafetensorsHeader, SerializedHeaderParsesBackAndIsPadded) {
  std::vector<SafetensorsEntry> entries(2);
  entries[0].name = "quote\"back\\slash\ttab\x01";
  entries[0].dtype = SafetensorsDtype::F32;
  entries[0].shape = {2};
  entries[0].end = 8;
  entries[1].name = "unicode \xc3\xa9";
  entries[1].dtype = SafetensorsDtype::BOOL;
  entries[1].shape = {};
  entries[1].begin = 8;
  entries[1].end = 9;
  const std::map<std::string, std::string> metadata = {{"k\n", "v\"\x1f"}};
  const std::string prefix = berth::io::serialize_safetensors_header(entries, metadata);
  EXPECT_EQ(prefix.size() % 8, 0u);
  EXPECT_EQ(prefix.substr(8, 17), "{\"__metadata__\":{");
  EXPECT_TRUE(berth::testing::contains(prefix, R"("quote\"back\\slash\ttab\u0001")")) << prefix;
  EXPECT_TRUE(berth::testing::contains(prefix, R"({"k\n":"v\"\u001f"})")) << prefix;

  const SafetensorsHeader header = parse_exact(prefix + std::string(9, '\0'));
  ASSERT_EQ(header.entries.size(), 2u);
  EXPECT_EQ(header.entries[0].name, entries[0].name);
  EXPECT_EQ(header.entries[1].name, entries[1].name);
  EXPECT_TRUE(header.entries[1].shape.empty());
  EXPECT_EQ(header.metadata, metadata);
  EXPECT_EQ(header.data_offset, prefix.size());
}

TEST(SafetensorsHeader, SerializeRefusesNamesJsonCannotHold) {
  std::vector<SafetensorsEntry> entries(1);
  entries[0].name = "bad\xff";
  berth::testing::expect_contains(
      berth::testing::error_text([&] { berth::io::serialize_safetensors_header(entries, {}); }),
      {"tensor name 'bad", "is not valid UTF-8"});
  entries[0].name = "__metadata__";
  berth::testing::expect_contains(
      berth::testing::error_text([&] { berth::io::serialize_safetensors_header(entries, {}); }),
      {"a tensor cannot be named \"__metadata__\""});
  berth::testing::expect_contains(berth::testing::error_text([&] {
                                    berth::io::serialize_safetensors_header({}, {{"k", "\xc0\x80"}});
                                  }),
                                  {"metadata value", "is not valid UTF-8"});
}

}  // namespace
