// The cabling plan's parsers (ibnetdiscover, JSON, YAML) and its loader;
// the diff against a fabric is plan_diff.cc.
#include "topology/plan.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "config/config_file.h"
#include "config/text.h"
#include "topology/ibnetdiscover.h"
#include "topology/link_rate.h"

namespace ibfabric::topology {
namespace {

class Builder {
 public:
  explicit Builder(CablingPlan* plan) : plan_(plan) {}
  std::size_t Node(const std::string& name, std::optional<std::uint64_t> guid, const std::string& host = "",
                   const std::string& hca = "") {
    const std::string key = guid ? FormatGuid(*guid) : host.empty() ? name : "\x1f" + host + "\x1f" + hca;
    auto it = index_.find(key);
    if (it != index_.end()) {
      if (!name.empty() && plan_->nodes[it->second].name.empty()) plan_->nodes[it->second].name = name;
      return it->second;
    }
    plan_->nodes.push_back({name, guid, host, hca});
    return index_[key] = plan_->nodes.size() - 1;
  }
  // Records a cable; the same cable seen from its other end must agree.
  bool Link(PlanEnd a, PlanEnd b, const std::string& rate, int line, std::string* error) {
    for (const auto& [me, other] : {std::pair{a, b}, std::pair{b, a}}) {
      auto it = seen_.find({me.node, me.port});
      if (it == seen_.end()) continue;
      const PlanLink& prev = plan_->links[it->second];
      const PlanEnd& prev_other = (prev.a.node == me.node && prev.a.port == me.port) ? prev.b : prev.a;
      if (prev_other.node != other.node || prev_other.port != other.port) {
        *error = "line " + std::to_string(line) + ": " + Name(me) + " is cabled to " + Name(prev_other) + " on line " +
                 std::to_string(prev.line) + " but to " + Name(other) + " here";
        return false;
      }
      return true;  // the other end of a cable already recorded
    }
    plan_->links.push_back({a, b, rate, line});
    seen_[{a.node, a.port}] = seen_[{b.node, b.port}] = plan_->links.size() - 1;
    return true;
  }
  std::string Name(const PlanEnd& e) const {
    const PlanNode& n = plan_->nodes[e.node];
    return (n.name.empty() && n.guid ? FormatGuid(*n.guid) : n.name) + "[" + std::to_string(e.port) + "]";
  }

 private:
  CablingPlan* plan_;
  std::map<std::string, std::size_t> index_;
  std::map<std::pair<std::size_t, int>, std::size_t> seen_;
};

// Offsets at which the elements of the top-level "links" array start, for
// line numbers in messages about a JSON plan's links.
std::vector<std::size_t> LinkOffsets(std::string_view text) {
  std::vector<std::size_t> out;
  int depth = 0;
  bool in_string = false, escaped = false, in_links = false;
  std::string last_key, current;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        last_key = current;
      } else {
        current.push_back(c);
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      current.clear();
    } else if (c == '{' || c == '[') {
      if (in_links && depth == 2 && c == '{') out.push_back(i);
      if (depth == 1 && c == '[' && last_key == "links") in_links = true;
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
      if (depth == 1) in_links = false;
    }
  }
  return out;
}

