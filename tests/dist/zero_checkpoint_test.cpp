// Tests for ZeRO checkpoints: shards saved with one world size and stage read back into any other partition.
#include "berth/dist/zero_checkpoint.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/core/compat.h"
#include "berth/io/safetensors.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/pretrained.h"
#include "berth/optim/adamw.h"
#include "berth/optim/optimizer_state_file.h"
#include "berth/optim/param_groups.h"
#include "support/flat_layouts.h"
#include "support/test_support.h"

namespace {

namespace fs = std::filesystem;
using berth::dist::FlatLayout;
using berth::dist::ParamSegment;
using berth::dist::SegmentState;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;

berth::BertConfig zero_checkpoint_tiny_config(int64_t hidden = 16) {
  berth::BertConfig c;
  c.vocab_size = 38;  // 5107 elements: partitions of 2 and 3 ranks cut parameters and end in padding
  c.hidden_size = hidden;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 24;
  c.max_position_embeddings = 12;
  c.set_labels({"ham", "spam", "phish"});
  return c;
}

FlatLayout layout_of(const torch::nn::Module& model) { return berth::testing::module_flat_layout(model); }

// Full per-parameter AdamW state (random, distinct per kind), the "truth" every partition is cut from.
struct FullState {
  std::vector<at::Tensor> master, exp_avg, exp_avg_sq;  // flat, per layout entry
};

FullState random_state(const FlatLayout& layout, uint64_t seed) {
  torch::manual_seed(seed);
  FullState state;
  for (const auto& entry : layout.entries) {
    state.master.push_back(torch::randn({entry.numel}));
    state.exp_avg.push_back(torch::randn({entry.numel}) * 1e-3);
    state.exp_avg_sq.push_back(torch::rand({entry.numel}) * 1e-6);
  }
  return state;
}

std::vector<SegmentState> cut(const FullState& full, const std::vector<ParamSegment>& segments) {
  std::vector<SegmentState> states;
  for (const ParamSegment& s : segments) {
    const auto p = static_cast<size_t>(s.param);
    states.push_back({full.master[p].narrow(0, s.begin, s.numel()).clone(),
                      full.exp_avg[p].narrow(0, s.begin, s.numel()).clone(),
                      full.exp_avg_sq[p].narrow(0, s.begin, s.numel()).clone()});
  }
  return states;
}

std::vector<ParamSegment> contiguous(const FlatLayout& layout, int64_t rank, int64_t world) {
  const auto [begin, end] = layout.partition(rank, world);
  return layout.segments_in(begin, end);
}

void save_contiguous(const std::string& dir, const FlatLayout& layout, const FullState& full, int64_t world,
                     int stage, int64_t step) {
  for (int64_t r = 0; r < world; ++r) {
    const std::vector<ParamSegment> segments = contiguous(layout, r, world);
    berth::dist::save_zero_shard(dir, layout, {r, world, stage, step}, segments, cut(full, segments));
  }
}

// Loads `wanted` and checks every kind equals the original bit for bit.
void expect_loads_exactly(const std::string& dir, const FlatLayout& layout, const FullState& full,
                          const std::vector<ParamSegment>& wanted, int64_t expected_step) {
  int64_t step = -1;
  const std::vector<SegmentState> loaded = berth::dist::load_zero_segments(dir, layout, wanted, &step);
  EXPECT_EQ(step, expected_step);
  ASSERT_EQ(loaded.size(), wanted.size());
  const std::vector<SegmentState> expected = cut(full, wanted);
  for (size_t i = 0; i < wanted.size(); ++i) {
    const std::string where = layout.entries[static_cast<size_t>(wanted[i].param)].name + " [" +
                              std::to_string(wanted[i].begin) + ", " + std::to_string(wanted[i].end) + ")";
    EXPECT_TRUE(torch::equal(loaded[i].master, expected[i].master)) << where;
    EXPECT_TRUE(torch::equal(loaded[i].exp_avg, expected[i].exp_avg)) << where;
    EXPECT_TRUE(torch::equal(loaded[i].exp_avg_sq, expected[i].exp_avg_sq)) << where;
  }
}

struct Fixture {
  berth::BertForSequenceClassification model{zero_checkpoint_tiny_config()};
  FlatLayout layout = layout_of(*model);
  FullState full = random_state(layout, 11);
};

TEST(ZeroCheckpoint, SavedWithTwoRanksStage2ResumesOnOneRank) {
  Fixture f;
  TempDir dir;
  save_contiguous(dir.path().string(), f.layout, f.full, 2, 2, 7);
  expect_loads_exactly(dir.path().string(), f.layout, f.full, f.layout.segments_in(0, f.layout.numel), 7);
}

TEST(ZeroCheckpoint, SavedWithTwoRanksStage2ResumesOnTwoRanksStage3) {
  Fixture f;
  TempDir dir;
  save_contiguous(dir.path().string(), f.layout, f.full, 2, 2, 7);
  for (int64_t threshold : {0, 40}) {
    for (int64_t r = 0; r < 2; ++r) {
      expect_loads_exactly(dir.path().string(), f.layout, f.full,
                           berth::dist::per_parameter_partition(f.layout, r, 2, threshold), 7);
    }
  }
}

TEST(ZeroCheckpoint, SavedWithTwoRanksStage2ResumesOnThreeRanksStage1) {
  Fixture f;
  TempDir dir;
  save_contiguous(dir.path().string(), f.layout, f.full, 2, 2, 7);
  ASSERT_NE(f.layout.padded_numel(3), f.layout.numel);  // the last partition ends in padding
  for (int64_t r = 0; r < 3; ++r)
    expect_loads_exactly(dir.path().string(), f.layout, f.full, contiguous(f.layout, r, 3), 7);
}

TEST(ZeroCheckpoint, SavedWithThreeRanksStage3ResumesOnTwoRanksStage2) {
  Fixture f;
  TempDir dir;
  for (int64_t r = 0; r < 3; ++r) {
    const auto segments = berth::dist::per_parameter_partition(f.layout, r, 3, 20);
    berth::dist::save_zero_shard(dir.path().string(), f.layout, {r, 3, 3, 12}, segments,
                                 cut(f.full, segments));
  }
  for (int64_t r = 0; r < 2; ++r)
    expect_loads_exactly(dir.path().string(), f.layout, f.full, contiguous(f.layout, r, 2), 12);
}

TEST(ZeroCheckpoint, ParameterOrderMayDifferFromTheSavingRun) {
  // Parameters are matched by name: a layout listing them in another order reads the same values.
  Fixture f;
  TempDir dir;
  save_contiguous(dir.path().string(), f.layout, f.full, 2, 1, 3);
  std::vector<std::string> names;
  std::vector<at::Tensor> params;
  FullState reversed;
  const auto items = f.model->named_parameters();
  for (size_t i = items.size(); i-- > 0;) {
    names.push_back(items[i].key());
    params.push_back(items[i].value());
    reversed.master.push_back(f.full.master[i]);
    reversed.exp_avg.push_back(f.full.exp_avg[i]);
    reversed.exp_avg_sq.push_back(f.full.exp_avg_sq[i]);
  }
  const FlatLayout other = berth::dist::make_flat_layout(names, params);
  expect_loads_exactly(dir.path().string(), other, reversed, contiguous(other, 1, 2), 3);
}

TEST(ZeroCheckpoint, FilesFollowTheDocumentedFormat) {
  Fixture f;
  TempDir dir;
  save_contiguous(dir.path().string(), f.layout, f.full, 2, 2, 7);
  EXPECT_TRUE(berth::dist::has_zero_shards(dir.path().string()));
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir.path() / "zero"))
    files.push_back(entry.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files,
            (std::vector<std::string>{"layout.json", "rank_0_of_2.safetensors", "rank_1_of_2.safetensors"}));

  std::ifstream in(dir.path() / "zero" / "layout.json");
  const nlohmann::json layout = nlohmann::json::parse(in);
  EXPECT_EQ(layout["format"], "berth-zero-layout");
  EXPECT_EQ(layout["version"], 1);
  EXPECT_EQ(layout["world_size"], 2);
  EXPECT_EQ(layout["stage"], 2);
  EXPECT_EQ(layout["step"], 7);
  EXPECT_EQ(layout["rank_files"], (nlohmann::json{"rank_0_of_2.safetensors", "rank_1_of_2.safetensors"}));
  ASSERT_EQ(layout["parameters"].size(), f.layout.entries.size());
  EXPECT_EQ(layout["parameters"][0]["name"], "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(layout["parameters"][0]["shape"], (nlohmann::json{38, 16}));
  EXPECT_EQ(layout["parameters"][1]["offset"], 38 * 16);

  const auto read = berth::dist::read_zero_layout(dir.path().string());
  EXPECT_EQ(read.layout.signature(), f.layout.signature());
  EXPECT_EQ(read.world_size, 2);
  EXPECT_EQ(read.stage, 2);
  EXPECT_EQ(read.step, 7);

  // Rank 1's first piece starts inside some parameter: its tensors are named by parameter and range.
  const auto segments = contiguous(f.layout, 1, 2);
  const auto& first = segments.front();
  const std::string base = f.layout.entries[static_cast<size_t>(first.param)].name + "/" +
                           std::to_string(first.begin) + "-" + std::to_string(first.end) + "/";
  const auto file =
      berth::io::SafetensorsFile::open((dir.path() / "zero" / "rank_1_of_2.safetensors").string());
  EXPECT_EQ(file.names().size(), 3 * segments.size());
  for (const char* kind : {"master", "exp_avg", "exp_avg_sq"}) {
    ASSERT_TRUE(file.contains(base + kind)) << base + kind;
    EXPECT_EQ(file.dtype(base + kind), at::kFloat);
    EXPECT_EQ(file.shape(base + kind), std::vector<int64_t>{first.numel()});
  }
  EXPECT_EQ(file.metadata().at("step"), "7");
  EXPECT_EQ(file.metadata().at("rank"), "1");
  EXPECT_EQ(file.metadata().at("world_size"), "2");
  EXPECT_EQ(file.metadata().at("format"), "berth-zero-shard");
}

