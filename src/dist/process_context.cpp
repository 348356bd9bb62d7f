// Sets up a rank: launcher variables -> device (bound first) -> process group -> DDP.
#include "berth/dist/process_context.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <chrono>
#include <cstdlib>

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "berth/device/rank_device.h"
#include "berth/dist/ddp_gradient_sync.h"
#include "berth/dist/zero_gradient_sync.h"
#include "berth/train/deepspeed_config.h"

namespace berth::dist {

void bind_device(const c10::Device& device) {
  if (device.type() != c10::kCUDA) return;
  // The virtual guard reaches CUDA through torch's registry, so this compiles (and is never reached) in CPU
  // builds of torch.
  c10::impl::VirtualGuardImpl(device.type()).setDevice(device);
}

ZeroOptions zero_options_for(const train::TrainingArguments& args, int64_t world_size) {
  if (args.deepspeed) return train::resolve_deepspeed_config(*args.deepspeed, args, world_size).zero;
  if (!args.fsdp.empty()) return train::zero_options_from_fsdp(args.fsdp);
  return {};
}

std::string describe_zero(const ZeroOptions& zero) {
  if (zero.stage == 0) return "";
  std::string details;
  auto add = [&](const std::string& item) { details += (details.empty() ? "" : ", ") + item; };
  if (zero.overlap_comm) add("overlap_comm");
  if (zero.offload_optimizer.enabled())
    add("offload_optimizer cpu" + std::string(zero.offload_optimizer.pin_memory ? " pinned" : ""));
  if (zero.offload_param.enabled())
    add("offload_param cpu" + std::string(zero.offload_param.pin_memory ? " pinned" : ""));
  return "zero-" + std::to_string(zero.stage) + (details.empty() ? "" : " (" + details + ")");
}

std::shared_ptr<train::GradientSync> make_gradient_sync(const train::TrainingArguments& args,
                                                        std::shared_ptr<Communicator> comm) {
  const ZeroOptions zero = zero_options_for(args, comm->world_size());
  if (zero.stage > 0) return std::make_shared<ZeroGradientSync>(std::move(comm), zero);
  if (comm->world_size() == 1) return std::make_shared<train::LocalGradientSync>();
  DdpOptions ddp;
  if (args.ddp_bucket_cap_mb) ddp.bucket_cap_mb = static_cast<double>(*args.ddp_bucket_cap_mb);
  ddp.find_unused_parameters = args.ddp_find_unused_parameters.value_or(false);
  return std::make_shared<DdpGradientSync>(std::move(comm), ddp);
}

ProcessContext init_process_context(const train::TrainingArguments& args, const EnvLookup& lookup) {
  ProcessContext context;
  context.env = detect_dist_env(lookup);
  const CudaInfo cuda = query_cuda();
  RankDeviceOptions device_options;
  const auto shared = lookup("BERTH_ALLOW_SHARED_DEVICE");
  device_options.allow_shared_device = shared && *shared == "1";
  // `berth launch --device cuda:0,cuda:1` hands each worker its device in BERTH_DEVICE.
  std::string requested = args.device;
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
    context.zero = zero_options_for(args, 1);
    context.gradient_sync = make_gradient_sync(args, context.comm);
    return context;
  }
  CommOptions comm_options;
  comm_options.backend = args.ddp_backend.value_or("auto");
  comm_options.rendezvous = args.rendezvous;
  comm_options.timeout = std::chrono::seconds(args.ddp_timeout);
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
  context.zero = zero_options_for(args, context.comm->world_size());
  context.gradient_sync = make_gradient_sync(args, context.comm);
  return context;
}

}  // namespace berth::dist
