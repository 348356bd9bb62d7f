// `berth export` as users run it: a consolidated HF model from ZeRO shards or from a one-process checkpoint.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "berth/dist/zero_checkpoint.h"
#include "berth/model/auto_model.h"
#include "berth/model/model_presets.h"
#include "berth/model/pretrained.h"
#include "support/cli_runner.h"
#include "support/test_support.h"

namespace {

namespace fs = std::filesystem;
using berth::BertForSequenceClassification;
using berth::testing::expect_contains;
using berth::testing::run_cli;
using berth::testing::TempDir;

const std::string kModel = berth::testing::golden_dir() + "/tiny_bert_classifier";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// zero/ shards of 2 ranks (stage 2) for `module`'s parameters whose masters differ from its values (the
// masters are what training reached; export must take them). Returns the masters by name.
std::map<std::string, at::Tensor> write_export_zero_shards(torch::nn::Module& module, const fs::path& dir) {
  std::vector<std::string> names;
  std::vector<at::Tensor> params;
  for (const auto& item : module.named_parameters()) {
    names.push_back(item.key());
    params.push_back(item.value());
  }
  const berth::dist::FlatLayout layout = berth::dist::make_flat_layout(names, params);
  torch::manual_seed(3);
  std::map<std::string, at::Tensor> masters;
  for (size_t i = 0; i < names.size(); ++i)
    masters[names[i]] = params[i].detach() + torch::randn(params[i].sizes());
  for (int64_t r = 0; r < 2; ++r) {
    const auto [begin, end] = layout.partition(r, 2);
    const auto segments = layout.segments_in(begin, end);
    std::vector<berth::dist::SegmentState> states;
    for (const auto& s : segments) {
      const at::Tensor master =
          masters.at(names[static_cast<size_t>(s.param)]).reshape({-1}).narrow(0, s.begin, s.numel());
      states.push_back({master.clone(), torch::zeros({s.numel()}), torch::zeros({s.numel()})});
    }
    berth::dist::save_zero_shard(dir.string(), layout, {r, 2, 2, 40}, segments, states);
  }
  return masters;
}

// A checkpoint as the Trainer writes it under ZeRO: the golden tiny classifier saved with save_pretrained,
// its tokenizer files, and ZeRO shards.
std::map<std::string, at::Tensor> make_zero_checkpoint(const fs::path& dir) {
  auto model = berth::from_pretrained<BertForSequenceClassification>(kModel).model;
  berth::save_pretrained(model, dir.string());
  for (const char* name : {"vocab.txt", "tokenizer_config.json"})
    fs::copy_file(fs::path(kModel) / name, dir / name);
  return write_export_zero_shards(*model, dir);
}

void expect_model_equals(const fs::path& dir, const std::map<std::string, at::Tensor>& expected) {
  const auto loaded = berth::from_pretrained<BertForSequenceClassification>(dir.string());
  EXPECT_TRUE(loaded.report.clean());
  size_t compared = 0;
  for (const auto& item : loaded.model->named_parameters()) {
    ASSERT_TRUE(expected.count(item.key())) << item.key();
    EXPECT_TRUE(torch::equal(item.value(), expected.at(item.key()))) << item.key();
    ++compared;
  }
  EXPECT_EQ(compared, expected.size());
}

TEST(ExportCli, ConsolidatesZeroShardsIntoAnHfModel) {
  TempDir tmp;
  const fs::path checkpoint = tmp.path() / "checkpoint-40";
  const auto masters = make_zero_checkpoint(checkpoint);
  const fs::path out = tmp.path() / "exported";
  const auto result = run_cli("export --checkpoint " + checkpoint.string() + " --output " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_contains(result.output, {"export: ", " parameters from ZeRO stage 2 shards of 2 ranks, step 40",
                                  "2 tokenizer files"});
  expect_model_equals(out, masters);
  EXPECT_EQ(read_file(out / "vocab.txt"), read_file(fs::path(kModel) / "vocab.txt"));
  EXPECT_TRUE(fs::exists(out / "tokenizer_config.json"));
  EXPECT_FALSE(fs::exists(out / "zero"));
  EXPECT_FALSE(fs::exists(out / "optimizer.safetensors"));
  for (const auto& entry : fs::directory_iterator(tmp.path()))
    EXPECT_EQ(entry.path().filename().string().rfind(".tmp-export", 0), std::string::npos) << entry.path();

  // Ready for berth predict.
  std::ofstream(tmp.file("in.jsonl")) << "{\"text\": \"win money now\"}\n";
  const auto predicted =
      run_cli("predict --model " + out.string() + " --input " + tmp.file("in.jsonl"), false);
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  expect_contains(predicted.output, {"\"label\""});
}

TEST(ExportCli, OneProcessCheckpointExportsItsModel) {
  TempDir tmp;
  const fs::path checkpoint = tmp.path() / "checkpoint-5";
  auto model = berth::from_pretrained<BertForSequenceClassification>(kModel).model;
  berth::save_pretrained(model, checkpoint.string());
  std::map<std::string, at::Tensor> expected;
  for (const auto& item : model->named_parameters()) expected[item.key()] = item.value().detach();
  const fs::path out = tmp.path() / "exported";
  const auto result = run_cli("export --checkpoint " + checkpoint.string() + " --output " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_contains(result.output, {"parameters from model.safetensors", "0 tokenizer files"});
  expect_model_equals(out, expected);
}

// Every family exports through the AutoModel table: a tied causal LM (the lm_head is the embeddings, one
// tensor) and a classifier head of a decoder, from ZeRO shards, reload with the masters' values.
TEST(ExportCli, DecoderCheckpointsOfEveryHeadExport) {
  for (const auto& [preset, task] : std::vector<std::pair<std::string, berth::ModelTask>>{
           {"llama-tiny", berth::ModelTask::CausalLM},
           {"gpt2-tiny", berth::ModelTask::CausalLM},
           {"llama-tiny", berth::ModelTask::SequenceClassification}}) {
    SCOPED_TRACE(preset + " " + berth::task_name(task));
    TempDir tmp;
    const fs::path checkpoint = tmp.path() / "checkpoint-40";
    auto config = berth::model_preset(preset, 96);
    config.set_int("pad_token_id", 0);
    const auto model = berth::build_task_model(config, task);
    model->save_pretrained(checkpoint.string());
    const auto masters = write_export_zero_shards(model->module(), checkpoint);
    const fs::path out = tmp.path() / "exported";
    const auto result = run_cli("export --checkpoint " + checkpoint.string() + " --output " + out.string());
    ASSERT_EQ(result.exit_code, 0) << result.output;
    expect_contains(result.output, {" parameters from ZeRO stage 2 shards of 2 ranks, step 40"});
    const auto loaded = berth::load_task_model(out.string());
    EXPECT_TRUE(loaded.report.clean());
    EXPECT_EQ(loaded.model->info().architecture, model->info().architecture);
    size_t compared = 0;
    for (const auto& item : loaded.model->module().named_parameters()) {
      ASSERT_TRUE(masters.count(item.key())) << item.key();
      EXPECT_TRUE(torch::equal(item.value(), masters.at(item.key()))) << item.key();
      ++compared;
    }
    EXPECT_EQ(compared, masters.size());
  }
}

TEST(ExportCli, AnUnknownModelTypeIsNamedWithTheSupportedOnes) {
  TempDir tmp;
  const fs::path checkpoint = tmp.path() / "checkpoint-1";
  fs::create_directories(checkpoint);
  std::ofstream(checkpoint / "config.json") << R"({"model_type": "mamba", "hidden_size": 8})";
  const auto result = run_cli("export --checkpoint " + checkpoint.string() + " --output " + tmp.file("out"));
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"mamba", "llama", "roberta"});
  EXPECT_FALSE(fs::exists(tmp.file("out")));
}

TEST(ExportCli, RefusesToOverwriteWithoutTheFlag) {
  TempDir tmp;
  const fs::path checkpoint = tmp.path() / "checkpoint-40";
  const auto masters = make_zero_checkpoint(checkpoint);
  const fs::path out = tmp.path() / "exported";
  fs::create_directories(out);
  std::ofstream(out / "notes.txt") << "keep me";
  const std::string args = "export --checkpoint " + checkpoint.string() + " --output " + out.string();
  const auto refused = run_cli(args);
  EXPECT_EQ(refused.exit_code, 2);
  expect_contains(refused.output, {"--output " + out.string() + " is not empty. Fix: pass --overwrite"});
  EXPECT_TRUE(fs::exists(out / "notes.txt"));
  const auto replaced = run_cli(args + " --overwrite");
  ASSERT_EQ(replaced.exit_code, 0) << replaced.output;
  EXPECT_FALSE(fs::exists(out / "notes.txt"));
  expect_model_equals(out, masters);
}

TEST(ExportCli, ErrorsNameTheProblem) {
  TempDir tmp;
  const auto missing = run_cli("export --checkpoint " + tmp.file("nowhere") + " --output " + tmp.file("out"));
  EXPECT_EQ(missing.exit_code, 2);
  expect_contains(missing.output, {"--checkpoint " + tmp.file("nowhere") + ": no such directory"});

  const fs::path checkpoint = tmp.path() / "run" / "checkpoint-40";
  make_zero_checkpoint(checkpoint);
  const auto output_dir =
      run_cli("export --checkpoint " + (tmp.path() / "run").string() + " --output " + tmp.file("out"));
  EXPECT_EQ(output_dir.exit_code, 2);
  expect_contains(output_dir.output, {"is a training output directory, not a checkpoint",
                                      "--checkpoint " + checkpoint.string() + " (the latest)"});

  fs::remove(checkpoint / "zero" / "rank_1_of_2.safetensors");
  const auto incomplete =
      run_cli("export --checkpoint " + checkpoint.string() + " --output " + tmp.file("out"));
  EXPECT_EQ(incomplete.exit_code, 2);
  expect_contains(incomplete.output,
                  {"zero/rank_1_of_2.safetensors is missing: the checkpoint is incomplete"});
  EXPECT_FALSE(fs::exists(tmp.file("out")));
  for (const auto& entry : fs::directory_iterator(tmp.path()))
    EXPECT_EQ(entry.path().filename().string().rfind(".tmp-export", 0), std::string::npos) << entry.path();
}

}  // namespace
