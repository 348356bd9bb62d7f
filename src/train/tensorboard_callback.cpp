// TensorBoardCallback: HF's TensorBoardCallback over TensorBoardLog.
#include "berth/train/tensorboard_callback.h"

#include "berth/train/tensorboard_log.h"

namespace berth::train {

TensorBoardCallback::TensorBoardCallback() = default;
TensorBoardCallback::~TensorBoardCallback() = default;

void TensorBoardCallback::open(const TrainingArguments& args) {
  if (logging_dir_.empty()) logging_dir_ = tensorboard_logging_dir(args.output_dir, "");
  log_ = std::make_unique<TensorBoardLog>(logging_dir_);
}

void TensorBoardCallback::on_train_begin(const TrainingArguments& args, TrainerState& state,
                                         TrainerControl&) {
  if (!state.is_world_process_zero) return;
  // HF: every trial of a search logs to a directory of its own, dated when it starts.
  if (state.is_hyper_param_search && state.trial_name) {
    logging_dir_ = tensorboard_logging_dir(args.output_dir, *state.trial_name);
    log_.reset();
  }
  if (log_) return;  // auto_find_batch_size's retry: the same writer, as HF keeps its tb_writer
  open(args);
  log_->write_text(0, "args", args.to_json_text());
}

void TensorBoardCallback::on_log(const TrainingArguments& args, TrainerState& state, TrainerControl&,
                                 const LogEntry& logs) {
  if (!state.is_world_process_zero) return;
  if (!log_) open(args);
  log_->write_scalars(state.global_step, logs);
}

void TensorBoardCallback::on_train_end(const TrainingArguments&, TrainerState&, TrainerControl&) {
  log_.reset();
}

std::string TensorBoardCallback::path() const { return log_ ? log_->path() : std::string(); }

}  // namespace berth::train
