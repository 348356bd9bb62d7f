// The table of TrainingArguments' fields: each one's name, type, help and the values it accepts; and what
// reads, writes and checks one field by its type (private to the library).
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "berth/train/training_arguments.h"

namespace berth::train::detail {

using Args = TrainingArguments;

// One pointer-to-member per field type; the variant index is the field's type.
using FieldPtr = std::variant<std::string Args::*, bool Args::*, int64_t Args::*, double Args::*,
                              std::optional<int64_t> Args::*, std::optional<double> Args::*,
                              std::optional<std::string> Args::*, std::optional<bool> Args::*,
                              std::vector<std::string> Args::*>;

// The values a field accepts (its Rule, below), which validate() checks field by field; an unset optional
// always passes.
//
// A number between two bounds, open or closed (an infinite bound is not shown in the message), or `also`.
// The message: "training argument NAME must be >= 0 (note), found -1. Fix: e.g. EXAMPLE".
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  bool lo_open = false;
  double hi = std::numeric_limits<double>::infinity();
  bool hi_open = false;
  std::optional<double> also = {};  // accepted besides the range, meaning `also_means` (max_steps' -1)
  const char* also_means = "";
  const char* note = "";     // after the range: "(0: no clipping)", "when set"
  const char* example = "";  // the Fix's example setting: "max_grad_norm 1.0"
};

// One of a few words, compared lowercased when `any_case`; the Fix shows the first.
struct OneOf {
  std::span<const char* const> words;
  bool any_case = false;
};

// HF's logging/eval/save steps: a step count (whole above 1), or below 1 a ratio of the total steps.
struct StepsValue {};

// A string that must not be empty (nor only spaces, when `blank_is_empty`).
// The message: "training argument NAME must MUST, found an empty string. Fix: e.g. EXAMPLE".
struct NotEmpty {
  const char* must = "";  // "name a metric"
  bool blank_is_empty = false;
  const char* example = "";
};

// Each string value (a list's items) passes `check`, which throws berth::Error naming the field.
struct Checked {
  void (*check)(std::string_view name, const std::string& value);
};

using Rule = std::variant<std::monostate, Range, OneOf, StepsValue, NotEmpty, Checked>;

// One entry of the table: HF's name, the member, the help line and the rule.
struct Field {
  const char* name;
  FieldPtr ptr;
  const char* help;
  Rule rule = {};
};

// Every field, in declaration order.
std::span<const Field> training_argument_fields();

// The field of that (canonical) name; nullptr when there is none.
const Field* find_training_argument_field(std::string_view name);

// "string", "bool", "int", "float", "list", with "?" when it may be unset.
const char* field_type_name(const FieldPtr& ptr);

// The value as set_field_text reads it back: "" when unset, lists comma-separated.
std::string field_text(const TrainingArguments& args, const FieldPtr& ptr);

// The value as JSON: unset optionals as null.
nlohmann::json field_json(const TrainingArguments& args, const FieldPtr& ptr);

// One field from its command-line text (see set_training_argument); malformed text throws berth::Error.
void set_field_text(TrainingArguments& args, const Field& field, std::string_view text);

// One field from its JSON value (see merge_training_arguments_json); a value of another type throws
// berth::Error naming `source`.
void set_field_json(TrainingArguments& args, const Field& field, const nlohmann::json& value,
                    const std::string& source);

// Throws berth::Error naming the field, its value, the rule and the fix when the value breaks the field's
// rule; an unset optional never does.
void check_field_rule(const TrainingArguments& args, const Field& field);

// "a, b,,c " -> {"a", "b", "c"}: comma-separated items, trimmed, empty ones dropped.
std::vector<std::string> parse_argument_list(std::string_view text);

// A command line's number for argument `name`: finite, in full, else berth::Error naming it.
double parse_double(std::string_view name, std::string_view text);

// Throws berth::Error: "SOURCE: \"NAME\" must be EXPECTED, found FOUND. Fix: ...".
[[noreturn]] void bad_json(const std::string& source, std::string_view name, const char* expected,
                           const nlohmann::json& found);

// Whether `name` (any case) is one of HF's integrations that berth lacks (wandb, tensorboard ...).
bool is_foreign_integration(const std::string& name);

// Throws berth::Error for a report_to item that names one of them.
void check_not_foreign(const std::string& item);

}  // namespace berth::train::detail
