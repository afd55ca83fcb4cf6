#include "exporter/fabric_set.h"

#include <algorithm>
#include <functional>
#include <map>
#include <ostream>
#include <sstream>
#include <string_view>

#include "exporter/gzip.h"

namespace ibfabric::exporter {
namespace {

// The family a "# HELP name ..." or "# TYPE name ..." line opens; empty
// for any other line.
std::string_view FamilyOf(std::string_view line) {
  if (line.rfind("# HELP ", 0) != 0 && line.rfind("# TYPE ", 0) != 0) return {};
  line.remove_prefix(7);
  return line.substr(0, std::min(line.find(' '), line.find('\n')));
}

// One part's lines ('\n' kept), in order: Next is false after the last.
class PartLines {
 public:
  virtual ~PartLines() = default;
  virtual bool Next(std::string* line) = 0;
};

class TextLines final : public PartLines {
 public:
  explicit TextLines(std::string_view text) : text_(text) {}
  bool Next(std::string* line) override {
    if (text_.empty()) return false;
    const std::size_t end = text_.find('\n');
    const std::size_t n = end == std::string_view::npos ? text_.size() : end + 1;
    line->assign(text_.substr(0, n));
    text_.remove_prefix(n);
    if (line->back() != '\n') line->push_back('\n');  // a last line without one
    return true;
  }

 private:
  std::string_view text_;
};

// A gzip exposition inflated a slice at a time: never held whole.
class GzipLines final : public PartLines {
 public:
  explicit GzipLines(const std::string& gz) : reader_(gz) {}
  bool Next(std::string* line) override {
    line->clear();
    while (true) {
      const std::size_t end = buffer_.find('\n', at_);
      if (end != std::string::npos) {
        line->append(buffer_, at_, end + 1 - at_);
        at_ = end + 1;
        return true;
      }
      line->append(buffer_, at_, std::string::npos);
      at_ = 0;
      if (!reader_.Next(&buffer_, 64 * 1024)) {
        buffer_.clear();
        if (reader_.error() || line->empty()) return false;  // a cut-short member: its tail is not a line
        line->push_back('\n');
        return true;
      }
    }
  }

