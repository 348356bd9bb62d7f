// run_training_job: what `berth train` does, as one library call: the run plan, restarts, the data and model
// (training_job_data, training_job_model), training, metrics and the report.
#include "berth/train/training_job.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "berth/core/error.h"
#include "berth/core/input_file.h"
#include "berth/data/encode_text_dataset.h"
#include "berth/device/device.h"
#include "berth/dist/communicator.h"
#include "berth/model/auto_model.h"
#include "berth/tasks/task_recipe.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/train/callbacks.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/encode_options.h"
#include "berth/train/metrics_text.h"
#include "berth/train/run_plan.h"
#include "berth/train/trainer.h"
#include "train/training_job_data.h"
#include "train/training_job_model.h"

namespace berth::train {
namespace {

// Where a rank other than 0 sends what rank 0 alone prints.
std::ostream& null_stream() {
  static std::ostream sink(nullptr);
  return sink;
}

// After `berth launch --max-restarts` restarted the group, the run continues from its latest checkpoint
// (torchrun's contract, which leaves that to the script). A host that returns after a failure starts its
// launcher afresh (restart count 0) while the survivors restarted theirs, so the ranks agree: the group
// resumes when any rank's launcher restarted, from the checkpoint rank 0 finds (the Trainer broadcasts it).
void resume_after_restart(TrainingArguments& args, const EnvLookup& env, dist::Communicator& comm,
                          std::ostream& out) {
  const std::string mine = env("TORCHELASTIC_RESTART_COUNT").value_or("0");
  const std::vector<std::string> counts = comm.world_size() > 1
                                              ? comm.all_gather_string(mine, "the launchers' restart counts")
                                              : std::vector<std::string>{mine};
  const auto restarted =
      std::find_if(counts.begin(), counts.end(), [](const std::string& c) { return !c.empty() && c != "0"; });
  if (restarted == counts.end()) return;
  std::string found;  // rank 0 holds the checkpoints (save_on_each_node: every host holds the same)
  if (comm.rank() == 0 && std::filesystem::exists(args.output_dir) && latest_checkpoint(args.output_dir))
    found = "latest";
  found = comm.broadcast_string(found, 0, "whether a checkpoint to resume from exists");
  if (args.resume_from_checkpoint) return;
  const std::string who =
      "restart " + *restarted +
      (comm.world_size() > 1 && mine == "0" ? " (rank " + std::to_string(restarted - counts.begin()) +
                                                  "'s launcher restarted its group; this host rejoined)"
                                            : std::string());
  if (found.empty()) {
    out << who << ": no checkpoint in " << args.output_dir << " yet, training from the start\n";
    return;
  }
  args.resume_from_checkpoint = found;
  out << who << ": resuming from the latest checkpoint in " << args.output_dir << "\n";
}

void run_search(Trainer& trainer, const TrainingJobOptions& options, std::ostream& out) {
  const auto space =
      SearchSpace::from_json_text(read_input_file(options.hp_space, "--hp-search"), options.hp_space);
  const auto best =
      trainer.hyperparameter_search(space, options.n_trials, parse_direction(options.direction),
                                    parse_search_method(options.hp_method), options.hp_objective);
  out << "best trial: run-" << best.trial << " objective " << best.objective << " with";
  for (const auto& [name, value] : best.params) out << " --" << name << " " << value;
  const std::string& dir = options.args.output_dir;
  out << "\n  (" << dir << "/hp_search.jsonl, " << dir << "/best_trial_args.json)\n";
}

// One training, then the eval and test metrics, the confusion matrix and the report.
void run_training(Trainer& trainer, const EncodedData& data, const std::string& output_dir,
                  std::ostream& out) {
  const TrainOutput result = trainer.train();
  trainer.save_metrics("train", result.metrics);
  std::map<std::string, double> final_metrics;
  std::vector<std::vector<int64_t>> confusion;
  if (data.eval) {
    const auto metrics = trainer.evaluate();
    trainer.save_metrics("eval", metrics);
    write_metrics(out, "eval metrics", metrics);
    final_metrics.insert(metrics.begin(), metrics.end());
  }
  if (data.test) {
    const auto prediction = trainer.predict(*data.test, "test");
    trainer.save_metrics("test", prediction.metrics);
    write_metrics(out, "test metrics", prediction.metrics);
    final_metrics.insert(prediction.metrics.begin(), prediction.metrics.end());
    confusion = prediction.confusion;
    if (!confusion.empty())
      out << "test confusion matrix:\n" << format_confusion_table(confusion, data.text.label_map.labels());
  }
  trainer.write_report(final_metrics, confusion);
  out << "model, tokenizer and results: " << output_dir << " (report: " << output_dir
      << "/report.html; try `berth predict --model " << output_dir << " --input FILE.jsonl`)\n";
}

}  // namespace

void check_search_allowed(const TrainingJobOptions& options) {
  BERTH_CHECK(
      options.shared_tensors.empty(), options.shared_source,
      " is one model, trained in place; a search trains a fresh model each trial. Fix: pass model=dir "
      "(model.save_pretrained(dir)) for a search");
}

PreparedTrainingJob prepare_training_job(TrainingJobOptions options, std::ostream& console,
                                         const EnvLookup& env) {
  check_model_choice(options);
  TrainingArguments& args = options.args;
  // Under a launcher: this rank's device is chosen and bound, and the process group joined, before anything
  // is built; only rank 0 prints.
  auto plan = std::make_shared<RunPlan>(resolve_run_plan(args, env, job_hidden_size(options)));
  std::ostream& out = plan->is_main() ? console : null_stream();
  if (plan->process.env.distributed()) {
    args.device = device_name(plan->device());
    out << "distributed: " << plan->process.env.world_size << " ranks ("
        << to_string(plan->process.env.source) << ", " << plan->process.comm->backend_name()
        << "), rank 0 on " << args.device << "\n";
  }
  if (!plan->sharding.empty()) out << "sharding: " << plan->sharding << "\n";
  BERTH_CHECK(
      options.shared_tensors.empty() || plan->zero_stage() < 3, options.shared_source,
      " is trained in place, and ZeRO-3 partitions every parameter across the ranks (no rank would keep "
      "your model whole). Fix: ZeRO stage 1 or 2, or save it (model.save_pretrained(dir)) and pass "
      "model=dir");
  if (args.gradient_checkpointing) {
    const int64_t every = args.checkpoint_every_n_layers();
    out << "activation checkpointing: "
        << (every == 1 ? std::string("every layer") : "one layer in every " + std::to_string(every))
        << " recomputed in backward\n";
  }
  resume_after_restart(args, env, *plan->process.comm, out);

  const tokenizer::Tokenizer tokenizer =
      tokenizer::load_tokenizer(options.tokenizer.empty() ? options.model : options.tokenizer);
  std::optional<PretrainedConfig> checkpoint;
  if (options.model_preset.empty()) checkpoint = PretrainedConfig::load(options.model + "/config.json");
  // Unset, --max_length is what the model and tokenizer allow; the Trainer saves the resolved value.
  resolve_max_length(args, max_positions(checkpoint ? *checkpoint : job_model_shape(options)),
                     tokenizer.model_max_length);
  const ModelTask task = job_task(options, checkpoint);
  // Question answering and token classification encode as they load.
  EncodedData data = load_job_data(options, tokenizer, checkpoint, task);
  const data::LoadedDatasets& text = data.text;
  out << "data: " << text.description << "\n";
  std::optional<PretrainedConfig> preset;
  if (!options.model_preset.empty()) preset = preset_config(options, tokenizer, text, task);
  out << "task: " << task_name(task) << "\n";

  TrainerOptions trainer_options;
  trainer_options.model_init = make_model_init(options, preset, task, text, plan->device());
  // The task's own metrics (question answering's SQuAD scores) over the user's.
  trainer_options.compute_metrics = data.compute_metrics ? data.compute_metrics : options.compute_metrics;
  if (!data.train) data = encode_data(std::move(data.text), tokenizer, encode_options(args), out);
  if (options.block_size > 0) pack_data(data, task, options.block_size, out);
  trainer_options.train_dataset = data.train;
  trainer_options.eval_dataset = data.eval;
  trainer_options.args = args;
  trainer_options.tokenizer = tokenizer;
  trainer_options.masking.mlm_probability = options.mlm_probability;
  trainer_options.masking.whole_word_mask = options.whole_word_mask;
  trainer_options.plan = plan;
  if (options.early_stopping_patience > 0)
    trainer_options.callbacks.push_back(std::make_shared<EarlyStoppingCallback>(
        options.early_stopping_patience, options.early_stopping_threshold));
  for (const auto& callback : options.callbacks) trainer_options.callbacks.push_back(callback);
  PreparedTrainingJob job;
  job.trainer = std::make_unique<Trainer>(std::move(trainer_options));
  job.tokenizer = tokenizer;
  job.train = data.train;
  job.eval = data.eval;
  job.test = data.test;
  job.text = std::move(data.text);
  job.plan = plan;
  job.out = &out;
  job.options = std::move(options);
  return job;
}

std::shared_ptr<data::TokenizedDataset> encode_job_file(const PreparedTrainingJob& job,
                                                        const std::string& path) {
  const tasks::TaskRecipe& recipe = tasks::task_recipe(job.trainer->model()->info().task);
  return recipe.load_file(
      {path, job.options.data, *job.tokenizer, encode_options(job.options.args), job.text.label_map});
}

void finish_training_job(PreparedTrainingJob& job) {
  dist::Communicator& comm = *job.plan->process.comm;
  if (!job.options.hp_space.empty()) {
    run_search(*job.trainer, job.options, *job.out);
    comm.barrier("the end of the search");  // rank 0 hosts the rendezvous store: it leaves last
    return;
  }
  EncodedData data;
  data.text = job.text;
  data.train = job.train;
  data.eval = job.eval;
  data.test = job.test;
  run_training(*job.trainer, data, job.options.args.output_dir, *job.out);
  comm.barrier("the end of training");  // rank 0 hosts the rendezvous store: it leaves last
}

void run_training_job(TrainingJobOptions options, std::ostream& console, const EnvLookup& env) {
  PreparedTrainingJob job = prepare_training_job(std::move(options), console, env);
  finish_training_job(job);
}

}  // namespace berth::train
