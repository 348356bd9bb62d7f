// Trainer::hyperparameter_search: trials of fresh model_init runs, compared on an eval metric.
#include "berth/train/trainer.h"

#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"

namespace berth::train {

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