 private:
  GunzipReader reader_;
  std::string buffer_;
  std::size_t at_ = 0;
};

using Opener = std::function<std::unique_ptr<PartLines>()>;

// The order of the families of all parts: each part lists a subsequence
// of one order (the collectors' registry), so a part's next family goes
// out once no other part still has it further on. *consistent is false
// when the parts do not (a family twice in one part, lines before a
// part's first family, two parts in opposite orders): Merge then takes
// the slow way.
std::vector<std::string> FamilyOrder(const std::vector<Opener>& parts, bool* consistent) {
  *consistent = true;
  std::vector<std::vector<std::string>> names(parts.size());
  std::vector<std::map<std::string, std::size_t, std::less<>>> at(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto lines = parts[i]();
    std::string line;
    while (lines->Next(&line)) {
      const std::string_view name = FamilyOf(line);
      if (name.empty()) {
        if (names[i].empty()) *consistent = false;  // a line of no family
        continue;
      }
      if (!names[i].empty() && names[i].back() == name) continue;
      if (!at[i].emplace(std::string(name), names[i].size()).second) *consistent = false;
      names[i].emplace_back(name);
    }
  }
  std::vector<std::string> order;
  std::vector<std::size_t> next(parts.size(), 0);
  std::map<std::string, bool, std::less<>> done;
  while (true) {
    bool progressed = false, left = false;
    for (std::size_t i = 0; i < parts.size() && !progressed; ++i) {
      if (next[i] >= names[i].size()) continue;
      left = true;
      const std::string& head = names[i][next[i]];
      bool ready = true;
      for (std::size_t j = 0; j < parts.size() && ready; ++j) {
        const auto it = at[j].find(head);
        ready = it == at[j].end() || it->second <= next[j];
      }
      if (!ready) continue;
      if (!done[head]) order.push_back(head);
      done[head] = true;
      for (std::size_t j = 0; j < parts.size(); ++j) {
        if (next[j] < names[j].size() && names[j][next[j]] == head) ++next[j];
      }
      progressed = true;
    }
    if (!left) break;
    if (!progressed) {  // the parts disagree on the order: take part order
      *consistent = false;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if (next[i] < names[i].size()) {
          if (!done[names[i][next[i]]]) order.push_back(names[i][next[i]]);
          done[names[i][next[i]]] = true;
          ++next[i];
          break;
        }
      }
    }
  }
  return order;
}

// The slow way, for parts that disagree: every part's text held at once,
// each family once in the order they first appear, its lines of every
// part (so nothing is lost whatever the order).
void MergeBuffered(const std::vector<Opener>& parts, std::ostream& out) {
  struct Family {
    std::string head;  // its HELP and TYPE lines, from the first part that has it
    std::string series;
  };
  std::vector<std::string> order;
  std::map<std::string, Family, std::less<>> families;
  std::string loose;  // lines before any family
  for (const Opener& open : parts) {
    auto lines = open();
    Family* current = nullptr;
    bool in_head = false;
    std::string line;
    while (lines->Next(&line)) {
      const std::string_view name = FamilyOf(line);
      if (name.empty()) {
        (current != nullptr ? current->series : loose) += line;
        continue;
      }
      auto it = families.find(name);
      if (it == families.end()) {
        it = families.emplace(std::string(name), Family{}).first;
        order.push_back(it->first);
      }
      if (current != &it->second) in_head = it->second.head.empty();
      current = &it->second;
      if (in_head) current->head += line;
    }
  }
  out << loose;
  for (const std::string& name : order) out << families.at(name).head << families.at(name).series;
}

// Writes each family once: its HELP and TYPE lines from the first part
// that has it, then the series of every part that has it, in part order.
// Streams (a slice of each part at a time) where the parts agree on the
// families' order, as the exporter's always do.
void Merge(const std::vector<Opener>& parts, std::ostream& out) {
  bool consistent = true;
  const std::vector<std::string> order = FamilyOrder(parts, &consistent);
  if (!consistent) return MergeBuffered(parts, out);
  struct Cursor {
    std::unique_ptr<PartLines> lines;
    std::string line;  // the next line not written yet
    bool more = false;
  };
  std::vector<Cursor> cursors(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    cursors[i].lines = parts[i]();
    cursors[i].more = cursors[i].lines->Next(&cursors[i].line);
  }
  for (const std::string& name : order) {
    bool head_written = false;
    for (Cursor& c : cursors) {
      if (!c.more || FamilyOf(c.line) != name) continue;
      // Its head lines, then its series up to the next family's head.
      while (c.more && FamilyOf(c.line) == name) {
        if (!head_written) out << c.line;
        c.more = c.lines->Next(&c.line);
      }
      head_written = true;
      while (c.more && FamilyOf(c.line).empty()) {
        out << c.line;
        c.more = c.lines->Next(&c.line);
      }
    }
  }
}

}  // namespace

std::string MergeExpositions(const std::vector<std::string>& parts) {
  std::vector<Opener> openers;
  for (const std::string& p : parts) openers.push_back([&p] { return std::make_unique<TextLines>(p); });
  std::ostringstream out;
  Merge(openers, out);
  return std::move(out).str();
}

void FabricSet::Combine() {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const collectors::Snapshot>> members;
  for (const FabricView& v : views_) {
    if (auto s = v.holder->Get()) members.push_back(std::move(s));
  }
  if (members.empty()) return;
  auto combined = std::make_shared<collectors::Snapshot>();
  combined->fabric = std::make_shared<const topology::Fabric>();
  combined->sweeps = members.front()->sweeps;
  std::vector<Opener> openers;
  std::size_t gz_bytes = 0;
  for (const auto& m : members) {
    openers.push_back([&m] { return std::make_unique<GzipLines>(m->exposition_gz); });
    combined->sweeps = std::min(combined->sweeps, m->sweeps);
    combined->published = std::max(combined->published, m->published);
    gz_bytes += m->exposition_gz.size();
  }
  if (members.size() < views_.size()) combined->sweeps = 0;  // a fabric not read yet: not ready
  // Inflated a slice at a time and deflated as it goes: no part's text,
  // nor the merged one, is ever held whole (exporter/gzip.h).
  GzipWriter gz(Z_BEST_SPEED, gz_bytes + gz_bytes / 16);
  std::ostream out(&gz);
  Merge(openers, out);
  out.flush();
  combined->exposition_bytes = gz.plain_bytes();
  combined->exposition_gz = gz.Finish();
  combined_.Publish(std::move(combined));
}

}  // namespace ibfabric::exporter