TEST(ZeroCheckpoint, StepRoundTripsAndUndefinedMomentsAreZeros) {
  Fixture f;
  TempDir dir;
  const auto segments = contiguous(f.layout, 0, 1);
  std::vector<SegmentState> states = cut(f.full, segments);
  for (auto& s : states) s.exp_avg = s.exp_avg_sq = at::Tensor();  // before the first step
  berth::dist::save_zero_shard(dir.path().string(), f.layout, {0, 1, 1, 123456789012}, segments, states);
  int64_t step = 0;
  const auto loaded = berth::dist::load_zero_segments(dir.path().string(), f.layout, segments, &step);
  EXPECT_EQ(step, 123456789012);
  EXPECT_TRUE(torch::equal(loaded[0].master, states[0].master));
  EXPECT_EQ(loaded[0].exp_avg.abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(loaded[0].exp_avg_sq.abs().sum().item<float>(), 0.0f);
}

TEST(ZeroCheckpoint, MissingRankFileIsNamed) {
  Fixture f;
  TempDir dir;
  save_contiguous(dir.path().string(), f.layout, f.full, 2, 2, 7);
  fs::remove(dir.path() / "zero" / "rank_1_of_2.safetensors");
  // Rank 0's own pieces are all in the file that is there: a resume with the same partition still works.
  expect_loads_exactly(dir.path().string(), f.layout, f.full, contiguous(f.layout, 0, 2), 7);
  const ParamSegment last{static_cast<int64_t>(f.layout.entries.size()) - 1, 0, 3};
  const std::string text = error_text([&] {
    berth::dist::load_zero_segments(dir.path().string(), f.layout, f.layout.segments_in(0, f.layout.numel),
                                    nullptr);
  });
  expect_contains(text, {"zero/rank_1_of_2.safetensors is missing: the checkpoint is incomplete",
                         "1 of 2 rank files are there", "Fix: copy every rank's file into"});
  const std::string named =
      error_text([&] { berth::dist::load_zero_segments(dir.path().string(), f.layout, {last}, nullptr); });
  expect_contains(named, {"parameter 'classifier.bias' elements [0, 3)"});
  expect_contains(error_text([&] { berth::dist::consolidate_parameters(dir.path().string()); }),
                  {"rank_1_of_2.safetensors is missing"});
}

// A layout.json whose shape overflows int64 when multiplied out: the product wrapped to 0 (signed overflow,
// undefined behaviour) and matched numel 0, so the nonsense layout was accepted.
TEST(ZeroCheckpoint, LayoutShapeThatOverflowsIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path() / "zero");
  std::ofstream(dir.path() / "zero" / "layout.json")
      << R"({"format": "berth-zero-layout", "version": 1, "world_size": 1, "stage": 2, "step": 0,)"
      << R"( "rank_files": ["rank_0_of_1.safetensors"], "parameters": [{"name": "w", "shape": [4294967296,)"
      << R"( 4294967296], "numel": 0, "offset": 0}]})";
  expect_contains(error_text([&] { berth::dist::read_zero_layout(dir.path().string()); }),
                  {"zero/layout.json: parameter 'w' has shape [4294967296, 4294967296], numel 0 and offset 0",
                   "which do not fit together"});
}

