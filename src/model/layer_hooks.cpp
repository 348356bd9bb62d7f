// block_of: which hook block holds a parameter, by the dotted prefix of its name.
#include "berth/model/layer_hooks.h"

namespace berth {

std::string block_of(const std::vector<std::string>& blocks, const std::string& name) {
  const std::string* best = nullptr;
  for (const std::string& block : blocks) {
    const bool inside =
        name.size() > block.size() && name.compare(0, block.size(), block) == 0 && name[block.size()] == '.';
    if (inside && (best == nullptr || block.size() > best->size())) best = &block;
  }
  return best == nullptr ? std::string() : *best;
}

}  // namespace berth
