// TrainingArguments: every knob of a training run, with HF transformers' names, types and defaults (4.4x).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::train {

// HF's TrainingArguments fields that berth implements, with HF's defaults, plus berth's own (device ...).
// logging_steps, eval_steps and save_steps are doubles as in HF: a value below 1 is a ratio of the total
// training steps (resolved_*_steps turns it into steps once the total is known).
struct TrainingArguments {
  std::string output_dir;  // required for training
  bool overwrite_output_dir = false;
  double num_train_epochs = 3.0;
  int64_t max_steps = -1;  // > 0 overrides num_train_epochs
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 8;
  // On an out-of-memory error, halve the training batch size and start the run again (HF, via
  // accelerate's find_executable_batch_size).
  bool auto_find_batch_size = false;
  int64_t gradient_accumulation_steps = 1;
  // Every transformer layer keeps only its input and runs its forward again in backward: less activation
  // memory for more compute. HF's activation_checkpointing, also under its older name gradient_checkpointing
  // (both are written, as transformers 5 writes them; a file that sets them differently is refused).
  bool gradient_checkpointing = false;
  // HF's activation_checkpointing_kwargs (older name gradient_checkpointing_kwargs) as a JSON object:
  // "every_n_layers" (checkpoint layers 0, n, 2n, ...), "use_reentrant" true or false (both give berth's one
  // recomputation, with the same numbers), "preserve_rng_state" true, "offload" false; unset: none.
  std::optional<std::string> gradient_checkpointing_kwargs;
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  double label_smoothing_factor = 0.0;  // HF's LabelSmoother epsilon on the Trainer's losses; 0: off
  // HF's names: linear|cosine|constant|constant_with_warmup|polynomial|cosine_with_restarts|inverse_sqrt|
  // reduce_lr_on_plateau|cosine_with_min_lr|warmup_stable_decay
  std::string lr_scheduler_type = "linear";
  // HF's lr_scheduler_kwargs: a JSON object of the schedule's keyword arguments ({"num_cycles": 2}); unset:
  // none. Written to training_args.json as the object itself, as HF does.
  std::optional<std::string> lr_scheduler_kwargs;
  double warmup_ratio = 0.0;
  int64_t warmup_steps = 0;
  std::string logging_strategy = "steps";  // no|steps|epoch
  bool logging_first_step = false;
  double logging_steps = 500;
  // HF: a nan/inf micro-batch loss adds the mean of the losses since the last log instead (logging only).
  bool logging_nan_inf_filter = true;
  std::string eval_strategy = "no";     // no|steps|epoch (alias: evaluation_strategy)
  std::optional<double> eval_steps;     // unset with eval_strategy=steps: logging_steps, as HF
  bool eval_on_start = false;           // evaluate once before the first step (logged at step 0)
  std::string save_strategy = "steps";  // no|steps|epoch|best
  double save_steps = 500;
  std::optional<int64_t> save_total_limit;
  bool save_only_model = false;    // checkpoints without optimizer, scheduler and RNG state: no resuming
  bool save_on_each_node = false;  // every node's local rank 0 writes checkpoints and the final model
  bool load_best_model_at_end = false;
  std::optional<std::string> metric_for_best_model;  // unset with load_best_model_at_end: "loss", as HF
  std::optional<bool> greater_is_better;             // unset: false for metrics ending in "loss", else true
  int64_t seed = 42;
  std::optional<int64_t> data_seed;  // unset: seed
  bool dataloader_drop_last = false;
  bool group_by_length = false;  // batches of similar length (less padding): HF's LengthGroupedSampler
  std::optional<std::string>
      resume_from_checkpoint;                      // a checkpoint folder, or "latest" (newest in output_dir)
  std::vector<std::string> report_to = {"jsonl"};  // jsonl|tensorboard|none|all (all: both)
  bool disable_tqdm = false;
  // Several processes (HF's ddp_* arguments)
  std::optional<std::string> ddp_backend;          // unset: nccl for CUDA devices, else gloo; or mpi
  std::optional<int64_t> ddp_bucket_cap_mb;        // unset: 25 MB gradient buckets
  std::optional<bool> ddp_find_unused_parameters;  // unset: false (HF: true); true lets parameters go unused
  int64_t ddp_timeout = 1800;                      // seconds any collective may take before failing
  std::string rendezvous = "env";                  // env (MASTER_ADDR/PORT), file://PATH or tcp://HOST:PORT
  // Mixed precision and sharding (HF's fp16, bf16, deepspeed, fsdp)
  bool fp16 = false;  // fp16 mixed precision with dynamic loss scaling
  bool bf16 = false;  // bf16 mixed precision
  // A DeepSpeed JSON config: a file path, or (from a JSON args file, as HF's dict) the object's JSON text.
  std::optional<std::string> deepspeed;
  // HF's space-separated FSDP options (full_shard, shard_grad_op, no_shard, offload, auto_wrap); "": off.
  std::string fsdp;
  // berth's own
  std::string device = "auto";     // auto|cpu|cuda|cuda:N
  std::string placement = "move";  // move|strict
  int64_t threads = 0;             // 0: berth's default thread count
  // Tokenizer truncation length for training and evaluation; unset: what the model and its tokenizer allow
  // (model_input_limit: the position limit, capped by the tokenizer's model_max_length).
  std::optional<int64_t> max_length;
  // Head+tail truncation: a text longer than max_length keeps its first truncation_keep_head tokens and
  // fills the rest from its end (the middle dropped). Unset: the end is cut off, as HF does.
  std::optional<int64_t> truncation_keep_head;
  int64_t dataloader_prefetch = 2;  // batches the loader prepares ahead
  // An optimizer step whose gradients are not finite is skipped (its update would turn the weights into
  // nan); this many such steps in a row stop the run with an error naming the step and the parameter. 0:
  // never stop. A dynamic fp16 loss scaler's overflows do not count (it stops at min_loss_scale itself).
  int64_t max_nonfinite_steps = 10;

