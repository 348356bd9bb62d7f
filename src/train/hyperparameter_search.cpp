// Hyperparameter search: parsing search spaces from JSON, and grid or seeded random trials.
#include "berth/train/hyperparameter_search.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "berth/core/error.h"
#include "berth/data/split_mix64.h"
#include "berth/train/training_arguments.h"

namespace berth::train {
namespace {

using Json = nlohmann::json;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Shortest text that reads back to the same double.
std::string double_text(double value) {
  // Whole numbers as integers (500, not 5e+02), so an int argument reads them.
  if (std::floor(value) == value && std::fabs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string choice_text(const std::string& source, const std::string& name, const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number_float()) return double_text(value.get<double>());
  BERTH_FAIL(source, ": the choices of \"", name, "\" must be strings, numbers or booleans, found ",
             value.dump(), ". Fix: e.g. \"", name, "\": [16, 32]");
}

double bound(const std::string& source, const std::string& name, const Json& spec, const char* key) {
  BERTH_CHECK(spec.contains(key) && spec[key].is_number(), source, ": \"", name, "\" needs a number \"", key,
              "\", found ", spec.contains(key) ? spec[key].dump() : std::string("none"), ". Fix: e.g. \"",
              name, "\": {\"type\": \"uniform\", \"low\": 0.0, \"high\": 0.1}");
  return spec[key].get<double>();
}

// (double) uniform in [0, 1) with 53 random bits.
double unit(data::SplitMix64& rng) { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; }

}  // namespace

SearchSpace SearchSpace::from_json_text(const std::string& text, const std::string& source) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception& e) {
    BERTH_FAIL(source, " is not valid JSON (", e.what(),
               "). Fix: write one JSON object of searched arguments");
  }
  BERTH_CHECK(root.is_object() && !root.empty(), source,
              " must be a non-empty JSON object of training arguments to search, found ", root.dump(),
              ". Fix: e.g. {\"learning_rate\": {\"type\": \"log_uniform\", \"low\": 1e-5, \"high\": 1e-3}}");
  const auto& specs = training_argument_specs();
  SearchSpace space;
  for (const auto& [name, spec] : root.items()) {
    bool known = false;
    for (const ArgumentSpec& arg : specs) known = known || arg.name == name;
    if (!known) {
      const std::string suggestion = closest_training_argument(name);
      BERTH_FAIL(source, ": '", name, "' is not a training argument",
                 suggestion.empty() ? std::string() : "; did you mean '" + suggestion + "'?",
                 ". Fix: search over training arguments (berth train --help lists them)");
    }
    SearchDimension dim;
    dim.name = name;
    const Json* values = nullptr;
    std::string type = "choice";
    if (spec.is_array()) {
      values = &spec;
    } else {
      BERTH_CHECK(spec.is_object() && spec.contains("type") && spec["type"].is_string(), source, ": \"", name,
                  "\" must be a list of choices or an object with a \"type\", found ", spec.dump(),
                  ". Fix: e.g. [16, 32] or {\"type\": \"uniform\", \"low\": 0, \"high\": 0.1}");
      type = lower(spec["type"].get<std::string>());
      if (type == "choice") {
        BERTH_CHECK(spec.contains("values") && spec["values"].is_array(), source, ": \"", name,
                    "\" of type choice needs a list \"values\". Fix: e.g. {\"type\": \"choice\", \"values\": "
                    "[16, 32]}");
        values = &spec["values"];
      }
    }
    if (values) {
      dim.kind = SearchDimension::Choice;
      for (const Json& value : *values) dim.choices.push_back(choice_text(source, name, value));
      BERTH_CHECK(!dim.choices.empty(), source, ": \"", name,
                  "\" has no choices. Fix: list at least one value");
    } else {
      dim.low = bound(source, name, spec, "low");
      dim.high = bound(source, name, spec, "high");
      if (type == "uniform") {
        dim.kind = SearchDimension::Uniform;
      } else if (type == "log_uniform" || type == "loguniform") {
        dim.kind = SearchDimension::LogUniform;
        BERTH_CHECK(dim.low > 0, source, ": \"", name, "\" is log_uniform, so low must be > 0, found ",
                    double_text(dim.low), ". Fix: e.g. \"low\": 1e-5");
      } else if (type == "int" || type == "int_range") {
        dim.kind = SearchDimension::IntRange;
        BERTH_CHECK(std::floor(dim.low) == dim.low && std::floor(dim.high) == dim.high, source, ": \"", name,
                    "\" is int, so low and high must be whole numbers, found ", double_text(dim.low), " and ",
                    double_text(dim.high), ". Fix: e.g. \"low\": 2, \"high\": 4");
      } else {
        BERTH_FAIL(source, ": \"", name, "\" has type '", type,
                   "'; the types are choice, uniform, log_uniform, int. Fix: e.g. \"type\": \"uniform\"");
      }
      BERTH_CHECK(dim.low <= dim.high, source, ": \"", name, "\" needs low <= high, found low ",
                  double_text(dim.low), " and high ", double_text(dim.high), ". Fix: swap them");
    }
    space.dims.push_back(std::move(dim));
  }
  return space;
}

