// run_training_job: what `berth train` does, as one library call.
#include "berth/train/training_job.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "berth/core/error.h"
#include "berth/core/input_file.h"
#include "berth/core/output_path.h"
#include "berth/data/encode_text_dataset.h"
#include "berth/data/pack_blocks.h"
#include "berth/device/device.h"
#include "berth/dist/communicator.h"
#include "berth/model/auto_model.h"
#include "berth/model/model_presets.h"
#include "berth/placement/place.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/train/callbacks.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/encode_options.h"
#include "berth/train/metrics_text.h"
#include "berth/train/question_answering_job.h"
#include "berth/train/run_plan.h"
#include "berth/train/tensorboard_log.h"
#include "berth/train/token_classification_data.h"
#include "berth/train/trainer.h"

namespace berth::train {
namespace {

struct EncodedData {
  data::LoadedDatasets text;
  std::shared_ptr<data::TokenizedDataset> train, eval, test;
};

// Where a rank other than 0 sends what rank 0 alone prints.
std::ostream& null_stream() {
  static std::ostream sink(nullptr);
  return sink;
}

void check_model_choice(const TrainingJobOptions& options) {
  BERTH_CHECK(
      options.model.empty() != options.model_preset.empty(),
      "train: give exactly one of --model DIR (an HF model directory to fine-tune) and --model-preset NAME "
      "(a model trained from scratch: ",
      model_preset_list(), ")");
  BERTH_CHECK(!options.args.output_dir.empty(),
              "train: no output directory. Fix: --output-dir DIR (or output_dir in --args)");
  // Before the data and the model load: create_directories would fail later with a bare filesystem error.
  check_output_directory(options.args.output_dir, "--output_dir");
  const std::vector<std::string> reports = options.args.resolved_report_to();
  if (std::find(reports.begin(), reports.end(), "tensorboard") != reports.end()) {
    const std::string logdir = tensorboard_logging_dir(options.args.output_dir, "");
    check_output_directory(logdir, "TENSORBOARD_LOGGING_DIR (report_to tensorboard's logging directory)");
  }
  if (!options.hp_space.empty()) check_input_file(options.hp_space, "--hp-search");
  if (!options.hp_space.empty()) check_search_allowed(options);
  BERTH_CHECK(options.hp_space.empty() || options.n_trials > 0 || options.hp_method == "grid",
              "train: --n-trials 0 runs no trial of a random search. Fix: --n-trials 10, or --hp-method grid "
              "(where 0 means the whole grid)");
  BERTH_CHECK(options.model_preset.empty() || !(options.tokenizer.empty() && options.model.empty()),
              "train: --model-preset trains a model from scratch and needs a tokenizer. "
              "Fix: --tokenizer DIR (make one from your training text with `berth tokenizer train --input "
              "train.jsonl --vocab-size 8000 --lowercase --output DIR`)");
  if (options.model_preset.empty())
    BERTH_CHECK(options.config_overrides.empty(),
                "train: --config-overrides applies to --model-preset only; a "
                "pretrained model keeps its architecture. Fix: drop --config-overrides");
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

// "num_hidden_layers=2,hidden_dropout_prob=0.2" over a preset's config; the family validates the result
// when it builds the model.
PretrainedConfig apply_config_overrides(PretrainedConfig config, const std::string& overrides) {
  std::stringstream list(overrides);
  std::string item;
  while (std::getline(list, item, ',')) {
    const auto eq = item.find('=');
    BERTH_CHECK(eq != std::string::npos && eq > 0,
                "--config-overrides: expected key=value items separated by "
                "commas, found '",
                item, "'. Fix: e.g. --config-overrides num_hidden_layers=2,hidden_dropout_prob=0.2");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    BERTH_CHECK(!config.get_json(key).empty(), "--config-overrides: '", key,
                "' is not a field of the preset's config.json. "
                "Fix: use one of its fields, e.g. num_hidden_layers, hidden_size, intermediate_size, "
                "num_attention_heads, hidden_dropout_prob, max_position_embeddings");
    try {
      config.set_json(key, value);
    } catch (const Error&) {
      config.set_string(key, value);  // a bare word is a string (hidden_act=gelu_new)
    }
  }
  return config;
}

// A preset's config for this tokenizer and, for a classifier, these labels.
PretrainedConfig preset_config(const TrainingJobOptions& options, const tokenizer::Tokenizer& tokenizer,
                               const data::LoadedDatasets& data, ModelTask task) {
  PretrainedConfig config =
      apply_config_overrides(model_preset(options.model_preset, static_cast<int64_t>(tokenizer.vocab_size())),
                             options.config_overrides);
  if (task == ModelTask::SequenceClassification || task == ModelTask::TokenClassification)
    config.set_labels(data.label_map.labels());
  if (task == ModelTask::SequenceClassification) config.problem_type = data::to_string(data.problem_type);
  config.set_int("pad_token_id", tokenizer.pad_token_id());
  return config;
}

EncodedData encode_data(data::LoadedDatasets text, const tokenizer::Tokenizer& tokenizer,
                        const data::EncodeTextOptions& encoding, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  auto encode =
      [&](const std::optional<data::TextDataset>& dataset) -> std::shared_ptr<data::TokenizedDataset> {
    if (!dataset) return nullptr;
    return std::make_shared<data::TokenizedDataset>(data::encode_text_dataset(*dataset, tokenizer, encoding));
  };
  EncodedData data;
  data.train = encode(text.train);
  data.eval = encode(text.eval);
  data.test = encode(text.test);
  data.text = std::move(text);
  out << "tokenized in " << std::fixed << std::setprecision(1)
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s (max_length "
      << encoding.max_length;
  if (encoding.keep_head)
    out << ", head+tail: the first " << *encoding.keep_head << " tokens and the last "
        << encoding.max_length - 2 - *encoding.keep_head;
  out << ")\n" << std::defaultfloat << std::setprecision(6);
  return data;
}

// run_clm.py's group_texts over every split: full blocks of block_size tokens, no padding.
void pack_data(EncodedData& data, ModelTask task, size_t block_size, std::ostream& out) {
  BERTH_CHECK(task == ModelTask::CausalLM || task == ModelTask::MaskedLM,
              "train: --block-size packs texts for causal-lm or masked-lm training; the task is ",
              task_name(task), ". Fix: drop --block-size, or pass --task causal-lm or --task masked-lm");
  for (std::shared_ptr<data::TokenizedDataset>* split : {&data.train, &data.eval, &data.test})
    if (*split) *split = std::make_shared<data::TokenizedDataset>(data::pack_blocks(**split, block_size));
  out << "packed into blocks of " << block_size << " tokens: " << data.train->size() << " training blocks\n";
}

// --task, else what the checkpoint's architectures say (a preset: sequence classification).
ModelTask job_task(const TrainingJobOptions& options, const std::optional<PretrainedConfig>& checkpoint) {
  const ModelTask task = !options.task.empty() ? parse_task(options.task)
                         : checkpoint          ? default_task(*checkpoint)
                                               : ModelTask::SequenceClassification;
  return task;
}

// A fine-tuned classifier's named classes: its id2label when the names are not HF's defaults (LABEL_0,
// LABEL_1 ...), else nullopt.
std::optional<data::LabelMap> named_checkpoint_classes(const PretrainedConfig& checkpoint) {
  std::vector<std::string> names;
  bool named = false;
  for (const auto& [id, name] : checkpoint.id2label) {
    names.push_back(name);
    named = named || name != "LABEL_" + std::to_string(id);
  }
  return named ? std::optional<data::LabelMap>(data::LabelMap(names)) : std::nullopt;
}

// Whether `observed` holds labels (regression has none) and every one is an integer class id below `classes`.
bool all_class_ids(const data::LabelMap& observed, size_t classes) {
  return !observed.empty() &&
         std::all_of(observed.labels().begin(), observed.labels().end(), [&](const std::string& label) {
           const bool digits =
               !label.empty() && label.size() < 10 &&
               std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; });
           return digits && std::stoull(label) < classes;
         });
}

// A sequence classifier's data: the training file's labels, or, when they are all integer class ids of a
// checkpoint's named classes, those classes (HF datasets' ClassLabel integers index them; the head and the
// names stay).
data::LoadedDatasets load_classification_data(const data::DatasetSource& source,
                                              const std::optional<PretrainedConfig>& checkpoint,
                                              ModelTask task) {
  std::optional<data::LabelMap> fixed;
  std::optional<data::LabelMap> named;
  if (task == ModelTask::SequenceClassification && checkpoint && source.data.empty() && !source.train.empty())
    named = named_checkpoint_classes(*checkpoint);
  if (named) {
    data::DatasetSource train_only = source;  // the training labels decide; eval and test follow them
    train_only.eval.clear();
    train_only.test.clear();
    if (all_class_ids(data::load_datasets(train_only, std::nullopt).label_map, named->size())) fixed = named;
  }
  data::LoadedDatasets loaded = data::load_datasets(source, fixed);
  BERTH_CHECK(loaded.train, "train: no training data. Fix: --data spamassassin or --train FILE");
  return loaded;
}

// Token classification: words and tags, encoded as they load, with the checkpoint's labels when its head was
// trained for named ones (run_ner.py keeps them).
EncodedData load_tagged_data(const data::DatasetSource& source, const tokenizer::Tokenizer& tokenizer,
                             size_t max_length, const std::optional<PretrainedConfig>& checkpoint) {
  TokenClassificationData tagged = load_token_classification_data(
      source, tokenizer, max_length, checkpoint ? checkpoint_token_labels(*checkpoint) : std::nullopt);
  BERTH_CHECK(tagged.train, "train: no training data. Fix: --train FILE.jsonl (\"tokens\" and \"ner_tags\")");
  EncodedData data;
  data.text.label_map = tagged.labels;
  data.text.description = tagged.description;
  data.train = tagged.train;
  data.eval = tagged.eval;
  data.test = tagged.test;
  return data;
}

// Question answering: each split's examples in windows with their answers' token positions (run_qa.py); the
// eval and test splits are kept for the metrics, which postprocess answers from their windows' logits.
EncodedData load_question_answering_data(const TrainingJobOptions& options,
                                         const tokenizer::Tokenizer& tokenizer,
                                         std::vector<std::shared_ptr<const QuestionAnsweringSplit>>& splits) {
  const data::DatasetSource& source = options.data;
  BERTH_CHECK(source.data.empty(), "train: --data ", source.data,
              " is a text classification set; question answering reads SQuAD-style files. Fix: --train FILE "
              "(and --eval FILE) in .jsonl ({id, question, context, answers}) or SQuAD's .json layout");
  BERTH_CHECK(!source.train.empty(),
              "train: no training data. Fix: --train FILE (.jsonl with {id, question, "
              "context, answers: {text: [...], answer_start: [...]}} a line, or SQuAD's .json)");
  EncodedData data;
  std::string description;
  auto load = [&](const std::string& path, const char* name,
                  bool evaluated) -> std::shared_ptr<data::TokenizedDataset> {
    if (path.empty()) return nullptr;
    auto split = load_question_answering_split(path, tokenizer, static_cast<size_t>(*options.args.max_length),
                                               options.question_answering, /*labeled=*/true);
    if (evaluated) splits.push_back(split);
    description += (description.empty() ? "" : ", ") + std::to_string(split->examples.size()) + " " + name +
                   " questions (" + std::to_string(split->features.example_index.size()) + " windows)";
    return split->features.dataset;
  };
  data.train = load(source.train, "train", false);
  data.eval = load(source.eval, "eval", true);
  data.test = load(source.test, "test", true);
  data.text.description = "question answering: " + description;
  return data;
}

// A shared model must already be where the run trains: moving it would train a copy.
void check_shared_device(TaskModel& model, c10::Device device, const std::string& source) {
  for (const auto& item : model.module().named_parameters(/*recurse=*/true))
    BERTH_CHECK(item.value().device() == device, source, " is on ", device_name(item.value().device()),
                " and this run trains on ", device_name(device),
                "; berth trains the model you pass in place, so ", "it does not move it. Fix: model.to(\"",
                device_name(device), "\") before Trainer(...), or ",
                "TrainingArguments(use_cpu=True) for a model on the CPU");
}

// berth's own model_init builds the model where the run will use it, so --placement strict holds for it
// (strict is for models that user code places).
ModelInit make_model_init(const TrainingJobOptions& options, const std::optional<PretrainedConfig>& preset,
                          ModelTask task, const data::LoadedDatasets& data, c10::Device device) {
  const std::string model_dir = options.model;
  PretrainedOptions pretrained;
  if (task == ModelTask::SequenceClassification || task == ModelTask::TokenClassification) {
    pretrained.labels = data.label_map.labels();
    if (task == ModelTask::SequenceClassification)
      pretrained.problem_type = data::to_string(data.problem_type);
    // A new head for these labels, as HF's num_labels= does; the body must still fit the weights.
    pretrained.ignore_mismatched_sizes = true;
  }
  return [=](const Trial*) {
    std::shared_ptr<TaskModel> model;
    if (preset) {
      model = build_task_model(*preset, task);
    } else {
      auto loaded =
          options.shared_tensors.empty()
              ? load_task_model(model_dir, pretrained, task)
              : share_task_model(model_dir, options.shared_tensors, options.shared_source, pretrained, task);
      for (const auto& warning : loaded.report.warnings) std::cerr << "warning: " << warning << "\n";
      model = loaded.model;
    }
    if (!options.shared_tensors.empty()) check_shared_device(*model, device, options.shared_source);
    if (device.type() != c10::kMeta) place(model->module(), device);
    return model;
  };
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

// The model's shape before the data is read: the checkpoint's config.json, or the preset's with the
// overrides (its vocabulary and labels come later and change neither the hidden size nor the positions).
PretrainedConfig job_model_shape(const TrainingJobOptions& options) {
  if (!options.model_preset.empty())
    return apply_config_overrides(model_preset(options.model_preset, 1), options.config_overrides);
  return PretrainedConfig::load(options.model + "/config.json");
}

// The hidden size a DeepSpeed config's "auto" bucket sizes are filled from (HF reads it off the model's
// config), before the plan is resolved.
std::optional<int64_t> job_hidden_size(const TrainingJobOptions& options) {
  if (!options.args.deepspeed) return std::nullopt;
  return model_hidden_size(job_model_shape(options));
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
  // Labels: the training data's (a fine-tuned model's own labels are replaced, as HF's num_labels= does,
  // unless the data's labels are integer class ids of its named classes); a language model reads the text
  // alone.
  data::DatasetSource source = options.data;
  source.labeled = task == ModelTask::SequenceClassification || task == ModelTask::TokenClassification;
  EncodedData data;  // question answering and token classification encode as they load
  std::vector<std::shared_ptr<const QuestionAnsweringSplit>> answer_splits;
  if (task == ModelTask::QuestionAnswering) {
    data = load_question_answering_data(options, tokenizer, answer_splits);
  } else if (task == ModelTask::TokenClassification) {
    data = load_tagged_data(source, tokenizer, encode_options(args).max_length, checkpoint);
  } else {
    data.text = load_classification_data(source, checkpoint, task);
  }
  const data::LoadedDatasets& text = data.text;
  out << "data: " << text.description << "\n";
  std::optional<PretrainedConfig> preset;
  if (!options.model_preset.empty()) preset = preset_config(options, tokenizer, text, task);
  out << "task: " << task_name(task) << "\n";

  TrainerOptions trainer_options;
  trainer_options.model_init = make_model_init(options, preset, task, text, plan->device());
  trainer_options.compute_metrics = options.compute_metrics;
  if (task == ModelTask::QuestionAnswering)
    trainer_options.compute_metrics =
        question_answering_compute_metrics(answer_splits, options.question_answering.postprocess);
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
  const ModelTask task = job.trainer->model()->info().task;
  BERTH_CHECK(
      task == ModelTask::SequenceClassification || task == ModelTask::CausalLM || task == ModelTask::MaskedLM,
      "a dataset given after the Trainer was built is read for sequence classification and language "
      "models; the task is ",
      task_name(task), ". Fix: pass it as the Trainer's eval_dataset (or test data) instead");
  data::DatasetSource source = job.options.data;
  source.data.clear();
  source.train.clear();
  source.eval.clear();
  source.test = path;
  source.labeled = task == ModelTask::SequenceClassification && job.text.label_map.size() > 0;
  const data::LoadedDatasets loaded = data::load_datasets(
      source, source.labeled ? std::optional<data::LabelMap>(job.text.label_map) : std::nullopt);
  return std::make_shared<data::TokenizedDataset>(
      data::encode_text_dataset(*loaded.test, *job.tokenizer, encode_options(job.options.args)));
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
