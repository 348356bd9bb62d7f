// check_agreement: every rank's (key, value) list compared, and the first difference named with each rank's
// value, grouped so that 64 agreeing ranks print as one line.
#include <nlohmann/json.hpp>

#include <functional>
#include <map>

#include "berth/core/error.h"
#include "berth/dist/communicator.h"
#include "dist/comm_text.h"

namespace berth::dist {

void check_agreement(Communicator& comm, const std::vector<std::pair<std::string, std::string>>& items,
                     const std::string& what) {
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& [key, value] : items) mine.push_back({key, value});
  const std::vector<std::string> all = comm.all_gather_string(mine.dump(), what);
  std::vector<std::vector<std::pair<std::string, std::string>>> lists;
  for (const std::string& text : all) {
    std::vector<std::pair<std::string, std::string>> list;
    for (const auto& item : nlohmann::json::parse(text)) list.emplace_back(item[0], item[1]);
    lists.push_back(std::move(list));
  }
  const int world = static_cast<int>(lists.size());
  size_t longest = 0;
  for (const auto& l : lists) longest = std::max(longest, l.size());

  // Ranks grouped by what they have at one position, so 64 agreeing ranks print as one line.
  auto describe = [&](const std::function<std::string(int)>& of) {
    std::map<std::string, std::vector<int>> groups;
    std::vector<std::string> order;
    for (int r = 0; r < world; ++r) {
      const std::string v = of(r);
      if (!groups.count(v)) order.push_back(v);
      groups[v].push_back(r);
    }
    std::vector<std::string> parts;
    for (const std::string& v : order)
      parts.push_back((groups[v].size() == 1 ? "rank " : "ranks ") + join_ints(groups[v]) + ": " + v);
    return join(parts, "; ");
  };

  for (size_t i = 0; i < longest; ++i) {
    bool same = true;
    for (int r = 1; r < world && same; ++r) {
      const bool a = i < lists[0].size(), b = i < lists[r].size();
      same = a == b && (!a || lists[0][i] == lists[r][i]);
    }
    if (same) continue;
    bool keys_agree = true;
    for (int r = 0; r < world; ++r)
      keys_agree = keys_agree && i < lists[r].size() && lists[r][i].first == lists[0][i].first;
    if (keys_agree) {
      BERTH_FAIL(what, ": the ranks disagree on '", lists[0][i].first,
                 "': ", describe([&](int r) { return lists[r][i].second; }),
                 ". Fix: every rank must run with the same model, data and arguments.");
    }
    BERTH_FAIL(what, ": the ranks' lists differ at item ", i + 1, ": ", describe([&](int r) {
                 if (i >= lists[r].size())
                   return "(no item " + std::to_string(i + 1) + ": " + std::to_string(lists[r].size()) +
                          " items)";
                 return "'" + lists[r][i].first + "' = " + lists[r][i].second;
               }),
               ". Fix: every rank must run with the same model, data and arguments.");
  }
}

}  // namespace berth::dist