SearchMethod parse_search_method(std::string_view text) {
  const std::string s = lower(text);
  if (s == "grid") return SearchMethod::Grid;
  if (s == "random") return SearchMethod::Random;
  BERTH_FAIL("search method must be grid or random, found '", text, "'. Fix: e.g. --search random");
}

Direction parse_direction(std::string_view text) {
  const std::string s = lower(text);
  if (s == "maximize" || s == "max") return Direction::Maximize;
  if (s == "minimize" || s == "min") return Direction::Minimize;
  BERTH_FAIL("search direction must be maximize or minimize, found '", text,
             "'. Fix: e.g. --direction maximize");
}

std::vector<std::map<std::string, std::string>> sample_trials(const SearchSpace& space, SearchMethod method,
                                                              size_t n_trials, uint64_t seed) {
  BERTH_CHECK(!space.dims.empty(),
              "the search space has no dimensions. Fix: name at least one training argument");
  std::vector<std::map<std::string, std::string>> trials;
  if (method == SearchMethod::Grid) {
    std::vector<std::vector<std::string>> axes;
    size_t total = 1;
    for (const SearchDimension& dim : space.dims) {
      std::vector<std::string> values;
      if (dim.kind == SearchDimension::Choice) {
        values = dim.choices;
      } else if (dim.kind == SearchDimension::IntRange) {
        BERTH_CHECK(dim.high - dim.low < 1e6, "grid search over '", dim.name, "' would try ",
                    double_text(dim.high - dim.low + 1), " values. Fix: narrow it or use random search");
        for (auto v = static_cast<int64_t>(dim.low); v <= static_cast<int64_t>(dim.high); ++v)
          values.push_back(std::to_string(v));
      } else {
        BERTH_FAIL("grid search needs a finite set of values, but '", dim.name, "' is ",
                   dim.kind == SearchDimension::Uniform ? "uniform" : "log_uniform",
                   " (continuous). Fix: list its values as a choice, e.g. \"", dim.name,
                   "\": [1e-5, 3e-5], or use random search");
      }
      total *= values.size();
      axes.push_back(std::move(values));
    }
    const size_t count = n_trials == 0 ? total : std::min(total, n_trials);
    for (size_t index = 0; index < count; ++index) {
      std::map<std::string, std::string> trial;
      size_t rest = index;
      for (size_t d = axes.size(); d-- > 0;) {  // the last dimension varies fastest
        trial[space.dims[d].name] = axes[d][rest % axes[d].size()];
        rest /= axes[d].size();
      }
      trials.push_back(std::move(trial));
    }
    return trials;
  }
  BERTH_CHECK(n_trials >= 1, "random search needs n_trials >= 1, found 0. Fix: e.g. --trials 10");
  data::SplitMix64 rng(seed);
  for (size_t t = 0; t < n_trials; ++t) {
    std::map<std::string, std::string> trial;
    for (const SearchDimension& dim : space.dims) {
      switch (dim.kind) {
        case SearchDimension::Choice:
          trial[dim.name] = dim.choices[rng.below(dim.choices.size())];
          break;
        case SearchDimension::Uniform:
          trial[dim.name] = double_text(dim.low + (dim.high - dim.low) * unit(rng));
          break;
        case SearchDimension::LogUniform:
          trial[dim.name] =
              double_text(std::exp(std::log(dim.low) + (std::log(dim.high) - std::log(dim.low)) * unit(rng)));
          break;
        case SearchDimension::IntRange: {
          const auto span = static_cast<uint64_t>(dim.high - dim.low) + 1;
          trial[dim.name] =
              std::to_string(static_cast<int64_t>(dim.low) + static_cast<int64_t>(rng.below(span)));
          break;
        }
      }
    }
    trials.push_back(std::move(trial));
  }
  return trials;
}

}  // namespace berth::train