  // All fields as one JSON object, keys sorted, 2-space indent, unset optionals as null.
  std::string to_json_text() const;
  // Defaults overridden by the keys in `text` (see merge_training_arguments_json), then validate().
  // HF keys berth does not implement are ignored with one line appended to *warnings (when given).
  static TrainingArguments from_json_text(const std::string& text,
                                          const std::string& source = "training_args.json",
                                          std::vector<std::string>* warnings = nullptr);
  // Throws berth::Error naming the first field that breaks a rule, its value, the rule and the fix.
  void validate() const;
  // Writes to_json_text() to `path` atomically (the Trainer writes output_dir/training_args.json).
  void save(const std::string& path) const;
  static TrainingArguments load(const std::string& path, std::vector<std::string>* warnings = nullptr);

  // HF: warmup_steps when > 0, else ceil(warmup_ratio * total_steps).
  int64_t resolved_warmup_steps(int64_t total_steps) const;
  // HF: a value below 1 is ceil(ratio * total_steps); otherwise the value itself.
  int64_t resolved_logging_steps(int64_t total_steps) const;
  // eval_steps, or logging_steps when unset (HF's default), resolved as above.
  int64_t resolved_eval_steps(int64_t total_steps) const;
  int64_t resolved_save_steps(int64_t total_steps) const;
  // metric_for_best_model, or "loss" when load_best_model_at_end or reduce_lr_on_plateau and unset (HF);
  // none otherwise.
  std::optional<std::string> resolved_metric_for_best_model() const;
  // greater_is_better, or (HF) false when the metric ends with "loss", true otherwise.
  bool metric_greater_is_better() const;
  // The metric's key in evaluation results: "eval_" + metric unless it already starts with "eval_";
  // throws berth::Error when there is no metric (see resolved_metric_for_best_model).
  std::string best_metric_key() const;
  // report_to with "all" expanded to berth's integrations, "none" winning: a sorted subset of {jsonl,
  // tensorboard}.
  std::vector<std::string> resolved_report_to() const;
  // HF's should_save: whether the process of global `rank` and node-local `local_rank` writes checkpoints
  // and the final model: rank 0; with save_on_each_node, every node's local rank 0.
  bool should_save(int64_t rank, int64_t local_rank) const;
  // data_seed, or seed when unset.
  int64_t resolved_data_seed() const;
  // gradient_checkpointing_kwargs' every_n_layers, or 1 (every layer) when unset.
  int64_t checkpoint_every_n_layers() const;
};

// One field of TrainingArguments, for the command line and documentation.
struct ArgumentSpec {
  std::string name;          // HF's spelling, e.g. "learning_rate"
  std::string type;          // "string", "bool", "int", "float", "list", with "?" when it may be unset
  std::string default_text;  // the default as set_training_argument would read it ("" for unset)
  std::string help;
};

// Every field, in declaration order.
const std::vector<ArgumentSpec>& training_argument_specs();

// Aliases accepted for a field: "evaluation_strategy" (HF's old name) -> "eval_strategy".
std::optional<std::string> training_argument_alias_target(std::string_view name);

// Sets one field from its text as typed on a command line: ints and floats in full, bool as
// true/false/1/0/yes/no, lists comma-separated, "none"/"null" unsets an optional field. Unknown names (with
// the closest known one), unsupported HF fields (unsupported_hf_arguments.h) and malformed values throw
// berth::Error. Does not validate().
void set_training_argument(TrainingArguments& args, std::string_view name, std::string_view value_text);

// Overrides only the keys present in the JSON object `json_text` (`source` names it in messages). HF keys
// berth does not implement are ignored, listed in one line appended to *warnings (when given), so HF's own
// training_args.json loads; other unknown keys and JSON type mismatches throw berth::Error. Does not
// validate().
void merge_training_arguments_json(TrainingArguments& args, const std::string& json_text,
                                   const std::string& source, std::vector<std::string>* warnings = nullptr);

// Python's TrainingArguments(**kwargs), given as one JSON object: every key must name a field (or an alias,
// or HF's spelling merge_training_arguments_json reads) with the same errors as set_training_argument
// (unknown names with the closest known one, unsupported HF fields refused), the values typed as in
// merge_training_arguments_json; then validate().
TrainingArguments training_arguments_from_kwargs_json(const std::string& json_object_text);

// The known name closest to `name` by edit distance, for "did you mean" hints; empty when none is close.
std::string closest_training_argument(std::string_view name);

}  // namespace berth::train
