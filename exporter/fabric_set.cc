#include "exporter/fabric_set.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <string_view>

#include "exporter/gzip.h"

namespace ibfabric::exporter {
namespace {

// The family a "# HELP name ..." or "# TYPE name ..." line opens; empty
// for any other line.
std::string_view FamilyOf(std::string_view line) {
  if (line.rfind("# HELP ", 0) != 0 && line.rfind("# TYPE ", 0) != 0) return {};
  line.remove_prefix(7);
  return line.substr(0, line.find(' '));
}

}  // namespace

std::string MergeExpositions(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts.front();
  struct Family {
    std::string head;  // its HELP and TYPE lines, from the first part that has it
    std::string series;
  };
  std::vector<std::string> order;
  std::map<std::string, Family, std::less<>> families;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::string_view text = parts[i];
    Family* current = nullptr;
    bool in_head = false;
    while (!text.empty()) {
      const std::size_t end = text.find('\n');
      const std::string_view line = text.substr(0, end == std::string_view::npos ? text.size() : end + 1);
      text.remove_prefix(line.size());
      const std::string_view name = FamilyOf(line);
      if (!name.empty()) {
        auto it = families.find(name);
        if (it == families.end()) {
          it = families.emplace(std::string(name), Family{}).first;
          order.push_back(it->first);
        }
        // A family's head comes from the first part that has it.
        if (current != &it->second) in_head = it->second.head.empty();
        current = &it->second;
        if (in_head) current->head.append(line);
        continue;
      }
      if (current != nullptr) current->series.append(line);
    }
  }
  std::string out;
  for (const std::string& name : order) {
    const Family& f = families.at(name);
    out += f.head;
    out += f.series;
  }
  return out;
}

void FabricSet::Combine() {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const collectors::Snapshot>> members;
  for (const FabricView& v : views_) {
    if (auto s = v.holder->Get()) members.push_back(std::move(s));
  }
  if (members.empty()) return;
  std::vector<std::string> texts;
  auto combined = std::make_shared<collectors::Snapshot>();
  combined->fabric = std::make_shared<const topology::Fabric>();
  combined->sweeps = members.front()->sweeps;
  for (const auto& m : members) {
    texts.push_back(Gunzip(m->exposition_gz));
    combined->sweeps = std::min(combined->sweeps, m->sweeps);
    combined->published = std::max(combined->published, m->published);
  }
  if (members.size() < views_.size()) combined->sweeps = 0;  // a fabric not read yet: not ready
  const std::string text = MergeExpositions(texts);
  GzipWriter gz(Z_BEST_SPEED, text.size() / 8);
  std::ostream out(&gz);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  combined->exposition_bytes = gz.plain_bytes();
  combined->exposition_gz = gz.Finish();
  combined_.Publish(std::move(combined));
}

}  // namespace ibfabric::exporter
