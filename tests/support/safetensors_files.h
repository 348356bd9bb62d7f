// Hand-built safetensors file images, valid and hostile, shared by the header tests and the fuzzer's seed
// corpus.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace berth::testing {

// 8-byte little-endian header length (the real one unless `declared` is given), the header, then `data`.
inline std::string safetensors_image(const std::string& header, const std::string& data = "",
                                     std::optional<uint64_t> declared = std::nullopt) {
  const uint64_t length = declared.value_or(header.size());
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return out + header + data;
}

struct SafetensorsCase {
  std::string name;
  std::string bytes;
  // Parts of the error message, after "<source>: ", that a hostile case must produce; empty for valid ones.
  std::vector<std::string> message;
};

inline std::vector<SafetensorsCase> valid_safetensors_cases() {
  return {
      {"empty", safetensors_image("{}      "), {}},
      {"metadata", safetensors_image(R"({"__metadata__":{"format":"pt"}})"), {}},
      {"two_tensors",
       safetensors_image(
           R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
           R"("b":{"dtype":"I16","shape":[1,2],"data_offsets":[8,12]}})",
           std::string(12, '\x01')),
       {}},
      {"scalar_and_empty",
       safetensors_image(R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                         R"("e":{"dtype":"BOOL","shape":[0,5],"data_offsets":[8,8]},)"
                         R"("f":{"dtype":"BF16","shape":[3,0],"data_offsets":[8,8]}})",
                         std::string(8, '\x02')),
       {}},
      // the order of the keys need not be the order of the data; null metadata reads as none
      {"out_of_order",
       safetensors_image(R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]},"__metadata__":null,)"
                         R"("a":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})",
                         "abc"),
       {}},
      // a zero dimension first keeps the element count at 0 however large the rest (the reference agrees)
      {"zero_then_huge",
       safetensors_image(R"({"z":{"dtype":"F32","shape":[0,9223372036854775807,9223372036854775807],)"
                         R"("data_offsets":[0,0]}})"),
       {}},
      // found by the fuzzer: elements (2^62 - 1) * 4 fit, times 4 bytes would not, but a later 0 empties it;
      // the size is elements first, then bytes, so this is a valid empty tensor
      {"huge_then_zero",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[4611686018427387903,4,0],"data_offsets":[0,0]}})"),
       {}},
  };
}

