// The Trainer's files: checkpoints (written whole or not at all, resumed from any strategy), the final model,
// HF's metric files and the HTML report.
#include "berth/train/trainer.h"

#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/device/device.h"
#include "berth/io/safetensors.h"
#include "berth/optim/lr_scheduler.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/disk_full.h"
#include "berth/train/loss_scaler.h"
#include "berth/train/progress_reporter.h"
#include "berth/train/rng_state.h"
#include "berth/train/training_report.h"
#include "train/trainer_internal.h"

namespace berth::train {

namespace fs = std::filesystem;

namespace {

// What a checkpoint of `model` takes on disk, about: its weights as they are, and AdamW's two fp32 moments
// for each trainable parameter (ZeRO-3 gathers the model before a save, so every parameter is whole here).
uint64_t checkpoint_bytes_estimate(torch::nn::Module& model) {
  uint64_t bytes = 0;
  for (const auto& p : model.parameters()) {
    bytes += static_cast<uint64_t>(p.numel() * p.element_size());
    if (p.requires_grad()) bytes += static_cast<uint64_t>(p.numel()) * 2 * sizeof(float);
  }
  for (const auto& b : model.buffers()) bytes += static_cast<uint64_t>(b.numel() * b.element_size());
  return bytes;
}

}  // namespace

// Every rank writes the optimizer state it owns into the staging directory; a rank that fails (a full disk)
// makes every rank stop after rank 0 removed the staging directory, so nothing is left half-written.
void Trainer::write_optimizer_state(const std::string& staging, const std::string& step_name) {
  std::exception_ptr failure;
  try {
    // save_only_model (HF): no optimizer state; every rank still takes part in the check below.
    if (!args_.save_only_model) gradient_sync_->optimizer().save_state(staging);
  } catch (const std::exception&) {
    failure = std::current_exception();
  }
  const double failed_ranks =
      comm().all_reduce_sum(failure ? 1.0 : 0.0, "every rank's optimizer state written for " + step_name);
  if (failed_ranks == 0) return;
  if (is_main_process()) fs::remove_all(staging);
  if (!failure)
    BERTH_FAIL("saving ", step_name, ": ", failed_ranks,
               " other rank(s) could not write their optimizer state, so rank ", comm().rank(),
               " stops too (their message says why)");
  try {
    std::rethrow_exception(failure);
  } catch (...) {
    rethrow_as_disk_full((fs::path(run_dir_) / step_name).string(), step_name + "'s optimizer state",
                         checkpoint_bytes_estimate(model_->module()));
  }
}

std::string Trainer::save_checkpoint(const Trial*) {
  const std::string step_name = checkpoint_dir_name(state_.global_step);
  // Every rank writes the optimizer state it owns into a staging directory rank 0 then moves into the
  // checkpoint, so the checkpoint still appears whole or not at all.
  std::string staging;
  on_main_process("creating the staging directory of " + step_name,
                  [&] { staging = create_staging_dir(run_dir_, state_.global_step); });
  staging = comm().broadcast_string(staging, 0, "the staging directory of " + step_name);
  write_optimizer_state(staging, step_name);
  gradient_sync_->residency().gather();  // ZeRO-3: the full model, for rank 0 to save
  std::string path;
  try {
    on_main_process("saving " + step_name, [&] {
      const uint64_t expected_bytes = checkpoint_bytes_estimate(model_->module());
      path = write_checkpoint_dir(
          run_dir_, state_.global_step,
          [&](const std::string& dir) {
            move_directory_contents(staging, dir);
            model_->save_pretrained(dir);
            if (tokenizer_) save_tokenizer(*tokenizer_, dir);
            // save_only_model (HF): the model alone, no optimizer, scheduler or RNG state to resume from.
            if (!args_.save_only_model) {
              write_file_atomically(dir + "/scheduler.json", scheduler_->state_json());
              if (loss_scaler_) write_file_atomically(dir + "/loss_scaler.json", loss_scaler_->state_json());
              save_rng_state(capture_rng_state(), dir + "/rng_state.safetensors");
            }
            args_.save(dir + "/training_args.json");
            state_.save(dir + "/trainer_state.json");
            if (checkpoint_hook_) checkpoint_hook_(dir);
          },
          expected_bytes);
      rotate_checkpoints(run_dir_, args_.save_total_limit.value_or(0), state_.best_model_checkpoint);
    });
  } catch (...) {
    std::error_code ignored;
    if (is_main_process()) fs::remove_all(staging, ignored);  // a failed save leaves no temporary behind
    gradient_sync_->residency().release();
    throw;
  }
  gradient_sync_->residency().release();
  return path;
}

void Trainer::load_model_weights(const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  std::map<std::string, at::Tensor> tensors = io::load_safetensors(path);
  torch::NoGradGuard no_grad;
  for (auto& item : model_->module().named_parameters()) {
    auto it = tensors.find(item.key());
    BERTH_CHECK(
        it != tensors.end(), path, " lacks the model's tensor ", item.key(),
        ": it was saved from a different model. Fix: resume with the model_init (or --model/--model-preset) "
        "that wrote this checkpoint");
    BERTH_CHECK(it->second.sizes() == item.value().sizes(), path, ": tensor ", item.key(), " has shape ",
                it->second.sizes(), " but the model's is ", item.value().sizes(),
                ". Fix: resume with the model configuration that wrote this checkpoint");
    item.value().copy_(it->second);
  }
}

void Trainer::resume_from(const std::string& checkpoint) {
  // A save_only_model checkpoint has the weights but not the optimizer, schedule and RNG state of its step.
  BERTH_CHECK(fs::exists(checkpoint + "/scheduler.json"), "cannot resume from ", checkpoint,
              ": it holds only the model (it was saved with save_only_model, or lost its scheduler.json), "
              "without the optimizer, scheduler and RNG state training needs to go on. Fix: start a new run "
              "from its weights (--model ",
              checkpoint, "), and train with save_only_model false to get resumable checkpoints");
  gradient_sync_->residency().gather();  // ZeRO-3: whole parameters to load into, partitioned again after
  load_model_weights(checkpoint);
  gradient_sync_->residency().release();
  gradient_sync_->optimizer().load_state(checkpoint, args_.placement, model_->module());
  scheduler_->load_state_json(detail::read_checkpoint_file(checkpoint + "/scheduler.json"));
  const std::string scaler_file = checkpoint + "/loss_scaler.json";
  if (loss_scaler_ && fs::exists(scaler_file) &&
      !loss_scaler_->load_state_json(detail::read_checkpoint_file(scaler_file), scaler_file) &&
      is_main_process())
    console() << "note: " << scaler_file
              << " is a static scaler's state and this run scales dynamically (or the reverse): the loss "
                 "scale starts afresh\n";
  const TrainerState saved = TrainerState::load(checkpoint + "/trainer_state.json");
  state_.global_step = saved.global_step;
  state_.epoch = saved.epoch;
  state_.log_history = saved.log_history;
  state_.best_metric = saved.best_metric;
  state_.best_model_checkpoint = saved.best_model_checkpoint;
  state_.total_flos = saved.total_flos;
  state_.num_input_tokens_seen = saved.num_input_tokens_seen;
  state_.best_global_step = saved.best_global_step;
  state_.stateful_callbacks_json = saved.stateful_callbacks_json;
}

void Trainer::save_model(const std::string& dir) {
  const std::string target = dir.empty() ? run_dir_ : dir;
  if (!args_.should_save(gradient_sync_->rank(), plan_->process.env.local_rank)) return;
  try {
    model_->save_pretrained(target);
    if (tokenizer_) save_tokenizer(*tokenizer_, target);
    args_.save(target + "/training_args.json");
  } catch (...) {
    // Each file is written atomically: a full disk leaves the old one (or none), never half of one.
    uint64_t model_bytes = 0;
    for (const auto& p : model_->module().parameters())
      model_bytes += static_cast<uint64_t>(p.numel() * p.element_size());
    rethrow_as_disk_full(target, "the model", model_bytes);
  }
}

void Trainer::save_metrics(const std::string& split, const std::map<std::string, double>& metrics) {
  if (!is_main_process()) return;
  auto to_json = [](const std::map<std::string, double>& values) {
    nlohmann::json json = nlohmann::json::object();
    for (const auto& [name, value] : values) json[name] = value;
    return json;
  };
  write_file_atomically(run_dir_ + "/" + split + "_results.json", to_json(metrics).dump(4) + "\n");
  // all_results.json gathers every split's metrics, as HF's save_metrics(combined=True).
  const std::string all_path = run_dir_ + "/all_results.json";
  nlohmann::json all = nlohmann::json::object();
  if (fs::exists(all_path)) {
    try {
      all = nlohmann::json::parse(detail::read_checkpoint_file(all_path));
    } catch (const nlohmann::json::exception&) {
      all = nlohmann::json::object();  // a damaged summary is rewritten, not fatal
    }
  }
  for (const auto& [name, value] : metrics) all[name] = value;
  write_file_atomically(all_path, all.dump(4) + "\n");
}

void Trainer::write_report(const std::map<std::string, double>& metrics,
                           const std::vector<std::vector<int64_t>>& confusion) {
  if (!is_main_process()) return;
  ReportInputs inputs;
  inputs.title = "berth training report: " + run_dir_;
  inputs.log_history = state_.log_history;
  const TaskModelInfo info = model_->info();
  inputs.labels = info.labels;
  inputs.confusion = confusion.empty() ? last_confusion_ : confusion;
  inputs.final_metrics = metrics;
  inputs.run_info["output_dir"] = run_dir_;
  inputs.run_info["device"] = device_name(device_);
  inputs.run_info["global_step"] = std::to_string(state_.global_step);
  inputs.run_info["learning_rate"] = detail::format_number(args_.learning_rate);
  inputs.run_info["batch_size"] = std::to_string(args_.per_device_train_batch_size);
  inputs.run_info["epochs"] = detail::format_number(args_.num_train_epochs);
  inputs.run_info["model"] = info.architecture + ", " + info.summary;
  write_training_report(run_dir_ + "/report.html", inputs);
}

}  // namespace berth::train
