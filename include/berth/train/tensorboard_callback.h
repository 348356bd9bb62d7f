// report_to tensorboard: HF's TensorBoardCallback, writing TensorBoard event files (TensorBoardLog) from
// world rank 0.
#pragma once

#include <memory>
#include <string>

#include "berth/train/callbacks.h"

namespace berth::train {

class TensorBoardLog;

// As transformers 5.24's integration_utils.TensorBoardCallback: on_train_begin opens an event file in the
// logging dir (tensorboard_logging_dir: $TENSORBOARD_LOGGING_DIR, else output_dir/runs/<date>_<host>; a
// search trial's own output_dir/runs/<date>_<host>/<trial>) and writes the arguments' JSON as the text
// "args"; on_log writes every number of the entry but "step" as a scalar named by rewrite_logs, at
// global_step (after on_train_end, in a new file in the same dir, as HF reopens its writer); on_train_end
// closes the file. Only the world process zero writes. A directory or file that cannot be written throws
// berth::Error with the fix.
class TensorBoardCallback : public TrainerCallback {
 public:
  TensorBoardCallback();
  ~TensorBoardCallback() override;

  void on_train_begin(const TrainingArguments& args, TrainerState& state, TrainerControl& control) override;
  void on_log(const TrainingArguments& args, TrainerState& state, TrainerControl& control,
              const LogEntry& logs) override;
  void on_train_end(const TrainingArguments& args, TrainerState& state, TrainerControl& control) override;
  std::string name() const override { return "TensorBoardCallback"; }

  // The file being written ("" when none is open).
  std::string path() const;

 private:
  void open(const TrainingArguments& args);

  std::string logging_dir_;
  std::unique_ptr<TensorBoardLog> log_;
};

}  // namespace berth::train
