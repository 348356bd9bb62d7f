// ZeRO stage 3's trace: the order of the block uses in the first forward, followed in later ones.
#include "zero3_state.h"

#include <iterator>

namespace berth::dist::zero3 {

// A forward use of block `index` begins: its position in the traced order (-1 when this forward left it).
int Zero3State::begin_use(int index) {
  if (!trace_complete) {
    if (traced_uses[index] < blocks[index].declared_uses) {
      trace.push_back(index);
      traced_uses[index] += 1;
      cursor = trace.size();
      if (static_cast<int64_t>(trace.size()) == declared_total) trace_complete = true;
      return static_cast<int>(trace.size()) - 1;
    }
    trace_complete = true;  // more uses than the model declares: the first forward has ended
  }
  if (cursor < trace.size() && trace[cursor] == index) return static_cast<int>(cursor++);
  if (index == trace.front() && open.empty()) {
    // A new forward: whatever a backward that failed half-way left gathered goes now.
    callback_queued = false;
    release_all();
    cursor = 1;
    return 0;
  }
  return -1;
}

// The innermost open use of block `index` ends: its traced position (-1 when none is open).
int Zero3State::end_use(int index) {
  for (auto it = open.rbegin(); it != open.rend(); ++it) {
    if (it->block != index) continue;
    const int position = it->position;
    open.erase(std::next(it).base());
    return position;
  }
  return -1;
}

}  // namespace berth::dist::zero3
