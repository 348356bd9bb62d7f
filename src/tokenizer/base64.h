// Strict base64 decoding (RFC 4648's standard alphabet, padded, no whitespace, zero trailing bits), as the
// Rust base64 crate's STANDARD engine decodes tokenizer.json's binary fields (private to the library).
#pragma once

#include <string>
#include <string_view>

namespace berth::tokenizer {

// The bytes `text` encodes. Throws berth::Error naming `where` and the offending character's offset when text
// is not canonical padded base64.
std::string decode_base64_strict(std::string_view text, const std::string& where);

}  // namespace berth::tokenizer