int LineAt(std::string_view text, std::size_t offset) {
  int line = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

bool ParseIbnetdiscoverPlan(std::string_view text, CablingPlan* plan, std::string* error) {
  NetFile file;
  if (!ParseNetFile(text, &file, error)) return false;
  if (!file.skipped.empty()) {  // a plan is written or kept on purpose: nothing in it is noise
    *error = file.skipped.front();
    return false;
  }
  CablingPlan out;
  Builder b(&out);
  std::map<std::string, std::size_t> by_id;  // a file's ids name nodes defined anywhere in it
  std::vector<std::size_t> index;
  for (const NetNode& n : file.nodes) {
    const auto guid = GuidOfNetId(n.id);  // keyed by GUID; else by name (ibsim's net files)
    index.push_back(b.Node(guid ? (n.description.empty() ? n.id : n.description) : n.id, guid));
    by_id[n.id] = index.back();
  }
  for (std::size_t i = 0; i < file.nodes.size(); ++i) {
    for (const NetPort& p : file.nodes[i].links) {
      auto it = by_id.find(p.peer_id);
      const auto guid = GuidOfNetId(p.peer_id);
      const std::size_t peer = it != by_id.end() ? it->second : b.Node(guid ? "" : p.peer_id, guid);
      if (!b.Link({index[i], p.port}, {peer, p.peer_port}, p.rate, p.line, error)) return false;
    }
  }
  *plan = std::move(out);
  return true;
}

namespace {

// The plan's structure, shared by the JSON and YAML front ends: `line_of`
// gives the line where links[i] starts, `top_line` the line for errors about
// the document as a whole.
bool PlanFromTree(const nlohmann::json& j, const std::function<int(std::size_t)>& line_of, int top_line,
                  CablingPlan* plan, std::string* error) {
  const std::string top = "line " + std::to_string(top_line) + ": ";
  if (!j.is_object() || !j.contains("links") || !j["links"].is_array()) {
    *error = top + "a plan is an object with a \"links\" array";
    return false;
  }
  CablingPlan out;
  Builder b(&out);
  for (std::size_t i = 0; i < j["links"].size(); ++i) {
    const auto& l = j["links"][i];
    const int line = line_of(i);
    auto fail = [&](const std::string& why) {
      *error = "line " + std::to_string(line) + ": links[" + std::to_string(i) + "]: " + why;
      return false;
    };
    if (!l.is_object()) return fail("not an object");
    PlanEnd ends[2];
    int k = 0;
    for (const char* side : {"a", "b"}) {
      if (!l.contains(side) || !l[side].is_object()) return fail(std::string("missing \"") + side + "\"");
      const auto& e = l[side];
      const bool by_host = e.contains("host") || e.contains("hca");
      if (by_host) {
        if (e.contains("node")) return fail(std::string(side) + " names a node and a host: one of the two");
        for (const char* key : {"host", "hca"}) {
          if (!e.contains(key) || !e[key].is_string() || e[key].get<std::string>().empty()) {
            return fail(std::string(side) + "." + key + " must be a non-empty string (an HCA by host and device)");
          }
        }
      } else if (!e.contains("node") || !e["node"].is_string() || e["node"].get<std::string>().empty()) {
        return fail(std::string(side) + ".node must be a non-empty string");
      }
      if (!e.contains("port") || !e["port"].is_number_integer() || e["port"].get<long>() < 0 ||
          e["port"].get<long>() > 254) {
        return fail(std::string(side) + ".port must be an integer 0..254");
      }
      std::optional<std::uint64_t> guid;
      if (e.contains("guid")) {
        const std::string g = e["guid"].is_string() ? e["guid"].get<std::string>() : "";
        char* end = nullptr;
        errno = 0;
        const unsigned long long v = std::strtoull(g.c_str(), &end, 0);
        if (g.empty() || *end != '\0' || errno == ERANGE) return fail(std::string(side) + ".guid is not a GUID");
        guid = v;
      }
      const std::size_t node = by_host ? b.Node(e["host"].get<std::string>() + " " + e["hca"].get<std::string>(), guid,
                                                e["host"].get<std::string>(), e["hca"].get<std::string>())
                                       : b.Node(e["node"].get<std::string>(), guid);
      ends[k++] = {node, static_cast<int>(e["port"].get<long>())};
    }
    std::string rate;
    if (l.contains("rate")) {
      static const std::regex kRate("^\\d+x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)$");
      rate = l["rate"].is_string() ? l["rate"].get<std::string>() : "";
      if (!std::regex_match(rate, kRate)) return fail("rate must read like 4xHDR");
    }
    std::string why;
    if (!b.Link(ends[0], ends[1], rate, line, &why)) return fail(why.substr(why.find(": ") + 2));
  }
  if (j.contains("tiers")) {
    if (!j["tiers"].is_object()) {
      *error = top + "\"tiers\" must map node names to tier names";
      return false;
    }
    for (const auto& [name, tier] : j["tiers"].items()) {
      if (!tier.is_string()) {
        *error = top + "tiers." + name + " must be a string such as \"leaf\"";
        return false;
      }
      out.tiers[name] = tier.get<std::string>();
    }
  }
  *plan = std::move(out);
  return true;
}

// A YAML document as the JSON value it stands for, so both front ends share
// PlanFromTree. Plain scalars that read as integers become numbers (ports);
// quoted ones stay strings. Bounded in depth and size against hostile input
// (aliases can make a small file expand enormously).
class YamlToJson {
 public:
  bool Convert(const YAML::Node& n, nlohmann::json* out, std::string* error, int depth = 0) {
    if (depth > 32 || ++count_ > 1'000'000) {
      *error = "line " + std::to_string(n.Mark().line + 1) + ": the document nests or expands too far";
      return false;
    }
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null: *out = nullptr; return true;
      case YAML::NodeType::Scalar: *out = Scalar(n); return true;
      case YAML::NodeType::Sequence:
        *out = nlohmann::json::array();
        for (const auto& item : n) {
          nlohmann::json v;
          if (!Convert(item, &v, error, depth + 1)) return false;
          out->push_back(std::move(v));
        }
        return true;
      case YAML::NodeType::Map:
        *out = nlohmann::json::object();
        for (const auto& kv : n) {
          if (!kv.first.IsScalar()) {
            *error = "line " + std::to_string(kv.first.Mark().line + 1) + ": a key must be a plain value";
            return false;
          }
          nlohmann::json v;
          if (!Convert(kv.second, &v, error, depth + 1)) return false;
          (*out)[kv.first.Scalar()] = std::move(v);
        }
        return true;
    }
    return true;
  }

 private:
  static nlohmann::json Scalar(const YAML::Node& n) {
    const std::string& v = n.Scalar();
    if (n.Tag() == "!") return v;  // quoted: always a string
    static const std::regex kInt("^[-+]?[0-9]{1,18}$");
    if (std::regex_match(v, kInt)) return std::stoll(v);
    return v;
  }
  std::size_t count_ = 0;
};

}  // namespace