TEST(ZeroCheckpoint, ShardFromAnotherSaveIsRefused) {
  Fixture f;
  TempDir a, b;
  save_contiguous(a.path().string(), f.layout, f.full, 2, 2, 7);
  save_contiguous(b.path().string(), f.layout, f.full, 2, 2, 8);
  fs::copy_file(b.path() / "zero" / "rank_1_of_2.safetensors", a.path() / "zero" / "rank_1_of_2.safetensors",
                fs::copy_options::overwrite_existing);
  expect_contains(error_text([&] {
                    berth::dist::load_zero_segments(a.path().string(), f.layout, contiguous(f.layout, 0, 1),
                                                    nullptr);
                  }),
                  {"rank_1_of_2.safetensors: was written by another save (step 8", "(step 7",
                   "mixes files of two checkpoints"});
}

TEST(ZeroCheckpoint, AnotherModelIsRefusedNamingTheFirstDifference) {
  Fixture f;
  TempDir dir;
  save_contiguous(dir.path().string(), f.layout, f.full, 2, 2, 7);
  berth::BertForSequenceClassification wider(zero_checkpoint_tiny_config(24));
  const FlatLayout other = layout_of(*wider);
  expect_contains(
      error_text([&] {
        berth::dist::load_zero_segments(dir.path().string(), other, contiguous(other, 0, 1), nullptr);
      }),
      {"zero/layout.json: parameter 'bert.embeddings.word_embeddings.weight' has shape [38, 16] in "
       "the checkpoint but [38, 24] in this model",
       "Fix: resume with the same model configuration"});
  berth::BertModel base(zero_checkpoint_tiny_config());  // no "bert." prefix, no classifier
  const FlatLayout renamed = layout_of(*base);
  expect_contains(error_text([&] {
                    berth::dist::load_zero_segments(dir.path().string(), renamed, contiguous(renamed, 0, 1),
                                                    nullptr);
                  }),
                  {"zero/layout.json has no parameter 'embeddings.word_embeddings.weight'"});
}