inline std::vector<SafetensorsCase> hostile_safetensors_cases() {
  const std::string f32x1 = R"({"dtype":"F32","shape":[1],"data_offsets":)";
  return {
      {"empty_file", "", {"the file is 0 bytes, too short for the 8-byte header length"}},
      {"too_short", std::string("\x02\x00\x00", 3), {"the file is 3 bytes, too short"}},
      {"header_over_limit",
       safetensors_image("{}", "", 100'000'001),
       {"the header length is 100000001 bytes, over safetensors' limit of 100000000 bytes"}},
      {"header_length_max",
       safetensors_image("{}", "", UINT64_MAX),
       {"the header length is 18446744073709551615 bytes, over safetensors' limit"}},
      {"header_past_end",
       safetensors_image("{}", "", 100),
       {"the header length is 100 bytes but only 2 bytes follow the length field", "truncated"}},
      {"empty_header", safetensors_image(""), {"the header must start with '{', found an empty header"}},
      {"array_header",
       safetensors_image("[1, 2]  "),
       {"the header must start with '{', found byte 0x5b ('[')"}},
      {"leading_space", safetensors_image(" {}"), {"the header must start with '{', found byte 0x20 (' ')"}},
      {"not_json", safetensors_image("{not json}"), {"the header is not valid JSON (", "syntax error"}},
      {"truncated_json", safetensors_image(R"({"a":)"), {"the header is not valid JSON ("}},
      {"trailing_garbage", safetensors_image("{}{}"), {"the header is not valid JSON ("}},
      {"nul_padding",
       safetensors_image(std::string("{}\0\0\0\0\0\0", 8)),
       {"the header holds a NUL byte at offset 2, which JSON does not allow"}},
      // what a parser that stops at NUL would take for "{}" followed by a second, hidden header
      {"nul_then_header",
       safetensors_image(
           std::string("{}\0{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 56), "x"),
       {"the header holds a NUL byte at offset 2"}},
      {"invalid_utf8_name", safetensors_image("{\"\xff\":1}"), {"the header is not valid JSON (", "UTF-8"}},
      {"entry_not_object",
       safetensors_image(R"({"a":1})"),
       {"tensor 'a': the entry must be an object", "number 1"}},
      {"missing_dtype",
       safetensors_image(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", "abcd"),
       {"tensor 'a': the entry lacks \"dtype\""}},
      {"missing_offsets",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[1]}})", "abcd"),
       {"tensor 'a': the entry lacks \"data_offsets\""}},
      {"dtype_not_string",
       safetensors_image(R"({"a":{"dtype":5,"shape":[1],"data_offsets":[0,4]}})", "abcd"),
       {"tensor 'a': \"dtype\" must be a string", "found number 5"}},
      {"unknown_dtype",
       safetensors_image(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", "abcd"),
       {"tensor 'a': dtype F33 is unknown; berth reads I64, F64, F32, I32, BF16, F16, I16, I8, U8, BOOL"}},
      {"unsupported_dtype",
       safetensors_image(R"({"a":{"dtype":"U32","shape":[1],"data_offsets":[0,4]}})", "abcd"),
       {"tensor 'a': dtype U32 is not supported by berth"}},
      {"shape_not_array",
       safetensors_image(R"({"a":{"dtype":"F32","shape":4,"data_offsets":[0,4]}})", "abcd"),
       {"tensor 'a': \"shape\" must be an array of non-negative integers, found number 4"}},
      {"negative_dim",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd"),
       {"tensor 'a': \"shape\" must hold non-negative integers below 2^63, found number -1 in [-1]"}},
      {"fractional_dim",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "abcd"),
       {"found number 1.5"}},
      {"dim_over_int64",
       safetensors_image(R"({"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,4]}})",
                         "abcd"),
       {"found number 9223372036854775808"}},
      {"element_overflow",
       safetensors_image(R"({"a":{"dtype":"U8","shape":[4294967296,4294967297],"data_offsets":[0,4]}})",
                         "abcd"),
       {"tensor 'a': shape [4294967296, 4294967297] of U8 has more bytes than 2^64"}},
      {"byte_overflow",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4]}})",
                         "abcd"),
       {"tensor 'a': shape [4611686018427387904] of F32 has more bytes than 2^64"}},
      {"huge_then_zero",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[9223372036854775807,4,0],"data_offsets":[0,0]}})"),
       {"has more bytes than 2^64"}},
      {"offsets_not_array",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":"0,4"}})", "abcd"),
       {"tensor 'a': \"data_offsets\" must be [begin, end], two non-negative integers, found string "
        "\"0,4\""}},
      {"three_offsets", safetensors_image("{\"a\":" + f32x1 + "[0,4,8]}}", "abcd"), {"found array [0,4,8]"}},
      {"negative_offset", safetensors_image("{\"a\":" + f32x1 + "[-4,0]}}", "abcd"), {"found array [-4,0]"}},
      {"float_offsets",
       safetensors_image("{\"a\":" + f32x1 + "[0.0,4.0]}}", "abcd"),
       {"found array [0.0,4.0]"}},
      {"begin_after_end",
       safetensors_image("{\"a\":" + f32x1 + "[8,4]}}", "abcdefgh"),
       {"tensor 'a': data_offsets [8, 4] begin after they end"}},
      {"past_buffer",
       safetensors_image("{\"a\":" + f32x1 + "[4,8]}}", "abcd"),
       {"tensor 'a': data_offsets [4, 8] reach past the 4-byte data buffer"}},
      {"offset_max",
       safetensors_image("{\"a\":" + f32x1 + "[18446744073709551611,18446744073709551615]}}", "abcd"),
       {"reach past the 4-byte data buffer"}},
      {"span_mismatch",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"),
       {"tensor 'a': shape [2] of F32 (4 bytes each) needs 8 bytes but data_offsets [0, 4] span 4"}},
      {"overlap",
       safetensors_image("{\"a\":" + f32x1 + "[0,4]},\"b\":" + f32x1 + "[2,6]}}", "abcdef"),
       {"tensor 'b': data_offsets [2, 6] overlap tensor 'a' [0, 4]"}},
      {"same_span",
       safetensors_image("{\"a\":" + f32x1 + "[0,4]},\"b\":" + f32x1 + "[0,4]}}", "abcd"),
       {"tensor 'b': data_offsets [0, 4] overlap tensor 'a' [0, 4]"}},
      {"gap",
       safetensors_image("{\"a\":" + f32x1 + "[0,4]},\"b\":" + f32x1 + "[8,12]}}", "abcdefghijkl"),
       {"tensor 'b': data_offsets [8, 12] leave bytes [4, 8] of the data buffer to no tensor"}},
      {"hole_at_start",
       safetensors_image("{\"a\":" + f32x1 + "[4,8]}}", "abcdefgh"),
       {"tensor 'a': data_offsets [4, 8] leave bytes [0, 4] of the data buffer to no tensor"}},
      {"trailing_bytes",
       safetensors_image("{\"a\":" + f32x1 + "[0,4]}}", "abcdefgh"),
       {"the data buffer is 8 bytes but its tensors end at byte 4: bytes [4, 8] belong to no tensor"}},
      {"trailing_without_tensors",
       safetensors_image("{}", "xyz"),
       {"the data buffer is 3 bytes but its tensors end at byte 0"}},
      {"duplicate_tensor",
       safetensors_image("{\"a\":" + f32x1 + "[0,4]},\"a\":" + f32x1 + "[4,8]}}", "abcdefgh"),
       {"key 'a' appears twice at the top level (duplicate keys are forbidden by the spec)"}},
      {"duplicate_field",
       safetensors_image(R"({"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})", "abcd"),
       {"key 'dtype' appears twice inside 'a'"}},
      {"duplicate_metadata_key",
       safetensors_image(R"({"__metadata__":{"k":"1","k":"2"}})"),
       {"key 'k' appears twice inside '__metadata__'"}},
      {"duplicate_metadata",
       safetensors_image(R"({"__metadata__":{},"__metadata__":{}})"),
       {"key '__metadata__' appears twice at the top level"}},
      {"metadata_not_object",
       safetensors_image(R"({"__metadata__":[1]})"),
       {"\"__metadata__\" must be an object of strings to strings, found array [1]"}},
      {"metadata_number",
       safetensors_image(R"({"__metadata__":{"k":1}})"),
       {"\"__metadata__\" value of 'k' must be a string", "found number 1"}},
      {"too_deep",
       safetensors_image(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", "abcd"),
       {"JSON nests deeper than a safetensors header does"}},
      {"very_deep",
       safetensors_image("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}"),
       {"JSON nests deeper than a safetensors header does"}},
  };
}

}  // namespace berth::testing
