// A model's shape as an ordered (key, value) list, so check_agreement can name the first parameter or buffer
// whose shape or dtype differs between ranks.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}

namespace berth::dist {

// First ("parameter count", "N"), then one item per parameter and per buffer in registration order:
// ("parameter encoder.layer.0.attention.self.query.weight", "shape [128, 128] dtype float32"),
// ("buffer embeddings.position_ids", "shape [1, 512] dtype int64").
std::vector<std::pair<std::string, std::string>> model_signature(const torch::nn::Module& module);

}  // namespace berth::dist
