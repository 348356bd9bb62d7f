// Parity with HF transformers' decoder models (tests/goldens/decoder_goldens.py): GPT-2, Llama, Mistral and
// Qwen2 causal LM and sequence classification loaded through load_task_model; logits, loss and every
// parameter's gradient, save_pretrained round trips, and the refusals of what berth does not implement.
#include "berth/core/error.h"
#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"
#include "berth/model/model_presets.h"

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace {

// The cases decoder_goldens.py writes; a case the script stops writing fails here.
const std::vector<std::string> kDecoderCases = {"gpt2_causal_lm",
                                                "gpt2_causal_lm_untied_options",
                                                "gpt2_sequence_classification",
                                                "gpt2_sequence_classification_multi_label",
                                                "llama_causal_lm",
                                                "llama_causal_lm_tied_biases",
                                                "llama_rope_llama3",
                                                "llama_rope_linear",
                                                "llama_rope_dynamic",
                                                "llama_sequence_classification",
                                                "mistral_causal_lm",
                                                "mistral_sequence_classification",
                                                "qwen2_causal_lm",
                                                "qwen2_sequence_classification",
                                                "llama_causal_lm_left_padded",
                                                "gpt2_sequence_classification_left_padded"};

std::string decoder_case_dir(const std::string& name) {
  return berth::testing::golden_dir() + "/decoders/" + name;
}

// fp32 parity: |actual - expected| <= 1e-5 + 1e-5 * |expected| everywhere (numpy's allclose).
void decoder_expect_close(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what << " is undefined";
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const at::Tensor a = actual.detach().to(at::kDouble);
  const at::Tensor e = expected.to(at::kDouble);
  const double worst = ((a - e).abs() - 1e-5 * e.abs()).max().item<double>();
  EXPECT_LE(worst, 1e-5) << what << ": max |diff| " << (a - e).abs().max().item<double>();
}

berth::ModelTask decoder_task_of(const std::string& name) {
  return name.find("causal_lm") != std::string::npos || name.find("rope") != std::string::npos
             ? berth::ModelTask::CausalLM
             : berth::ModelTask::SequenceClassification;
}

std::set<std::string> decoder_tensor_names(const std::string& file) {
  const auto st = berth::io::SafetensorsFile::open(file);
  const std::vector<std::string> names = st.names();
  return {names.begin(), names.end()};
}

TEST(DecoderParity, ScriptWritesTheListedCases) {
  std::ifstream in(berth::testing::golden_dir() + "/decoders/cases.txt");
  std::vector<std::string> written;
  for (std::string line; std::getline(in, line) && written.size() < 100;) written.push_back(line);
  EXPECT_EQ(written, kDecoderCases);
}

class DecoderGoldenCase : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderGoldenCase, LogitsLossAndGradientsMatchTheReference) {
  const std::string dir = decoder_case_dir(GetParam());
  auto loaded = berth::load_task_model(dir, {}, decoder_task_of(GetParam()));
  EXPECT_TRUE(loaded.report.clean()) << (loaded.report.warnings.empty() ? "" : loaded.report.warnings[0]);
  berth::TaskModel& model = *loaded.model;
  model.module().eval();
  const auto golden = berth::io::SafetensorsFile::open(dir + "/golden.safetensors");
  EXPECT_EQ(model.info().architecture, golden.metadata().at("architecture"));

  berth::TaskOutput out =
      model.forward_batch({{"input_ids", golden.tensor("input_ids")},
                           {"attention_mask", golden.tensor("attention_mask")},
                           {"token_type_ids", torch::zeros_like(golden.tensor("input_ids"))},
                           {"labels", golden.tensor("labels")}});
  decoder_expect_close(out.logits, golden.tensor("logits"), "logits");
  decoder_expect_close(out.loss, golden.tensor("loss"), "loss");
  out.loss.backward();
  int checked = 0;
  for (const auto& param : model.module().named_parameters()) {
    decoder_expect_close(param.value().grad(), golden.tensor("grad." + param.key()),
                         "grad of " + param.key());
    ++checked;
  }
  int expected = 0;
  for (const std::string& name : golden.names()) expected += name.rfind("grad.", 0) == 0 ? 1 : 0;
  EXPECT_EQ(checked, expected);  // the same parameters as HF's named_parameters(), a tied head counted once
  EXPECT_GT(checked, 15);
}

