// ProgressReporter: the terminal bar (fields, \r redraws, rate limit), plain lines elsewhere, ETA formats.
#include "berth/train/progress_reporter.h"

#include <gtest/gtest.h>

#include <sstream>

#include "support/test_support.h"

using berth::testing::expect_contains;
using namespace std::chrono_literals;

namespace berth::train {
namespace {

// A clock the test moves by hand.
struct FakeClock {
  std::chrono::steady_clock::time_point t{};
  std::function<std::chrono::steady_clock::time_point()> fn() {
    return [this] { return t; };
  }
};

ProgressOptions options(FakeClock& clock, bool tty, int64_t total = 1000) {
  ProgressOptions o;
  o.total_steps = total;
  o.steps_per_epoch = 333;
  o.tty = tty;
  o.now = clock.fn();
  return o;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(ProgressReporter, ClockAndEtaFormats) {
  EXPECT_EQ(format_clock(0), "00:00");
  EXPECT_EQ(format_clock(62), "01:02");
  EXPECT_EQ(format_clock(3599.4), "59:59");
  EXPECT_EQ(format_clock(3600), "1:00:00");
  EXPECT_EQ(format_clock(3600 * 26 + 61), "26:01:01");
  EXPECT_EQ(format_clock(-1), "?");
  EXPECT_EQ(format_eta(12), "12s");
  EXPECT_EQ(format_eta(105), "1m45s");
  EXPECT_EQ(format_eta(3600 * 2 + 180 + 5), "2h03m");
  EXPECT_EQ(format_eta(std::numeric_limits<double>::infinity()), "?");
}

// The example of the brief: 370 of 1000 steps, 62 s in, started at step 0 -> 5.97 it/s, 630 left -> 01:46.
TEST(ProgressReporter, TheTerminalBarHasTqdmsFields) {
  FakeClock clock;
  std::ostringstream out;
  ProgressReporter progress(out, options(clock, true));
  progress.update(0, 0.0, 0);
  clock.t += 62s;
  progress.log({{"loss", 0.2143}, {"learning_rate", 4.1e-5}, {"epoch", 1.11}, {"step", 370}});
  progress.update(370, 1.11, 47.5);
  const std::string bar = progress.bar_text();
  EXPECT_EQ(bar.rfind("  37%|███████▍            | 370/1000 [01:02<01:46, 5.97 it/s,", 0), 0u) << bar;
  expect_contains(bar, {"epoch 1.11", "loss 0.214", "lr 4.1e-05", "47.5 samples/s]"});
  expect_contains(out.str(), {"\r", "\x1b[K", "{'loss': 0.2143, 'learning_rate': 4.1e-05, 'epoch': 1.11}\n"});
  EXPECT_FALSE(berth::testing::contains(out.str(), "'step'"));
}

TEST(ProgressReporter, SlowStepsShowSecondsPerStepAndAnEmptyBarHasNoRate) {
  FakeClock clock;
  std::ostringstream out;
  ProgressReporter progress(out, options(clock, true, 10));
  progress.update(0, 0, 0);
  expect_contains(progress.bar_text(), {"  0%|", "| 0/10 [00:00<?, ? it/s"});
  clock.t += 5s;
  progress.update(2, 0, 0);
  expect_contains(progress.bar_text(), {" 20%|████", "2.50 s/it", "<00:20"});
  clock.t += 20s;
  progress.update(10, 0, 0);
  expect_contains(progress.bar_text(), {"100%|████████████████████| 10/10 [00:25<00:00"});
}

TEST(ProgressReporter, RedrawsAtMostTenTimesASecond) {
  FakeClock clock;
  std::ostringstream out;
  ProgressReporter progress(out, options(clock, true, 10000));
  // 1000 steps, 1 ms apart: one second of training, so about 10 redraws, not 1000.
  for (int step = 1; step <= 1000; ++step) {
    clock.t += 1ms;
    progress.update(step, 0, 0);
  }
  const size_t redraws = count(out.str(), "\r");
  EXPECT_GE(redraws, 10u);
  EXPECT_LE(redraws, 11u);
  // The last step is always drawn, however soon after the previous redraw.
  clock.t += 1ms;
  progress.update(10000, 1, 0);
  EXPECT_EQ(count(out.str(), "\r"), redraws + 1);
  EXPECT_TRUE(berth::testing::contains(out.str(), "10000/10000"));
}

TEST(ProgressReporter, NoTerminalMeansNoCarriageReturnAndOnePlainLinePerEntry) {
  FakeClock clock;
  std::ostringstream out;
  ProgressReporter progress(out, options(clock, false));
  progress.update(0, 0, 0);
  for (int step = 1; step <= 370; ++step) {
    clock.t += 100ms;
    progress.update(step, step / 333.0, 47.5);
  }
  progress.log(
      {{"loss", 0.214}, {"learning_rate", 4.1e-5}, {"grad_norm", 1.234}, {"epoch", 1.11}, {"step", 370}});
  progress.log({{"eval_loss", 0.30119}, {"eval_accuracy", 0.912}, {"epoch", 1.11}, {"step", 370}});
  progress.message("Saving checkpoint-370");
  progress.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(count(text, "\n"), 3u) << text;
  // 370 steps in 37 s: 10 it/s, 630 steps left: 63 s.
  expect_contains(
      text,
      {"step 370/1000 (37%) epoch 1.11 loss 0.2140 grad_norm 1.234 lr 4.10e-05 47.5 samples/s "
       "eta 1m03s\n",
       "step 370/1000 (37%) epoch 1.11 eval_accuracy 0.912 eval_loss 0.3012\n", "Saving checkpoint-370\n"});
}

TEST(ProgressReporter, DisabledOnATerminalPrintsPlainLines) {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions o = options(clock, true);
  o.enabled = false;
  ProgressReporter progress(out, o);
  EXPECT_FALSE(progress.is_tty());
  progress.update(1, 0, 0);
  progress.log({{"loss", 1.5}, {"learning_rate", 1e-4}, {"step", 1}});
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  expect_contains(out.str(), {"step 1/1000 (0%)", "loss 1.5000"});
}

TEST(ProgressReporter, LinesGoAboveTheBarWhichIsRedrawnAndFinishEndsIt) {
  FakeClock clock;
  std::ostringstream out;
  ProgressReporter progress(out, options(clock, true, 4));
  progress.update(1, 0.25, 0);
  progress.message("Saving model checkpoint to out/checkpoint-1");
  const std::string text = out.str();
  // clear the bar's line, the message, the bar again
  expect_contains(text, {"\r\x1b[KSaving model checkpoint to out/checkpoint-1\n\r  25%|"});
  progress.finish();
  progress.finish();
  EXPECT_EQ(out.str().back(), '\n');
  EXPECT_EQ(count(out.str(), "\n"), 2u);
}

TEST(ProgressReporter, TheBarIsCutToTheTerminalWidth) {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions o = options(clock, true);
  o.columns = 40;
  ProgressReporter progress(out, o);
  progress.update(5, 0, 12.5);
  progress.log({{"loss", 0.5}, {"learning_rate", 1e-3}});
  // 39 columns: each block character is one column, though several bytes.
  const std::string bar = progress.bar_text();
  size_t columns = 0;
  for (unsigned char c : bar) columns += (c & 0xC0) != 0x80;
  EXPECT_EQ(columns, 39u) << bar;
}

TEST(ProgressReporter, EntriesPrintAsHfsPythonDicts) {
  FakeClock clock;
  std::ostringstream out;
  ProgressReporter progress(out, options(clock, true));
  progress.log({{"train_runtime", 123456.78},
                {"train_loss", 0.25},
                {"epoch", 3.0},
                {"total_flos", 1e15},
                {"step", 1000}});
  expect_contains(out.str(), {"{'train_loss': 0.25, 'train_runtime': 123456.8, 'epoch': 3.0}\n"});
}

}  // namespace
}  // namespace berth::train
