// The plain training loop of the seed document (its step 4), in C++ with berth's pieces and no Trainer:
// pick the device, put the model there, AdamW at lr 2e-5, batches of 8 shuffled, each batch to the device,
// forward, backward, step, 3 epochs.
//
//   plain_loop --model DIR --train FILE.jsonl [--epochs 3] [--max-length 128] [--device auto]
//
// DIR is an HF model directory with its tokenizer (config.json, model.safetensors, vocab.txt); FILE holds
// {"text": ..., "label": ...} lines.
#include <torch/torch.h>

#include <iostream>
#include <string>

#include "berth/core/error.h"
#include "berth/core/process_defaults.h"
#include "berth/data/data_loader.h"
#include "berth/data/encode_text_dataset.h"
#include "berth/data/text_dataset.h"
#include "berth/device/device.h"
#include "berth/model/pretrained.h"
#include "berth/optim/adamw.h"
#include "berth/optim/param_groups.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/place.h"
#include "berth/tokenizer/tokenizer_files.h"

BERTH_PROCESS_DEFAULTS();

namespace {

struct Flags {
  std::string model, train, device = "auto";
  int epochs = 3;
  size_t max_length = 128;
};

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    BERTH_CHECK(i + 1 < argc, "plain_loop: ", name, " needs a value");
    const std::string value = argv[++i];
    if (name == "--model")
      flags.model = value;
    else if (name == "--train")
      flags.train = value;
    else if (name == "--device")
      flags.device = value;
    else if (name == "--epochs")
      flags.epochs = std::stoi(value);
    else if (name == "--max-length")
      flags.max_length = std::stoul(value);
    else
      BERTH_FAIL("plain_loop: unknown flag ", name,
                 ". Usage: plain_loop --model DIR --train FILE.jsonl "
                 "[--epochs 3] [--max-length 128] [--device auto]");
  }
  BERTH_CHECK(!flags.model.empty() && !flags.train.empty(),
              "plain_loop: --model DIR and --train FILE are required");
  return flags;
}

}  // namespace

int main(int argc, char** argv) try {
  const Flags flags = parse_flags(argc, argv);

  // 1. The device: cuda when there is one, else cpu ("auto"), checked against what this machine has.
  const c10::Device device = berth::resolve_device(berth::parse_device(flags.device), berth::query_cuda());

  // 2. Data: text and labels, tokenised once.
  const auto tokenizer = berth::tokenizer::load_tokenizer(flags.model);
  const auto texts = berth::data::TextDataset::load(flags.train);
  berth::data::EncodeTextOptions encode;
  encode.max_length = flags.max_length;
  const auto dataset = berth::data::encode_text_dataset(texts, tokenizer, encode);

  // 3. The model, with a classifier for these labels, moved to the device (every parameter and buffer).
  torch::manual_seed(42);
  berth::PretrainedOptions pretrained;
  pretrained.labels = texts.label_map().labels();
  pretrained.ignore_mismatched_sizes = true;
  auto model = berth::from_pretrained<berth::BertForSequenceClassification>(flags.model, pretrained).model;
  std::cout << berth::place(*model, device).summary() << "\n";

  // 4. AdamW at lr 2e-5 (HF's grouping: no weight decay on biases and LayerNorm weights).
  berth::optim::AdamWOptions adamw;
  adamw.lr = 2e-5;
  berth::optim::AdamW optimizer(berth::optim::hf_param_groups(*model, 0.01), adamw);

  // 5. Batches of 8, shuffled every epoch; each batch goes to the model's device before the forward.
  berth::data::DataLoaderOptions loader_options;
  loader_options.batch_size = 8;
  loader_options.shuffle = true;
  loader_options.pad_token_id = tokenizer.pad_token_id();
  berth::data::DataLoader loader(dataset, loader_options);

  model->train();
  for (int epoch = 0; epoch < flags.epochs; ++epoch) {
    loader.set_epoch(static_cast<uint64_t>(epoch));
    double loss_sum = 0;
    int64_t batches = 0;
    for (const berth::Batch& cpu_batch : loader) {
      const berth::Batch batch = berth::place_batch(cpu_batch, device);
      auto output = model->forward(batch.at("input_ids"), batch.at("attention_mask"),
                                   batch.at("token_type_ids"), batch.at("labels"));
      output.loss.backward();
      optimizer.step();
      optimizer.zero_grad_to_none();
      loss_sum += output.loss.item<double>();
      ++batches;
    }
    std::cout << "epoch " << epoch + 1 << "/" << flags.epochs << ": mean loss " << loss_sum / batches
              << " over " << batches << " batches on " << berth::device_name(device) << "\n";
  }
  return 0;
} catch (const berth::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 2;
}