bool ParseYamlPlan(std::string_view text, CablingPlan* plan, std::string* error) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    *error = "line " + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg;
    return false;
  }
  nlohmann::json j;
  YamlToJson convert;
  if (!convert.Convert(root, &j, error)) return false;
  const YAML::Node links = root.IsMap() ? root["links"] : YAML::Node();
  return PlanFromTree(
      j, [&](std::size_t i) { return links.IsSequence() && i < links.size() ? links[i].Mark().line + 1 : 1; }, 1, plan,
      error);
}

bool ParseJsonPlan(std::string_view text, CablingPlan* plan, std::string* error) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    *error = "line " + std::to_string(LineAt(text, e.byte > 0 ? e.byte - 1 : 0)) +
             ": not JSON: " + std::string(e.what()).substr(std::string(e.what()).find(':') + 2);
    return false;
  } catch (const nlohmann::json::exception& e) {
    // Valid syntax nlohmann cannot hold, such as a number beyond a double
    // (found by the fuzz target).
    *error = "line 1: not usable JSON: " + std::string(e.what()).substr(std::string(e.what()).find(' ') + 1);
    return false;
  }
  const auto offsets = LinkOffsets(text);
  return PlanFromTree(
      j, [&](std::size_t i) { return i < offsets.size() ? LineAt(text, offsets[i]) : 1; }, 1, plan, error);
}

PlanFormat PlanFormatOf(std::string_view path, std::string_view text) {
  const auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.substr(path.size() - suffix.size()) == suffix;
  };
  if (ends_with(".yaml") || ends_with(".yml")) return PlanFormat::kYaml;
  if (ends_with(".json")) return PlanFormat::kJson;
  for (std::string_view line : config::Lines(text)) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    line.remove_prefix(first);
    if (line[0] == '{') return PlanFormat::kJson;
    if (line.starts_with("---") || line.starts_with("links:") || line.starts_with("tiers:")) {
      return PlanFormat::kYaml;
    }
    break;
  }
  return PlanFormat::kIbnetdiscover;
}

bool LoadPlan(const std::string& path, CablingPlan* plan, std::string* error) {
  const bool ok = config::ParseFile(
      path,
      [&](const std::string& text, std::string* why) {
        switch (PlanFormatOf(path, text)) {
          case PlanFormat::kJson: return ParseJsonPlan(text, plan, why);
          case PlanFormat::kYaml: return ParseYamlPlan(text, plan, why);
          case PlanFormat::kIbnetdiscover: break;
        }
        return ParseIbnetdiscoverPlan(text, plan, why);
      },
      error);
  if (ok && plan->links.empty()) {
    *error = path + ": the plan has no cables";
    return false;
  }
  return ok;
}

}  // namespace ibfabric::topology
