// The default channel of a GradientSync: this process alone.
#include "berth/train/gradient_sync.h"

namespace berth::train {

dist::Communicator& GradientSync::communicator() {
  static const std::shared_ptr<dist::Communicator> local = dist::make_local_communicator();
  return *local;
}

}  // namespace berth::train
