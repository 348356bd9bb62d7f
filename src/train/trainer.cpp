// Trainer: HF transformers' Trainer for sequence classification, with berth's placement guarantees.
#include "berth/train/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/core/runtime.h"
#include "berth/data/data_loader.h"
#include "berth/data/distributed_sampler.h"
#include "berth/device/device.h"
#include "berth/dist/process_context.h"
#include "berth/io/safetensors.h"
#include "berth/model/pretrained.h"
#include "berth/optim/adamw.h"
#include "berth/optim/clip_grad.h"
#include "berth/optim/lr_scheduler.h"
#include "berth/optim/optimizer_state_file.h"
#include "berth/optim/param_groups.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/optimizer_state.h"
#include "berth/placement/place.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/jsonl_log.h"
#include "berth/train/loss_scaler.h"
#include "berth/train/memory_estimate.h"
#include "berth/train/metrics.h"
#include "berth/train/mixed_precision.h"
#include "berth/train/progress_reporter.h"
#include "berth/train/rng_state.h"
#include "berth/train/training_report.h"

namespace berth::train {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  BERTH_CHECK(in.good(), "cannot read ", path,
              ": the checkpoint is incomplete. Fix: resume from another "
              "checkpoint (or \"latest\"), or start without --resume_from_checkpoint");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The (B, T) tokens of a batch, for the FLOP count HF reports as total_flos.
int64_t batch_tokens(const Batch& batch) {
  auto it = batch.find("input_ids");
  return it == batch.end() ? 0 : it->second.numel();
}

// HF's floating_point_ops: 6 × tokens × parameters outside the embeddings (forward + backward).
int64_t non_embedding_parameters(const BertForSequenceClassification& model) {
  int64_t count = 0;
  for (const auto& item : model->named_parameters())
    if (item.key().find("embeddings.") == std::string::npos) count += item.value().numel();
  return count;
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Every rank's rows of an evaluation, put back together in dataset order on every rank: (rows, logits) per
// rank travel as bytes. logits: (R, C) float CPU -> (N, C).
at::Tensor gather_rows(dist::Communicator& comm, const std::vector<size_t>& rows, const at::Tensor& logits,
                       int64_t dataset_size, int64_t num_labels) {
  if (comm.world_size() == 1) return logits;
  const at::Tensor local = logits.contiguous();
  std::string bytes(rows.size() * sizeof(int64_t) + static_cast<size_t>(local.numel()) * sizeof(float), '\0');
  std::vector<int64_t> ids(rows.begin(), rows.end());
  std::memcpy(bytes.data(), ids.data(), ids.size() * sizeof(int64_t));
  std::memcpy(bytes.data() + ids.size() * sizeof(int64_t), local.data_ptr<float>(),
              static_cast<size_t>(local.numel()) * sizeof(float));
  const std::vector<std::string> parts = comm.all_gather_string(bytes, "gathering the evaluation's logits");
  at::Tensor full = at::zeros({dataset_size, num_labels}, at::kFloat);
  auto out = full.accessor<float, 2>();
  const size_t row_bytes = sizeof(int64_t) + static_cast<size_t>(num_labels) * sizeof(float);
  for (const std::string& part : parts) {
    BERTH_BUG(part.size() % row_bytes == 0, "a rank sent ", part.size(), " bytes of evaluation rows");
    const size_t n = part.size() / row_bytes;
    std::vector<int64_t> part_rows(n);
    std::memcpy(part_rows.data(), part.data(), n * sizeof(int64_t));
    const auto* values = reinterpret_cast<const float*>(part.data() + n * sizeof(int64_t));
    for (size_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < num_labels; ++c) out[part_rows[i]][c] = values[i * num_labels + c];
  }
  return full;
}

}  // namespace

Trainer::Trainer(TrainerOptions options)
    : args_(std::move(options.args)),
      model_init_(std::move(options.model_init)),
      train_dataset_(std::move(options.train_dataset)),
      eval_dataset_(std::move(options.eval_dataset)),
      tokenizer_(std::move(options.tokenizer)),
      compute_metrics_(std::move(options.compute_metrics)),
      gradient_sync_(std::move(options.gradient_sync)),
      console_(options.console) {
  args_.validate();
  BERTH_CHECK(model_init_ || options.model,
              "Trainer: needs a model or a model_init, got neither. Fix: set "
              "TrainerOptions::model_init (a function returning a fresh model) or TrainerOptions::model");
  BERTH_CHECK(!(model_init_ && options.model),
              "Trainer: got both a model and a model_init; the model would be "
              "replaced by model_init's at every train(). Fix: pass only one of them");
  // A Trainer built without a process context runs alone: no synchronisation, or ZeRO on one rank when the
  // arguments ask for it (CPU offload alone makes sense there).
  if (!gradient_sync_) gradient_sync_ = dist::make_gradient_sync(args_, dist::make_local_communicator());
  callbacks_.add_callback(std::make_shared<DefaultFlowCallback>());
  for (auto& callback : options.callbacks) callbacks_.add_callback(std::move(callback));
  runtime::ThreadOptions threads;
  threads.threads = static_cast<int>(args_.threads);
  runtime::configure_threads(threads);
  // meta is accepted here (placement works on it; tests and examples use it as a second device on CPU-only
  // machines) and refused by train/evaluate/predict, which need data.
  device_ = resolve_device(parse_device(args_.device), query_cuda());
  run_dir_ = args_.output_dir;
  std::vector<std::string> warnings;
  if (args_.deepspeed)
    deepspeed_ = std::make_shared<DeepSpeedConfig>(
        resolve_deepspeed_config(*args_.deepspeed, args_, gradient_sync_->world_size(), &warnings));
  if (is_main_process())
    for (const auto& warning : warnings) console() << "warning: " << warning << "\n";
  zero_ = deepspeed_ ? deepspeed_->zero : dist::zero_options_for(args_, gradient_sync_->world_size());
  // The strategy the arguments ask for is the one the gradient sync implements (init_process_context and
  // make_gradient_sync build it from the same arguments; a hand-made sync must agree).
  const std::string wanted = zero_.stage > 0 ? "zero-" + std::to_string(zero_.stage) : "local";
  BERTH_CHECK(
      wanted == gradient_sync_->strategy() || (wanted == "local" && gradient_sync_->strategy() == "ddp"),
      "the training arguments ask for ", wanted, " (", args_.deepspeed ? "deepspeed config" : "fsdp",
      ") but the Trainer was given a '", gradient_sync_->strategy(),
      "' gradient sync. Fix: build the sync from the same arguments with "
      "dist::init_process_context(args) or dist::make_gradient_sync(args, comm)");
  if (device_.type() != c10::kMeta) {
    // A DeepSpeed config has already merged --fp16/--bf16 with its own fp16/bf16 blocks.
    const Precision asked = deepspeed_   ? deepspeed_->precision.precision
                            : args_.fp16 ? Precision::fp16
                            : args_.bf16 ? Precision::bf16
                                         : Precision::fp32;
    precision_ = resolve_precision(asked == Precision::fp16, asked == Precision::bf16, device_,
                                   deepspeed_ ? deepspeed_->precision.loss_scale : LossScaleOptions{});
  }
  if (model_init_) {
    model_ = build_model(nullptr);
  } else {
    model_ = options.model;
    place_model();
  }
}

Trainer::~Trainer() = default;

std::ostream& Trainer::console() const { return console_ ? *console_ : std::cout; }

bool Trainer::is_main_process() const { return gradient_sync_->rank() == 0; }

dist::Communicator& Trainer::comm() const { return gradient_sync_->communicator(); }

// Rank 0 does the work (files belong to one writer); every rank then learns whether it failed and throws, so
// a refused output directory or a failed save stops the whole run at once instead of leaving the other ranks
// waiting in their next collective. With several ranks this is also the barrier around the work.
void Trainer::on_main_process(const std::string& what, const std::function<void()>& work) {
  if (comm().world_size() == 1) {
    work();
    return;
  }
  std::exception_ptr failure;
  std::string message;
  if (is_main_process()) {
    try {
      work();
    } catch (const std::exception& e) {
      failure = std::current_exception();
      message = e.what();
      if (message.empty()) message = "unknown error";
    }
  }
  message = comm().broadcast_string(message, 0, what);
  if (failure) std::rethrow_exception(failure);
  if (!message.empty())
    BERTH_FAIL("rank 0 failed while ", what, ", so rank ", comm().rank(), " stops too: ", message);
}

void Trainer::add_callback(std::shared_ptr<TrainerCallback> callback) {
  callbacks_.add_callback(std::move(callback));
}

void Trainer::set_checkpoint_hook_for_testing(std::function<void(const std::string&)> hook) {
  checkpoint_hook_ = std::move(hook);
}

BertForSequenceClassification Trainer::build_model(const Trial* trial) {
  // HF seeds before model_init, so the same seed gives the same initial weights on every run and trial.
  torch::manual_seed(static_cast<uint64_t>(args_.seed));
  BertForSequenceClassification model = model_init_(trial);
  BERTH_CHECK(model,
              "Trainer: model_init returned an empty model handle. Fix: return a constructed "
              "BertForSequenceClassification (e.g. BertForSequenceClassification(config))");
  model_ = model;
  place_model();
  return model_;
}

// Whatever device the model arrived on, it ends up on the run's device (move) or the user gets the report
// of what is where (strict).
void Trainer::place_model() {
  const PlacementReport report = place(*model_, device_, parse_placement_policy(args_.placement));
  if (is_main_process() && report.moved_anything()) console() << report.summary() << "\n";
}

void Trainer::create_optimizer_and_scheduler(int64_t max_steps) {
  OptimizerSpec spec;
  spec.groups = optim::hf_param_groups(*model_, args_.weight_decay);
  spec.adam.lr = args_.learning_rate;
  spec.adam.beta1 = args_.adam_beta1;
  spec.adam.beta2 = args_.adam_beta2;
  spec.adam.eps = args_.adam_epsilon;
  gradient_sync_->create_optimizer(*model_, spec);
  optim::SchedulerOptions schedule;
  schedule.type = optim::parse_scheduler_type(args_.lr_scheduler_type);
  schedule.total_steps = max_steps;
  schedule.warmup_steps = args_.resolved_warmup_steps(max_steps);
  if (deepspeed_ && deepspeed_->scheduler) {
    finalize_deepspeed_config(*deepspeed_, args_, max_steps);
    schedule = deepspeed_->scheduler->options;
  }
  scheduler_ = std::make_unique<optim::LrScheduler>(args_.learning_rate, schedule);
  gradient_sync_->set_lr(scheduler_->lr());
  loss_scaler_.reset();
  if (precision_.precision == Precision::fp16)
    loss_scaler_ = std::make_unique<LossScaler>(precision_.loss_scale, gradient_sync_->rank());
}

// After the first step, when gradients and optimizer state exist: the ZeRO paper's estimate for this run
// beside what this rank holds, in the console and log.jsonl.
void Trainer::log_memory(int64_t num_params) {
  const dist::ZeroOptions& zero = zero_;
  const MemoryEstimate estimate = estimate_zero_memory(
      num_params, gradient_sync_->world_size(), zero.stage, precision_.precision,
      zero.offload_optimizer.enabled(), zero.offload_param.enabled(),
      zero.stage == 3 ? largest_bert_layer_parameters(model_->config, model_->config.num_labels()) : 0);
  const MemoryFootprint held = gradient_sync_->memory_footprint(*model_);
  if (!is_main_process()) return;
  console() << "memory per rank (" << gradient_sync_->strategy() << ", " << to_string(precision_.precision)
            << "):\n"
            << format_memory_table(estimate, held);
  LogEntry entry;
  entry["memory_estimated_bytes"] = static_cast<double>(estimate.total());
  entry["memory_estimated_parameters"] = static_cast<double>(estimate.parameters);
  entry["memory_estimated_gradients"] = static_cast<double>(estimate.gradients);
  entry["memory_estimated_optimizer_states"] = static_cast<double>(estimate.optimizer_states);
  entry["memory_held_bytes"] = static_cast<double>(held.total());
  entry["memory_held_parameters"] = static_cast<double>(held.parameters);
  entry["memory_held_gradients"] = static_cast<double>(held.gradients);
  entry["memory_held_optimizer_states"] = static_cast<double>(held.optimizer_states);
  entry["step"] = static_cast<double>(state_.global_step + 1);
  if (jsonl_log_) jsonl_log_->write(entry);  // the console has the table; the log history stays HF's
}

void Trainer::log(LogEntry entry) {
  entry["epoch"] = state_.epoch;
  entry["step"] = static_cast<double>(state_.global_step);
  state_.log_history.push_back(entry);
  callbacks_.on_log(args_, state_, control_, entry);
  if (!is_main_process()) return;
  if (jsonl_log_) jsonl_log_->write(entry);
  if (progress_) progress_->log(entry);
}

void Trainer::check_device_holds_data(const char* what) const {
  BERTH_CHECK(device_.type() != c10::kMeta, what,
              ": the run's device is 'meta', which holds no data, so nothing "
              "can be computed on it. Fix: --device cpu, cuda or auto");
}

TrainOutput Trainer::train(const std::optional<std::string>& resume_from_checkpoint, const Trial* trial) {
  check_device_holds_data("Trainer::train");
  BERTH_CHECK(train_dataset_ && train_dataset_->size() > 0,
              "Trainer::train: no training data (the train dataset is missing or empty). Fix: pass "
              "TrainerOptions::train_dataset with at least one example");
  std::optional<std::string> resume =
      resume_from_checkpoint ? resume_from_checkpoint : args_.resume_from_checkpoint;
  if (resume && resume->empty()) resume.reset();

  // Ranks that disagree on these would train different things or deadlock in mismatched collectives.
  if (comm().world_size() > 1)
    dist::check_agreement(comm(),
                          {{"strategy", gradient_sync_->strategy()},
                           {"per_device_train_batch_size", std::to_string(args_.per_device_train_batch_size)},
                           {"gradient_accumulation_steps", std::to_string(args_.gradient_accumulation_steps)},
                           {"seed", std::to_string(args_.seed)},
                           {"data_seed", std::to_string(args_.resolved_data_seed())},
                           {"learning_rate", format_number(args_.learning_rate)},
                           {"max_steps", std::to_string(args_.max_steps)},
                           {"num_train_epochs", format_number(args_.num_train_epochs)},
                           {"max_grad_norm", format_number(args_.max_grad_norm)},
                           {"training examples", std::to_string(train_dataset_->size())},
                           {"resume_from_checkpoint", resume.value_or("")}},
                          "the training arguments");

  // The output directory: refuse to mix a new run into an old one's checkpoints (HF's overwrite_output_dir).
  on_main_process("preparing the output directory " + run_dir_, [&] {
    if (!resume && !args_.overwrite_output_dir && fs::exists(run_dir_)) {
      const auto existing = list_checkpoints(run_dir_);
      BERTH_CHECK(
          existing.empty(), "output directory ", run_dir_, " already holds ", existing.size(),
          " checkpoint(s) (the latest is ", existing.back().second,
          "). Fix: --resume_from_checkpoint latest "
          "to continue that run, --overwrite_output_dir to train again over it, or another --output_dir");
    }
    fs::create_directories(run_dir_);
    remove_stale_temporaries(run_dir_);
    args_.save(run_dir_ + "/training_args.json");
  });

  if (model_init_) build_model(trial);  // HF: a fresh model for every run and trial
  // Counted before prepare(): ZeRO-3 leaves each rank only a piece of every parameter.
  const int64_t flops_per_token = 6 * non_embedding_parameters(model_);
  int64_t num_params = 0;
  for (const auto& p : model_->parameters())
    if (p.requires_grad()) num_params += p.numel();
  gradient_sync_->prepare(*model_);

  data::DataLoaderOptions loader_options;
  loader_options.batch_size = static_cast<size_t>(args_.per_device_train_batch_size);
  loader_options.shuffle = true;
  loader_options.seed = static_cast<uint64_t>(args_.resolved_data_seed());
  loader_options.drop_last = args_.dataloader_drop_last;
  loader_options.group_by_length = args_.group_by_length;
  loader_options.rank = static_cast<size_t>(gradient_sync_->rank());
  loader_options.world_size = static_cast<size_t>(gradient_sync_->world_size());
  loader_options.prefetch = static_cast<size_t>(args_.dataloader_prefetch);
  if (tokenizer_) loader_options.pad_token_id = tokenizer_->token_id(tokenizer_->special_tokens().pad);
  data::DataLoader loader(*train_dataset_, loader_options);
  BERTH_CHECK(loader.size() > 0, "Trainer::train: ", train_dataset_->size(),
              " training examples make no "
              "batch of ",
              args_.per_device_train_batch_size,
              " with dataloader_drop_last. Fix: a smaller "
              "--per_device_train_batch_size, or --dataloader_drop_last false");

  // HF's step arithmetic: optimizer steps per epoch, then max_steps from epochs (or epochs from max_steps).
  const int64_t accumulation = args_.gradient_accumulation_steps;
  const auto batches_per_epoch = static_cast<int64_t>(loader.size());
  const int64_t steps_per_epoch = std::max<int64_t>(batches_per_epoch / accumulation, 1);
  int64_t max_steps = 0;
  int64_t num_epochs = 0;
  if (args_.max_steps > 0) {
    max_steps = args_.max_steps;
    num_epochs = max_steps / steps_per_epoch + (max_steps % steps_per_epoch > 0 ? 1 : 0);
  } else {
    max_steps =
        static_cast<int64_t>(std::ceil(args_.num_train_epochs * static_cast<double>(steps_per_epoch)));
    num_epochs = static_cast<int64_t>(std::ceil(args_.num_train_epochs));
  }

  create_optimizer_and_scheduler(max_steps);
  state_ = TrainerState();
  state_.max_steps = max_steps;
  state_.num_train_epochs = num_epochs;
  state_.train_batch_size = args_.per_device_train_batch_size;
  state_.logging_steps = args_.resolved_logging_steps(max_steps);
  state_.eval_steps = args_.resolved_eval_steps(max_steps);
  state_.save_steps = args_.resolved_save_steps(max_steps);
  state_.is_world_process_zero = state_.is_local_process_zero = is_main_process();
  if (trial) state_.trial_name = "run-" + std::to_string(trial->number);
  state_.is_hyper_param_search = trial != nullptr;
  control_ = TrainerControl();
  last_confusion_.clear();
  last_saved_step_ = -1;

  std::optional<RngState> resumed_rng;
  if (resume) {
    const std::string checkpoint = resolve_resume_checkpoint(run_dir_, *resume);
    resume_from(checkpoint);
    resumed_rng = load_rng_state(checkpoint + "/rng_state.safetensors");
  }
  const int64_t epochs_trained = state_.global_step / steps_per_epoch;
  int64_t batches_to_skip = (state_.global_step % steps_per_epoch) * accumulation;

  if (is_main_process()) {
    const bool jsonl = !args_.resolved_report_to().empty();
    if (jsonl) {
      jsonl_log_ = std::make_unique<JsonlLog>(run_dir_ + "/log.jsonl", /*append=*/resume.has_value());
      // A run that went on past its last checkpoint logged steps the resumed run will log again.
      if (resume) jsonl_log_->drop_after_step(state_.global_step);
      if (!jsonl_log_->note().empty()) console() << jsonl_log_->note() << "\n";
    } else {
      jsonl_log_.reset();
    }
    ProgressOptions progress_options;
    progress_options.total_steps = max_steps;
    progress_options.steps_per_epoch = steps_per_epoch;
    progress_options.enabled = !args_.disable_tqdm;
    if (console_) progress_options.tty = false;
    progress_ = std::make_unique<ProgressReporter>(console(), progress_options);
    const int64_t trainable = num_params;
    std::ostringstream banner;
    banner << "***** Running training *****\n"
           << "  Num examples = " << train_dataset_->size() << "\n"
           << "  Num Epochs = " << num_epochs << "\n"
           << "  Instantaneous batch size per device = " << args_.per_device_train_batch_size << "\n"
           << "  Total train batch size (w. parallel, distributed & accumulation) = "
           << args_.per_device_train_batch_size * accumulation * gradient_sync_->world_size() << "\n"
           << "  Gradient Accumulation steps = " << accumulation << "\n"
           << "  Total optimization steps = " << max_steps << "\n"
           << "  Number of trainable parameters = " << trainable << "\n"
           << "  Device = " << device_name(device_)
           << ", threads = " << runtime::thread_state().intra_op_threads;
    if (resume) banner << "\n  Resumed at step " << state_.global_step << " (epoch " << epochs_trained << ")";
    progress_->message(banner.str());
  }

  std::vector<at::Tensor> params;
  for (const auto& p : model_->parameters())
    if (p.requires_grad()) params.push_back(p);

  callbacks_.on_train_begin(args_, state_, control_);
  const auto start = Clock::now();
  const int64_t start_step = state_.global_step;
  double total_loss = 0;  // sum over optimizer steps of the mean micro-batch loss, for train_loss
  double loss_since_log = 0;
  int64_t last_logged_step = state_.global_step;
  double grad_norm = 0;
  int64_t samples_seen = 0;
  model_->train();

  for (int64_t epoch = epochs_trained; epoch < num_epochs && !control_.should_training_stop; ++epoch) {
    loader.set_epoch(static_cast<uint64_t>(epoch));
    callbacks_.on_epoch_begin(args_, state_, control_);
    int64_t batch_index = -1;
    double step_loss = 0;
    for (const Batch& cpu_batch : loader) {
      ++batch_index;
      if (batches_to_skip > 0) {  // resuming mid-epoch: these batches were trained on before the checkpoint
        --batches_to_skip;
        continue;
      }
      if (resumed_rng) {  // the first step after a resume draws exactly what the uninterrupted run drew
        restore_rng_state(*resumed_rng);
        resumed_rng.reset();
      }
      const bool last_in_epoch = batch_index + 1 == batches_per_epoch;
      const bool step_ends = (batch_index + 1) % accumulation == 0 || last_in_epoch;
      if (batch_index % accumulation == 0) callbacks_.on_step_begin(args_, state_, control_);
      const Batch batch = place_batch(cpu_batch, device_, PlacementPolicy::Move);
      SequenceClassifierOutput output;
      {
        const AutocastGuard autocast(precision_.precision, device_.type());
        output = model_->forward(batch.at("input_ids"), batch.at("attention_mask"),
                                 batch.count("token_type_ids") ? batch.at("token_type_ids") : at::Tensor(),
                                 batch.at("labels"));
      }
      check_tensor_on(output.loss, "loss", device_);
      const at::Tensor loss = output.loss.to(at::kFloat) / static_cast<double>(accumulation);
      gradient_sync_->begin_backward(step_ends);
      (loss_scaler_ ? loss * loss_scaler_->scale() : loss).backward();
      step_loss += loss.item<double>();
      samples_seen += batch.at("input_ids").size(0);
      state_.total_flos += static_cast<double>(flops_per_token * batch_tokens(batch));
      state_.num_input_tokens_seen += batch_tokens(batch);
      if (!step_ends) continue;

      StepOptions step_options;
      // With a DeepSpeed config DeepSpeed's gradient_clipping rules (0 when absent: no clipping), as in HF.
      step_options.max_grad_norm = deepspeed_ ? deepspeed_->gradient_clipping : args_.max_grad_norm;
      step_options.loss_scale = loss_scaler_ ? loss_scaler_->scale() : 1.0;
      step_options.skip_on_overflow = loss_scaler_ != nullptr;
      const StepResult stepped = gradient_sync_->step(params, step_options);
      grad_norm = stepped.grad_norm;
      if (loss_scaler_) {
        const LossScaleUpdate update = loss_scaler_->update(stepped.overflow);
        if (update.skipped && is_main_process()) {
          if (progress_) progress_->message(update.log_line);
          LogEntry entry;
          entry["loss_scale"] = update.new_scale;
          entry["skipped_step"] = 1;
          log(entry);
        }
      }
      // DeepSpeed leaves the schedule where it was when an overflow skipped the step.
      if (!stepped.overflow) {
        scheduler_->step();
        gradient_sync_->set_lr(scheduler_->lr());
      }
      if (state_.global_step == start_step) log_memory(num_params);
      ++state_.global_step;
      state_.epoch = static_cast<double>(epoch) +
                     static_cast<double>(batch_index + 1) / static_cast<double>(batches_per_epoch);
      total_loss += step_loss;
      loss_since_log += step_loss;
      step_loss = 0;
      callbacks_.on_step_end(args_, state_, control_);
      if (progress_) {
        const double elapsed = seconds_since(start);
        progress_->update(
            state_.global_step, state_.epoch,
            // Over all ranks, as HF's train_samples_per_second.
            elapsed > 0 ? static_cast<double>(samples_seen * comm().world_size()) / elapsed : 0.0);
      }
      maybe_log_save_evaluate(loss_since_log, last_logged_step, grad_norm, trial);
      if (control_.should_epoch_stop || control_.should_training_stop) break;
    }
    callbacks_.on_epoch_end(args_, state_, control_);
    maybe_log_save_evaluate(loss_since_log, last_logged_step, grad_norm, trial);
  }

  const double runtime = seconds_since(start);
  // After train() the model is whole on every rank (ZeRO-3 held pieces), ready to save, evaluate or predict.
  gradient_sync_->gather_parameters();
  if (args_.load_best_model_at_end && state_.best_model_checkpoint &&
      fs::exists(*state_.best_model_checkpoint + "/model.safetensors")) {
    if (is_main_process())
      progress_->message("Loading best model from " + *state_.best_model_checkpoint +
                         " (score: " + format_number(state_.best_metric.value_or(0)) + ").");
    load_model_weights(*state_.best_model_checkpoint);
  }

  TrainOutput output;
  output.global_step = state_.global_step;
  const int64_t steps_done = state_.global_step - start_step;
  const double world_loss = comm().all_reduce_sum(total_loss, "averaging the training loss over ranks") /
                            static_cast<double>(comm().world_size());
  output.training_loss = steps_done > 0 ? world_loss / static_cast<double>(steps_done) : 0.0;
  const int64_t total_batch = args_.per_device_train_batch_size * accumulation * gradient_sync_->world_size();
  const double num_samples = args_.max_steps > 0
                                 ? static_cast<double>(max_steps * total_batch)
                                 : static_cast<double>(train_dataset_->size()) * args_.num_train_epochs;
  output.metrics["train_runtime"] = runtime;
  output.metrics["train_samples_per_second"] = runtime > 0 ? num_samples / runtime : 0.0;
  output.metrics["train_steps_per_second"] = runtime > 0 ? static_cast<double>(max_steps) / runtime : 0.0;
  output.metrics["total_flos"] = state_.total_flos;
  output.metrics["train_loss"] = output.training_loss;
  log(output.metrics);
  output.metrics["epoch"] = state_.epoch;
  callbacks_.on_train_end(args_, state_, control_);
  if (progress_) progress_->finish();

  on_main_process("saving the final model to " + run_dir_, [&] {
    save_model(run_dir_);
    state_.save(run_dir_ + "/trainer_state.json");
    // The best checkpoint is kept by rotation; the others beyond save_total_limit go.
    if (args_.save_total_limit)
      rotate_checkpoints(run_dir_, *args_.save_total_limit, state_.best_model_checkpoint);
  });
  return output;
}

void Trainer::maybe_log_save_evaluate(double& loss_since_log, int64_t& last_logged_step, double grad_norm,
                                      const Trial* trial) {
  if (control_.should_log && state_.global_step > last_logged_step) {
    LogEntry entry;
    // HF logs the mean over ranks: each rank saw other examples.
    const double loss = comm().all_reduce_sum(loss_since_log, "averaging the logged loss over ranks") /
                        static_cast<double>(comm().world_size());
    entry["loss"] = loss / static_cast<double>(state_.global_step - last_logged_step);
    entry["grad_norm"] = grad_norm;
    entry["learning_rate"] = scheduler_->lr();
    loss_since_log = 0;
    last_logged_step = state_.global_step;
    log(entry);
  }
  bool new_best = false;
  if (control_.should_evaluate && eval_dataset_) {
    const auto metrics = evaluate();
    if (args_.resolved_metric_for_best_model()) {
      const std::string key = args_.best_metric_key();
      auto it = metrics.find(key);
      if (it == metrics.end()) {
        std::string available;
        for (const auto& [name, value] : metrics) available += (available.empty() ? "" : ", ") + name;
        BERTH_FAIL("metric_for_best_model '", *args_.resolved_metric_for_best_model(),
                   "' is not among the evaluation's ", "metrics (looked for '", key, "'; found ", available,
                   "). Fix: pick one of those");
      }
      const bool greater = args_.metric_greater_is_better();
      if (!state_.best_metric ||
          (greater ? it->second > *state_.best_metric : it->second < *state_.best_metric)) {
        state_.best_metric = it->second;
        state_.best_global_step = state_.global_step;
        new_best = true;
      }
    }
    model_->train();
  }
  if (args_.save_strategy == "best" && new_best) control_.should_save = true;
  // HF asks twice for the last step's save with save_strategy=epoch (at max_steps and at the epoch's end):
  // one checkpoint per step is enough.
  if (control_.should_save && last_saved_step_ == state_.global_step) {
    control_.should_save = false;
    if (new_best)
      state_.best_model_checkpoint = (fs::path(run_dir_) / checkpoint_dir_name(state_.global_step)).string();
  }
  if (control_.should_save) {
    if (new_best)
      state_.best_model_checkpoint = (fs::path(run_dir_) / checkpoint_dir_name(state_.global_step)).string();
    save_checkpoint(trial);
    last_saved_step_ = state_.global_step;
    callbacks_.on_save(args_, state_, control_);
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
  gradient_sync_->save_optimizer_state(staging);
  gradient_sync_->gather_parameters();  // ZeRO-3: the full model, for rank 0 to save
  std::string path;
  try {
    comm().barrier("every rank's optimizer state written for " + step_name);
    on_main_process("saving " + step_name, [&] {
      path = write_checkpoint_dir(run_dir_, state_.global_step, [&](const std::string& dir) {
        move_directory_contents(staging, dir);
        save_pretrained(model_, dir);
        if (tokenizer_) save_tokenizer(*tokenizer_, dir);
        write_file_atomically(dir + "/scheduler.json", scheduler_->state_json());
        if (loss_scaler_) write_file_atomically(dir + "/loss_scaler.json", loss_scaler_->state_json());
        save_rng_state(capture_rng_state(), dir + "/rng_state.safetensors");
        args_.save(dir + "/training_args.json");
        state_.save(dir + "/trainer_state.json");
        if (checkpoint_hook_) checkpoint_hook_(dir);
      });
      rotate_checkpoints(run_dir_, args_.save_total_limit.value_or(0), state_.best_model_checkpoint);
    });
  } catch (...) {
    gradient_sync_->release_parameters();
    throw;
  }
  gradient_sync_->release_parameters();
  return path;
}

void Trainer::load_model_weights(const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  std::map<std::string, at::Tensor> tensors = io::load_safetensors(path);
  torch::NoGradGuard no_grad;
  for (auto& item : model_->named_parameters()) {
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
  gradient_sync_->gather_parameters();  // ZeRO-3: whole parameters to load into, partitioned again after
  load_model_weights(checkpoint);
  gradient_sync_->release_parameters();
  gradient_sync_->load_optimizer_state(checkpoint, args_.placement, *model_);
  scheduler_->load_state_json(read_text_file(checkpoint + "/scheduler.json"));
  gradient_sync_->set_lr(scheduler_->lr());
  const std::string scaler_file = checkpoint + "/loss_scaler.json";
  if (loss_scaler_ && fs::exists(scaler_file) &&
      !loss_scaler_->load_state_json(read_text_file(scaler_file), scaler_file) && is_main_process())
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

std::map<std::string, double> Trainer::evaluate(const data::TokenizedDataset* dataset,
                                                const std::string& prefix) {
  const data::TokenizedDataset* data = dataset ? dataset : eval_dataset_.get();
  BERTH_CHECK(data,
              "Trainer::evaluate: no dataset to evaluate on. Fix: pass TrainerOptions::eval_dataset (--eval "
              "FILE) or a dataset to evaluate()");
  PredictionOutput output = predict(*data, prefix);
  if (!output.confusion.empty()) last_confusion_ = output.confusion;
  output.metrics[prefix + "_epoch"] = state_.epoch;
  std::map<std::string, double> metrics = output.metrics;
  metrics.erase(prefix + "_epoch");
  log(LogEntry(metrics.begin(), metrics.end()));
  callbacks_.on_evaluate(args_, state_, control_, metrics);
  return metrics;
}

PredictionOutput Trainer::predict(const data::TokenizedDataset& dataset, const std::string& prefix) {
  check_device_holds_data("Trainer::predict");
  const auto start = Clock::now();
  // Each rank predicts its share of the rows (the sampler's, unshuffled, padded to equal counts); the
  // shares are gathered so that every rank computes the same metrics over the whole dataset.
  data::DataLoaderOptions options;
  options.batch_size = static_cast<size_t>(args_.per_device_eval_batch_size);
  options.shuffle = false;
  options.prefetch = static_cast<size_t>(args_.dataloader_prefetch);
  options.rank = static_cast<size_t>(comm().rank());
  options.world_size = static_cast<size_t>(comm().world_size());
  if (tokenizer_) options.pad_token_id = tokenizer_->token_id(tokenizer_->special_tokens().pad);
  data::DistributedSamplerOptions share;
  share.rank = options.rank;
  share.world_size = options.world_size;
  share.shuffle = false;
  const std::vector<size_t> my_rows = data::DistributedSampler(dataset.size(), share).indices();
  data::DataLoader loader(dataset, options);
  model_->eval();
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> logits;
  int64_t rows = 0;
  int64_t batches = 0;
  const bool labeled = dataset.labels().defined();
  for (const Batch& cpu_batch : loader) {
    const Batch batch = place_batch(cpu_batch, device_, PlacementPolicy::Move);
    const AutocastGuard autocast(precision_.precision, device_.type());  // evaluation computes as training
    const auto out = model_->forward(
        batch.at("input_ids"), batch.at("attention_mask"),
        batch.count("token_type_ids") ? batch.at("token_type_ids") : at::Tensor(), at::Tensor());
    const int64_t n = batch.at("input_ids").size(0);
    rows += n;
    ++batches;
    logits.push_back(out.logits.detach().to(at::kCPU).to(at::kFloat));  // metrics follow on the CPU
  }
  PredictionOutput output;
  const int64_t num_labels = model_->config.num_labels();
  output.logits = gather_rows(comm(), my_rows, logits.empty() ? at::empty({0, num_labels}) : at::cat(logits),
                              static_cast<int64_t>(dataset.size()), num_labels);
  const std::string problem = model_->config.problem_type.value_or(
      model_->config.num_labels() == 1 ? kRegression : kSingleLabelClassification);
  if (problem == kSingleLabelClassification) {
    output.probabilities = output.logits.softmax(-1);
    output.predictions = output.logits.argmax(-1);
  } else if (problem == kMultiLabelClassification) {
    output.probabilities = output.logits.sigmoid();
  }
  if (labeled) {
    output.label_ids = dataset.labels();
    // The loss over the whole dataset from the gathered logits: the same number on every rank.
    output.metrics[prefix + "_loss"] =
        dataset.size() > 0 ? model_->loss(output.logits, output.label_ids).item<double>() : 0.0;
    if (problem == kSingleLabelClassification) {
      for (const auto& [name, value] :
           classification_metrics(output.logits, output.label_ids, &output.confusion))
        output.metrics[prefix + "_" + name] = value;
    } else if (problem == kRegression) {
      for (const auto& [name, value] : regression_metrics(output.logits, output.label_ids))
        output.metrics[prefix + "_" + name] = value;
    }
    if (compute_metrics_) {
      for (const auto& [name, value] : compute_metrics_({output.logits, output.label_ids}))
        output.metrics[prefix + "_" + name] = value;
    }
  }
  const double runtime = seconds_since(start);
  output.metrics[prefix + "_runtime"] = runtime;
  output.metrics[prefix + "_samples_per_second"] = runtime > 0 ? static_cast<double>(rows) / runtime : 0.0;
  output.metrics[prefix + "_steps_per_second"] = runtime > 0 ? static_cast<double>(batches) / runtime : 0.0;
  return output;
}

void Trainer::save_model(const std::string& dir) {
  const std::string target = dir.empty() ? run_dir_ : dir;
  if (!is_main_process()) return;
  save_pretrained(model_, target);
  if (tokenizer_) save_tokenizer(*tokenizer_, target);
  args_.save(target + "/training_args.json");
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
      all = nlohmann::json::parse(read_text_file(all_path));
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
  const auto& id2label = model_->config.id2label;
  for (const auto& [id, label] : id2label) inputs.labels.push_back(label);
  inputs.confusion = confusion.empty() ? last_confusion_ : confusion;
  inputs.final_metrics = metrics;
  inputs.run_info["output_dir"] = run_dir_;
  inputs.run_info["device"] = device_name(device_);
  inputs.run_info["global_step"] = std::to_string(state_.global_step);
  inputs.run_info["learning_rate"] = format_number(args_.learning_rate);
  inputs.run_info["batch_size"] = std::to_string(args_.per_device_train_batch_size);
  inputs.run_info["epochs"] = format_number(args_.num_train_epochs);
  inputs.run_info["model"] = std::to_string(model_->config.num_hidden_layers) + " layers, hidden " +
                             std::to_string(model_->config.hidden_size) + ", vocab " +
                             std::to_string(model_->config.vocab_size);
  write_training_report(run_dir_ + "/report.html", inputs);
}

BestRun Trainer::hyperparameter_search(const SearchSpace& space, size_t n_trials, Direction direction,
                                       SearchMethod method, const std::string& objective_metric) {
  BERTH_CHECK(model_init_,
              "hyperparameter_search needs a model_init: every trial starts from a fresh model. "
              "Fix: construct the Trainer with TrainerOptions::model_init instead of a model");
  BERTH_CHECK(eval_dataset_,
              "hyperparameter_search needs an eval dataset: trials are compared on an eval "
              "metric. Fix: pass TrainerOptions::eval_dataset (--eval FILE)");
  const TrainingArguments base = args_;
  const std::string base_dir = args_.output_dir;
  const std::string objective_key =
      !objective_metric.empty()
          ? (objective_metric.rfind("eval_", 0) == 0 ? objective_metric : "eval_" + objective_metric)
          : (base.resolved_metric_for_best_model() ? base.best_metric_key() : "eval_loss");
  auto trials = sample_trials(space, method, n_trials, static_cast<uint64_t>(base.seed));
  if (comm().world_size() > 1) {  // rank 0 chooses the trials; every rank runs the same ones
    const nlohmann::json chosen = trials;
    trials = nlohmann::json::parse(comm().broadcast_string(chosen.dump(), 0, "choosing the search's trials"))
                 .get<decltype(trials)>();
  }
  std::string lines;
  std::optional<BestRun> best;
  std::optional<TrainingArguments> best_args;
  for (size_t i = 0; i < trials.size(); ++i) {
    Trial trial{i, trials[i]};
    args_ = base;
    for (const auto& [name, value] : trial.params) set_training_argument(args_, name, value);
    args_.output_dir = base_dir + "/run-" + std::to_string(i);
    args_.overwrite_output_dir = true;
    args_.resume_from_checkpoint.reset();
    args_.validate();
    run_dir_ = args_.output_dir;
    train(std::nullopt, &trial);
    const auto metrics = evaluate();
    auto it = metrics.find(objective_key);
    BERTH_CHECK(
        it != metrics.end(), "hyperparameter_search: the objective '", objective_key,
        "' is not an evaluation metric. Fix: pass one of the eval_ metrics (e.g. eval_loss, eval_accuracy)");
    nlohmann::json line = {{"trial", i}, {"objective", it->second}, {"run_dir", run_dir_}};
    for (const auto& [name, value] : trial.params) line["params"][name] = value;
    for (const auto& [name, value] : metrics) line["metrics"][name] = value;
    lines += line.dump() + "\n";
    if (is_main_process()) write_file_atomically(base_dir + "/hp_search.jsonl", lines);
    const bool better = !best || (direction == Direction::Maximize ? it->second > best->objective
                                                                   : it->second < best->objective);
    if (better) {
      best = BestRun{i, it->second, trial.params, metrics};
      best_args = args_;
    }
  }
  BERTH_CHECK(best,
              "hyperparameter_search: the search space gave no trial. Fix: n_trials >= 1 and at least one "
              "dimension");
  on_main_process("saving best_trial_args.json",
                  [&] { best_args->save(base_dir + "/best_trial_args.json"); });
  args_ = base;
  run_dir_ = base_dir;
  return *best;
}

}  // namespace berth::train
