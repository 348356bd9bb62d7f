// Shared by the tests that train through `berth train`: a small spam/ham split and weight comparisons.
#pragma once

#include <ATen/ATen.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "berth/io/safetensors.h"

namespace berth::testing {

// Ham and spam sentences of different lengths (so that batches pad differently per rank), from words the
// tiny golden model's vocabulary knows.
inline void write_spam_ham_split(const std::string& path, int rows, int offset) {
  const std::vector<std::string> spam = {"free prize click here now", "win cash offer",
                                         "cheap loans click now click now free"};
  const std::vector<std::string> ham = {"meeting tomorrow review report", "the build is green",
                                        "please review the attached report before the meeting tomorrow"};
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) {
    const bool is_spam = (i + offset) % 2 == 0;
    const auto& pool = is_spam ? spam : ham;
    out << nlohmann::json{{"text", pool[(i / 2 + offset) % pool.size()]}, {"label", is_spam ? "spam" : "ham"}}
               .dump()
        << "\n";
  }
}

inline std::map<std::string, at::Tensor> saved_weights(const std::string& dir) {
  return io::load_safetensors(dir + "/model.safetensors");
}

// The largest absolute difference between two saved models' tensors, and where it is; "" when their names
// differ (then the difference is infinite).
inline std::pair<double, std::string> largest_weight_difference(const std::string& a, const std::string& b) {
  const auto left = saved_weights(a);
  const auto right = saved_weights(b);
  if (left.size() != right.size()) return {1e30, "(different tensor counts)"};
  std::pair<double, std::string> worst{0.0, ""};
  for (const auto& [name, tensor] : left) {
    if (!right.count(name)) return {1e30, name + " (missing)"};
    const double diff = (tensor - right.at(name)).abs().max().item<double>();
    if (diff > worst.first) worst = {diff, name};
  }
  return worst;
}

}  // namespace berth::testing