TEST(ZeroCheckpoint, SaveRejectsInconsistentInput) {
  Fixture f;
  TempDir dir;
  const auto segments = contiguous(f.layout, 0, 2);
  auto states = cut(f.full, segments);
  expect_contains(error_text([&] {
                    berth::dist::save_zero_shard(dir.path().string(), f.layout, {0, 2, 2, 1}, segments,
                                                 std::vector<SegmentState>(states.begin(), states.end() - 1));
                  }),
                  {"segments but", "Fix: pass one SegmentState per segment"});
  states[0].exp_avg = torch::zeros({3});
  expect_contains(
      error_text([&] {
        berth::dist::save_zero_shard(dir.path().string(), f.layout, {0, 2, 2, 1}, segments, states);
      }),
      {"exp_avg has 3 elements but its segment has"});
  expect_contains(error_text([&] {
                    berth::dist::save_zero_shard(dir.path().string(), f.layout, {2, 2, 2, 1}, {}, {});
                  }),
                  {"rank 2 is outside world size 2"});
  // Segments come from the layout they are saved with: one outside it is berth's bug, not the user's.
  const std::vector<ParamSegment> outside{{static_cast<int64_t>(f.layout.entries.size()), 0, 1}};
  EXPECT_THROW(
      berth::dist::save_zero_shard(dir.path().string(), f.layout, {0, 2, 2, 1}, outside, {states[1]}),
      berth::InternalError);
  EXPECT_FALSE(fs::exists(dir.path() / "zero" / "layout.json"));
}

