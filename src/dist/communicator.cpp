// Communicator: the collectives every backend gets for free (sums of doubles, reduce and all-gather through
// an all-reduce), and the one-process communicator, whose collectives are the identity.
#include "berth/dist/communicator.h"

#include <ATen/ATen.h>

#include "berth/core/error.h"

namespace berth::dist {
namespace {

class NoWork : public PendingWork {
 public:
  void wait() override {}
};

class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend_name() const override { return "local"; }
  void all_reduce_sum(std::vector<at::Tensor>&, const std::string&) override {}
  std::unique_ptr<PendingWork> all_reduce_sum_async(std::vector<at::Tensor>&, const std::string&) override {
    return std::make_unique<NoWork>();
  }
  void broadcast(std::vector<at::Tensor>&, int root, const std::string& what) override {
    check_root(root, what);
  }
  void barrier(const std::string&) override {}
  std::vector<std::string> all_gather_string(const std::string& value, const std::string&) override {
    return {value};
  }
  std::string broadcast_string(const std::string& value, int root, const std::string& what) override {
    check_root(root, what);
    return value;
  }

 private:
  static void check_root(int root, const std::string& what) {
    BERTH_CHECK(root == 0, what, ": broadcast root ", root,
                " does not exist in a 1-process run (rank 0 of 1)");
  }
};

}  // namespace

double Communicator::all_reduce_sum(double value, const std::string& what) {
  return all_reduce_sum(std::vector<double>{value}, what)[0];
}

std::vector<double> Communicator::all_reduce_sum(const std::vector<double>& values, const std::string& what) {
  if (values.empty() || world_size() == 1) return values;
  at::Tensor t = at::tensor(c10::ArrayRef<double>(values), at::TensorOptions().dtype(at::kDouble));
  std::vector<at::Tensor> args{t.to(device())};
  all_reduce_sum(args, what);
  const at::Tensor out = args[0].cpu();
  return std::vector<double>(out.data_ptr<double>(), out.data_ptr<double>() + out.numel());
}

std::unique_ptr<PendingWork> Communicator::reduce_sum_async(at::Tensor& tensor, int root,
                                                            const std::string& what) {
  BERTH_CHECK(root >= 0 && root < world_size(), what, ": reduce root ", root, " is not a rank of this ",
              world_size(), "-rank run");
  std::vector<at::Tensor> args{tensor};
  return all_reduce_sum_async(args, what);
}

void Communicator::all_gather(const at::Tensor& input, std::vector<at::Tensor>& outputs,
                              const std::string& what) {
  const int world = world_size();
  BERTH_CHECK(static_cast<int>(outputs.size()) == world, what, ": all_gather needs ", world,
              " outputs, found ", outputs.size());
  if (world == 1) {
    outputs[0].copy_(input.view(outputs[0].sizes()));
    return;
  }
  const int64_t n = input.numel();
  std::vector<at::Tensor> all{at::zeros({world * n}, input.options())};  // [world * n]
  all[0].narrow(0, rank() * n, n).copy_(input.reshape({-1}));
  all_reduce_sum(all, what);
  for (int r = 0; r < world; ++r) outputs[r].copy_(all[0].narrow(0, r * n, n).view(outputs[r].sizes()));
}

std::shared_ptr<Communicator> make_local_communicator() { return std::make_shared<LocalCommunicator>(); }

}  // namespace berth::dist
