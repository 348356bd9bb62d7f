// Decoder: tokenizer.json's "decoder" (ByteLevel, Metaspace, WordPiece, ByteFallback, Fuse, Strip, Replace,
// BPEDecoder, Sequence), turning tokens back into text as HF's decode does.
#pragma once

#include <string>
#include <vector>

namespace berth::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: the tokens rewritten (and possibly merged); decode() joins what is left.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

}  // namespace berth::tokenizer