// A one-process / DDP checkpoint: model.safetensors + berth's optimizer.safetensors after a real step.
TEST(ZeroCheckpoint, ReplicatedCheckpointLoadsAsZeroPieces) {
  torch::manual_seed(5);
  berth::BertForSequenceClassification model(zero_checkpoint_tiny_config());
  auto optimizer = std::make_unique<berth::optim::AdamW>(berth::optim::hf_param_groups(*model, 0.01),
                                                         berth::optim::AdamWOptions{1e-3});
  for (int step = 0; step < 2; ++step) {
    const at::Tensor ids = torch::randint(1, 38, {2, 6}, torch::kLong);
    const at::Tensor labels = torch::tensor({0, 2}, torch::kLong);
    model->forward(ids, {}, {}, labels).loss.backward();
    optimizer->step();
    optimizer->zero_grad_to_none();
  }
  TempDir dir;
  berth::save_pretrained(model, dir.path().string());
  berth::optim::save_optimizer_state(*optimizer, dir.file("optimizer.safetensors"));
  EXPECT_FALSE(berth::dist::has_zero_shards(dir.path().string()));

  const FlatLayout layout = layout_of(*model);
  FullState full;
  for (const auto& item : model->named_parameters()) {
    const auto& state = static_cast<torch::optim::AdamWParamState&>(
        *optimizer->state().at(berth::compat::optimizer_state_key(item.value())));
    full.master.push_back(item.value().detach().reshape({-1}).clone());
    full.exp_avg.push_back(state.exp_avg().reshape({-1}).clone());
    full.exp_avg_sq.push_back(state.exp_avg_sq().reshape({-1}).clone());
  }
  for (int64_t r = 0; r < 2; ++r) {
    expect_loads_exactly(dir.path().string(), layout, full, contiguous(layout, r, 2), 2);
    expect_loads_exactly(dir.path().string(), layout, full,
                         berth::dist::per_parameter_partition(layout, r, 2), 2);
  }
  const auto params = berth::dist::consolidate_parameters(dir.path().string());
  ASSERT_EQ(params.size(), layout.entries.size());
  EXPECT_TRUE(torch::equal(params.at("classifier.weight"), model->classifier->weight.detach()));

  berth::BertForSequenceClassification wider(zero_checkpoint_tiny_config(24));
  const FlatLayout other = layout_of(*wider);
  expect_contains(error_text([&] {
                    berth::dist::load_zero_segments(dir.path().string(), other, contiguous(other, 0, 1),
                                                    nullptr);
                  }),
                  {"model.safetensors: parameter 'bert.embeddings.word_embeddings.weight' has shape [38, 16] "
                   "but this model's is [38, 24]",
                   "Fix: resume with the same model configuration"});
  fs::remove(dir.path() / "optimizer.safetensors");
  expect_contains(error_text([&] {
                    berth::dist::load_zero_segments(dir.path().string(), layout, contiguous(layout, 0, 1),
                                                    nullptr);
                  }),
                  {"holds no optimizer state (neither zero/layout.json nor optimizer.safetensors)"});
}

TEST(ZeroCheckpoint, ConsolidatesShardsIntoFullParameters) {
  Fixture f;
  TempDir dir;
  save_contiguous(dir.path().string(), f.layout, f.full, 3, 1, 4);
  const auto params = berth::dist::consolidate_parameters(dir.path().string());
  ASSERT_EQ(params.size(), f.layout.entries.size());
  for (size_t i = 0; i < f.layout.entries.size(); ++i) {
    const auto& entry = f.layout.entries[i];
    const at::Tensor& value = params.at(entry.name);
    EXPECT_EQ(value.sizes().vec(), entry.shape) << entry.name;
    EXPECT_TRUE(torch::equal(value.reshape({-1}), f.full.master[i])) << entry.name;
  }
}

TEST(ZeroCheckpoint, DirectoryWithoutStateIsExplained) {
  TempDir dir;
  EXPECT_FALSE(berth::dist::has_zero_shards(dir.path().string()));
  expect_contains(
      error_text([&] { berth::dist::consolidate_parameters(dir.path().string()); }),
      {"expected a checkpoint with zero/layout.json (ZeRO shards) or model.safetensors, found neither"});
  expect_contains(error_text([&] { berth::dist::read_zero_layout(dir.path().string()); }),
                  {"zero/layout.json: cannot read it (no such file)"});
  fs::create_directories(dir.path() / "zero");
  std::ofstream(dir.path() / "zero" / "layout.json") << "{\"format\": \"other\"}";
  expect_contains(error_text([&] { berth::dist::read_zero_layout(dir.path().string()); }),
                  {"expected format 'berth-zero-layout', found 'other'"});
}

}  // namespace