TEST_P(DecoderGoldenCase, SavePretrainedRoundTripsWithHfKeys) {
  const std::string dir = decoder_case_dir(GetParam());
  const berth::ModelTask task = decoder_task_of(GetParam());
  auto loaded = berth::load_task_model(dir, {}, task);
  berth::testing::TempDir temp;
  const std::string out_dir = temp.file(GetParam());
  loaded.model->save_pretrained(out_dir);
  EXPECT_EQ(decoder_tensor_names(out_dir + "/model.safetensors"),
            decoder_tensor_names(dir + "/model.safetensors"));
  auto reloaded = berth::load_task_model(out_dir, {}, task);
  EXPECT_TRUE(reloaded.report.clean());
  EXPECT_EQ(reloaded.model->info().architecture, loaded.model->info().architecture);
  auto before = loaded.model->module().named_parameters();
  auto after = reloaded.model->module().named_parameters();
  ASSERT_EQ(before.size(), after.size());
  for (const auto& item : before) EXPECT_TRUE(torch::equal(item.value(), after[item.key()])) << item.key();
}

INSTANTIATE_TEST_SUITE_P(Goldens, DecoderGoldenCase, ::testing::ValuesIn(kDecoderCases),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(DecoderParity, SequenceClassificationRecordsHfProblemType) {
  for (const std::string& name : kDecoderCases) {
    if (decoder_task_of(name) != berth::ModelTask::SequenceClassification) continue;
    const auto golden = berth::io::SafetensorsFile::open(decoder_case_dir(name) + "/golden.safetensors");
    auto model =
        berth::load_task_model(decoder_case_dir(name), {}, berth::ModelTask::SequenceClassification).model;
    model->forward_batch({{"input_ids", golden.tensor("input_ids")}, {"labels", golden.tensor("labels")}});
    EXPECT_EQ(model->info().problem_type, golden.metadata().at("problem_type")) << name;
  }
}

// A config.json of `model_type` with the tiny test sizes plus `extra` fields.
berth::PretrainedConfig decoder_config(const std::string& model_type, const std::string& extra) {
  return berth::PretrainedConfig::from_json_text(
      R"({"model_type": ")" + model_type +
          R"(", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1,
          "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64)" +
          extra + "}",
      "test/config.json");
}

