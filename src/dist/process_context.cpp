// Sets up a rank: launcher variables -> device (bound first) -> process group.
#include "berth/dist/process_context.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <chrono>
#include <cstdlib>

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "berth/device/rank_device.h"

namespace berth::dist {

void bind_device(const c10::Device& device) {
  if (device.type() != c10::kCUDA) return;
  // The virtual guard reaches CUDA through torch's registry, so this compiles (and is never reached) in CPU
  // builds of torch.
  c10::impl::VirtualGuardImpl(device.type()).setDevice(device);
}

ProcessContext init_process_context(const ProcessOptions& options, const EnvLookup& lookup) {
  ProcessContext context;
  context.env = detect_dist_env(lookup);
  const CudaInfo cuda = query_cuda();
  RankDeviceOptions device_options;
  const auto shared = lookup("BERTH_ALLOW_SHARED_DEVICE");
  device_options.allow_shared_device = shared && *shared == "1";
  // `berth launch --device cuda:0,cuda:1` hands each worker its device in BERTH_DEVICE.
  std::string requested = options.device;
  if (const auto given = lookup("BERTH_DEVICE"); given && !given->empty()) {
    BERTH_CHECK(
        requested == "auto" || requested == *given, "this rank's device is ", *given,
        " (BERTH_DEVICE, set by `berth launch --device`) but the training arguments ask for ", requested,
        ". Fix: give the devices once: either `berth launch --device LIST` or --device in the command");
    requested = *given;
  }
  context.device = context.env.distributed()
                       ? device_for_rank(parse_device(requested), context.env, cuda, device_options)
                       : resolve_device(parse_device(requested), cuda);
  bind_device(context.device);
  if (!context.env.distributed()) {
    context.comm = make_local_communicator();
    return context;
  }
  CommOptions comm_options;
  comm_options.backend = options.backend;
  comm_options.rendezvous = options.rendezvous;
  comm_options.timeout = options.timeout;
  if (const auto text = lookup("BERTH_RENDEZVOUS_TIMEOUT")) {
    char* end = nullptr;
    const double seconds = std::strtod(text->c_str(), &end);
    BERTH_CHECK(end && *end == '\0' && !text->empty() && seconds > 0, "BERTH_RENDEZVOUS_TIMEOUT='", *text,
                "' is not a positive number of seconds. Fix: e.g. BERTH_RENDEZVOUS_TIMEOUT=120, or unset it "
                "(default ",
                std::chrono::duration_cast<std::chrono::seconds>(comm_options.rendezvous_timeout).count(),
                " s)");
    comm_options.rendezvous_timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  context.comm = init_communicator(context.env, context.device, comm_options);
  return context;
}

}  // namespace berth::dist
