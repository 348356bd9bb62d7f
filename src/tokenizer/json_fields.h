// JsonFields: reads one object of tokenizer.json, naming the path of any field that is missing or of the
// wrong type (private to the library).
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "berth/core/error.h"

namespace berth::tokenizer {

class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string path) : object_(object), path_(std::move(path)) {
    BERTH_CHECK(object_.is_object(), path_, ": expected a JSON object, found ", object_.type_name(),
                ". Fix: repair the tokenizer.json (HF tokenizers writes it with Tokenizer.save)");
  }

  const std::string& path() const { return path_; }
  std::string at(const std::string& key) const { return path_ + "." + key; }
  bool has(const std::string& key) const { return object_.contains(key) && !object_.at(key).is_null(); }
  const nlohmann::json& raw(const std::string& key) const {
    BERTH_CHECK(object_.contains(key), at(key),
                " is missing. Fix: add it (see HF tokenizers' tokenizer.json)");
    return object_.at(key);
  }

  template <typename T>
  T required(const std::string& key) const {
    return convert<T>(raw(key), key);
  }
  template <typename T>
  T get(const std::string& key, T fallback) const {
    return has(key) ? convert<T>(object_.at(key), key) : fallback;
  }

  // The "type" field, checked against the types this component knows.
  std::string type(const char* component, std::initializer_list<const char*> known) const {
    const std::string found = required<std::string>("type");
    for (const char* name : known)
      if (found == name) return found;
    std::string list;
    for (const char* name : known) list += (list.empty() ? "" : ", ") + std::string(name);
    BERTH_FAIL(at("type"), ": \"", found, "\" is not a ", component, " berth knows; it knows ", list,
               ". Fix: use a tokenizer whose pipeline has only these, or convert it");
  }

 private:
  template <typename T>
  T convert(const nlohmann::json& value, const std::string& key) const {
    try {
      return value.get<T>();
    } catch (const nlohmann::json::exception&) {
      BERTH_FAIL(at(key), ": unexpected ", value.type_name(), " ", value.dump().substr(0, 80),
                 ". Fix: repair the tokenizer.json (HF tokenizers writes it with Tokenizer.save)");
    }
  }

  const nlohmann::json& object_;
  std::string path_;
};

// A Sequence's steps: each element of the list at `key` parsed by parse(element, "<path>.<key>[i]"), the
// null ones (a step that does nothing) dropped.
template <typename T, typename Parse>
std::vector<std::unique_ptr<T>> parse_steps(const JsonFields& fields, const std::string& key, Parse parse) {
  const nlohmann::json& list = fields.raw(key);
  BERTH_CHECK(list.is_array(), fields.at(key), ": expected a list, found ", list.type_name());
  std::vector<std::unique_ptr<T>> steps;
  for (size_t i = 0; i < list.size(); ++i)
    if (auto step = parse(list[i], fields.at(key) + "[" + std::to_string(i) + "]"))
      steps.push_back(std::move(step));
  return steps;
}

}  // namespace berth::tokenizer