std::string decoder_build_error(const berth::PretrainedConfig& config, berth::ModelTask task) {
  try {
    berth::build_task_model(config, task);
  } catch (const berth::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(DecoderParity, UnsupportedRopeTypeNamesTheFieldAndTheValue) {
  const std::string message = decoder_build_error(
      decoder_config("llama", R"(, "rope_parameters": {"rope_type": "yarn", "factor": 4.0})"),
      berth::ModelTask::CausalLM);
  EXPECT_NE(message.find("rope_parameters.rope_type"), std::string::npos) << message;
  EXPECT_NE(message.find("\"yarn\""), std::string::npos) << message;
  EXPECT_NE(message.find("llama3"), std::string::npos) << message;  // what berth implements
  const std::string legacy =
      decoder_build_error(decoder_config("llama", R"(, "rope_scaling": {"type": "longrope", "factor": 4.0})"),
                          berth::ModelTask::CausalLM);
  EXPECT_NE(legacy.find("rope_scaling.rope_type"), std::string::npos) << legacy;
  EXPECT_NE(legacy.find("\"longrope\""), std::string::npos) << legacy;
}

TEST(DecoderParity, RefusesWhatBerthDoesNotImplement) {
  const std::string qwen = decoder_build_error(decoder_config("qwen2", R"(, "use_sliding_window": true)"),
                                               berth::ModelTask::CausalLM);
  EXPECT_NE(qwen.find("use_sliding_window"), std::string::npos) << qwen;
  const std::string gqa = decoder_build_error(decoder_config("llama", R"(, "num_key_value_heads": 3)"),
                                              berth::ModelTask::CausalLM);
  EXPECT_NE(gqa.find("num_key_value_heads"), std::string::npos) << gqa;
  const std::string act = decoder_build_error(decoder_config("mistral", R"(, "hidden_act": "quick_gelu")"),
                                              berth::ModelTask::CausalLM);
  EXPECT_NE(act.find("hidden_act"), std::string::npos) << act;
  EXPECT_NE(act.find("quick_gelu"), std::string::npos) << act;
  const std::string cross = decoder_build_error(
      berth::PretrainedConfig::from_json_text(R"({"model_type": "gpt2", "add_cross_attention": true})"),
      berth::ModelTask::CausalLM);
  EXPECT_NE(cross.find("add_cross_attention"), std::string::npos) << cross;
  const std::string head = decoder_build_error(decoder_config("llama", ""), berth::ModelTask::MaskedLM);
  EXPECT_NE(head.find("causal-lm"), std::string::npos) << head;
}

TEST(DecoderParity, LegacyRopeScalingAndTopLevelRopeThetaReadAsRopeParameters) {
  // Checkpoints saved before transformers 5 spell llama_rope_linear's settings as rope_scaling {"type": ...}
  // plus a top-level rope_theta; they must compute the same logits.
  const std::string dir = decoder_case_dir("llama_rope_linear");
  std::ifstream in(dir + "/config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  const nlohmann::json rope = config["rope_parameters"];
  ASSERT_EQ(rope["rope_type"], "linear");
  config.erase("rope_parameters");
  config["rope_theta"] = rope["rope_theta"];
  config["rope_scaling"] = {{"type", "linear"}, {"factor", rope["factor"]}};
  berth::testing::TempDir temp;
  std::filesystem::copy_file(dir + "/model.safetensors", temp.file("model.safetensors"));
  std::ofstream(temp.file("config.json")) << config.dump(2);
  auto model = berth::load_task_model(temp.path().string(), {}, berth::ModelTask::CausalLM).model;
  model->module().eval();
  const auto golden = berth::io::SafetensorsFile::open(dir + "/golden.safetensors");
  torch::NoGradGuard no_grad;
  const berth::TaskOutput out = model->forward_batch(
      {{"input_ids", golden.tensor("input_ids")}, {"attention_mask", golden.tensor("attention_mask")}});
  decoder_expect_close(out.logits, golden.tensor("logits"), "logits");
}

TEST(DecoderParity, BareGpt2CheckpointWithMaskBuffersLoadsAsTheHubsGpt2Does) {
  // The hub's "gpt2" holds GPT2Model's names (no "transformer." prefix) and the old attn.bias mask buffers,
  // which HF drops silently (_keys_to_ignore_on_load_unexpected).
  const std::string dir = decoder_case_dir("gpt2_causal_lm");
  std::map<std::string, at::Tensor> bare;
  for (const auto& [name, tensor] : berth::io::load_safetensors(dir + "/model.safetensors"))
    bare[name.substr(std::string("transformer.").size())] = tensor;
  bare["h.0.attn.bias"] = torch::ones({1, 1, 32, 32}).tril();
  berth::testing::TempDir temp;
  berth::io::save_safetensors(temp.file("model.safetensors"), bare, {{"format", "pt"}});
  std::filesystem::copy_file(dir + "/config.json", temp.file("config.json"));
  auto loaded = berth::load_task_model(temp.path().string(), {}, berth::ModelTask::CausalLM);
  EXPECT_TRUE(loaded.report.clean()) << (loaded.report.warnings.empty() ? "" : loaded.report.warnings[0]);
  loaded.model->module().eval();
  const auto golden = berth::io::SafetensorsFile::open(dir + "/golden.safetensors");
  torch::NoGradGuard no_grad;
  const berth::TaskOutput out = loaded.model->forward_batch(
      {{"input_ids", golden.tensor("input_ids")}, {"attention_mask", golden.tensor("attention_mask")}});
  decoder_expect_close(out.logits, golden.tensor("logits"), "logits");
}

TEST(DecoderParity, Bfloat16RunsCloseToTheFloat32Reference) {
  for (const std::string name : {"gpt2_causal_lm", "llama_causal_lm", "mistral_causal_lm"}) {
    berth::PretrainedOptions options;
    options.dtype = at::kBFloat16;
    auto model = berth::load_task_model(decoder_case_dir(name), options, berth::ModelTask::CausalLM).model;
    model->module().eval();
    const auto golden = berth::io::SafetensorsFile::open(decoder_case_dir(name) + "/golden.safetensors");
    torch::NoGradGuard no_grad;
    const berth::TaskOutput out = model->forward_batch({{"input_ids", golden.tensor("input_ids")},
                                                        {"attention_mask", golden.tensor("attention_mask")},
                                                        {"labels", golden.tensor("labels")}});
    EXPECT_EQ(out.logits.scalar_type(), at::kBFloat16) << name;
    EXPECT_EQ(out.loss.scalar_type(), at::kFloat) << name;  // HF upcasts the logits for the loss
    const double expected = golden.tensor("loss").item<double>();
    EXPECT_NEAR(out.loss.item<double>(), expected, 0.05 * expected) << name;
  }
}

TEST(DecoderParity, HookBlocksCoverEveryParameterAndTiedHeadsUseTheEmbeddingsBlockAgain) {
  for (const std::string& name : kDecoderCases) {
    auto model = berth::load_task_model(decoder_case_dir(name), {}, decoder_task_of(name)).model;
    const std::vector<std::string> blocks = model->hook_blocks();
    for (const auto& item : model->module().named_parameters())
      EXPECT_FALSE(berth::block_of(blocks, item.key()).empty()) << name << ": " << item.key();
  }
  struct Recorder : berth::LayerHooks {
    std::vector<std::string> seen;
    at::Tensor before_forward(const std::string& block, const at::Tensor& x) override {
      seen.push_back(block);
      return x;
    }
    at::Tensor after_forward(const std::string&, const at::Tensor& x) override { return x; }
  };
  // The hooks see every block use in forward order, and the outputs are unchanged. A tied head (GPT-2's
  // lm_head is transformer.wte) runs as a second use of the embeddings' block, last; untied, each block
  // runs once.
  for (const std::string name : {"gpt2_causal_lm", "llama_causal_lm"}) {
    auto model = berth::load_task_model(decoder_case_dir(name), {}, berth::ModelTask::CausalLM).model;
    model->module().eval();  // GPT-2's dropout off, as the golden's forward ran
    auto recorder = std::make_shared<Recorder>();
    model->set_layer_hooks(recorder);
    const auto golden = berth::io::SafetensorsFile::open(decoder_case_dir(name) + "/golden.safetensors");
    const berth::TaskOutput out = model->forward_batch(
        {{"input_ids", golden.tensor("input_ids")}, {"attention_mask", golden.tensor("attention_mask")}});
    EXPECT_EQ(recorder->seen, model->hook_blocks()) << name;
    const std::set<std::string> distinct(recorder->seen.begin(), recorder->seen.end());
    if (name == "gpt2_causal_lm") {
      EXPECT_EQ(recorder->seen.back(), "transformer.wte");
      EXPECT_EQ(distinct.size() + 1, recorder->seen.size());
    } else {
      EXPECT_EQ(distinct.size(), recorder->seen.size());
    }
    decoder_expect_close(out.logits, golden.tensor("logits"), name + " logits with hooks");
  }
}

TEST(DecoderParity, ClassifierWithoutPadTokenRefusesBatchesAsHf) {
  auto model = berth::build_task_model(decoder_config("llama", ""), berth::ModelTask::SequenceClassification);
  model->module().eval();
  const at::Tensor ids = torch::randint(1, 64, {2, 5}, torch::kLong);
  try {
    model->forward_batch({{"input_ids", ids}});
    FAIL() << "no error";
  } catch (const berth::Error& e) {
    EXPECT_NE(std::string(e.what()).find("pad_token_id"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model->forward_batch({{"input_ids", ids.slice(0, 0, 1)}}).logits.sizes(),
            (std::vector<int64_t>{1, 2}));
}

TEST(DecoderParity, PresetsBuildAndLearn) {
  for (const std::string name : {"gpt2-tiny", "llama-tiny"}) {
    torch::manual_seed(0);
    auto model = berth::build_task_model(berth::model_preset(name, 50), berth::ModelTask::CausalLM);
    EXPECT_EQ(model->info().max_positions, 512) << name;
    // One fixed batch, a few AdamW steps: the loss must fall well below its start (about log(50)).
    const at::Tensor ids = torch::randint(0, 50, {2, 16}, torch::kLong);
    torch::optim::AdamW optimizer(model->module().parameters(), torch::optim::AdamWOptions(1e-2));
    model->module().train();
    double first = 0;
    double last = 0;
    for (int step = 0; step < 30; ++step) {
      optimizer.zero_grad();
      at::Tensor loss = model->forward_batch({{"input_ids", ids}, {"labels", ids}}).loss;
      loss.backward();
      optimizer.step();
      (step == 0 ? first : last) = loss.item<double>();
    }
    EXPECT_GT(first, 3.0) << name;
    EXPECT_LT(last, first * 0.5) << name;
  }
}

}  // namespace
