#include "topology/ibnetdiscover.h"

#include <cctype>
#include <charconv>
#include <map>

#include "config/config_file.h"
#include "config/text.h"
#include "topology/link_rate.h"

namespace ibfabric::topology {
namespace {

// A cursor over one line.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool Done() const { return s_.empty(); }
  std::string_view Rest() const { return s_; }
  void SkipSpace() {
    while (!s_.empty() && (s_.front() == ' ' || s_.front() == '\t')) s_.remove_prefix(1);
  }
  bool Take(char c) {
    if (s_.empty() || s_.front() != c) return false;
    s_.remove_prefix(1);
    return true;
  }
  bool TakeWord(std::string_view w) {
    if (s_.substr(0, w.size()) != w) return false;
    s_.remove_prefix(w.size());
    return true;
  }
  // Decimal digits; false when none.
  bool Number(long long* v) {
    std::size_t n = 0;
    while (n < s_.size() && std::isdigit(static_cast<unsigned char>(s_[n]))) ++n;
    if (n == 0 || n > 12) return false;
    std::from_chars(s_.data(), s_.data() + n, *v);
    s_.remove_prefix(n);
    return true;
  }
  // The text between double quotes (no escapes: ibnetdiscover prints none).
  bool Quoted(std::string* out) { return Between('"', '"', out); }
  // The text between parentheses.
  bool Parenthesized(std::string* out) { return Between('(', ')', out); }

 private:
  bool Between(char open, char close, std::string* out) {
    if (!Take(open)) return false;
    const std::size_t end = s_.find(close);
    if (end == std::string_view::npos) return false;
    *out = std::string(s_.substr(0, end));
    s_.remove_prefix(end + 1);
    return true;
  }

  std::string_view s_;
};

std::optional<std::uint64_t> Hex(std::string_view s) {
  if (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X") s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A LID as printed: 65535 is the unassigned value (IBTA 4.1.3: 0xFFFF is
// the permissive LID, never a port's), and so no LID.
std::uint16_t Lid(long long v) { return v > 0 && v < 0xffff ? static_cast<std::uint16_t>(v) : 0; }

// The "lid N" in a comment's words, if any.
bool LidIn(std::string_view words, std::uint16_t* lid) {
  const std::size_t at = words.find("lid ");
  if (at == std::string_view::npos) return false;
  Cursor c(words.substr(at + 4));
  long long v = 0;
  if (!c.Number(&v)) return false;
  *lid = Lid(v);
  return true;
}

// What a port line's comment says: [lid N lmc M] ["peer description"]
// [lid N] [rate].
void ReadPortComment(std::string_view comment, NetPort* p) {
  const std::size_t quote = comment.find('"');
  const std::string_view before = comment.substr(0, quote);
  std::string_view after;
  if (quote != std::string_view::npos) {
    const std::size_t close = comment.find('"', quote + 1);
    if (close != std::string_view::npos) {
      p->peer_description = std::string(comment.substr(quote + 1, close - quote - 1));
      after = comment.substr(close + 1);
    }
  }
  if (quote != std::string_view::npos) {
    LidIn(before, &p->lid);
    LidIn(after, &p->peer_lid);
  } else {
    LidIn(before, &p->peer_lid);
    after = before;
  }
  // The rate: the last word, when it reads like one.
  const std::size_t end = after.find_last_not_of(" \t");
  if (end == std::string_view::npos) return;
  const std::size_t space = after.find_last_of(" \t", end);
  const std::size_t start = space == std::string_view::npos ? 0 : space + 1;
  const std::string_view word = after.substr(start, end + 1 - start);
  Port probe;
  if (SetRate(word, &probe)) p->rate = std::string(word);
}

struct Pending {
  std::uint32_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::uint64_t system_image_guid = 0;
  std::optional<std::uint64_t> guid;
};

// vendid=, devid=, sysimgguid=, switchguid=/caguid=/rtguid= (the last two
// print "0x<guid>(<guid>)").
bool ReadKey(std::string_view line, Pending* pending) {
  const std::size_t eq = line.find('=');
  if (eq == std::string_view::npos) return false;
  const std::string_view key = line.substr(0, eq);
  std::string_view value = line.substr(eq + 1);
  value = value.substr(0, value.find_first_of("( \t"));
  const auto v = Hex(value);
  if (key == "vendid") {
    pending->vendor_id = static_cast<std::uint32_t>(v.value_or(0));
  } else if (key == "devid") {
    pending->device_id = static_cast<std::uint16_t>(v.value_or(0));
  } else if (key == "sysimgguid") {
    pending->system_image_guid = v.value_or(0);
  } else if (key == "switchguid" || key == "caguid" || key == "rtguid") {
    pending->guid = v;
  } else {
    return false;
  }
  return true;
}

// A node header; false when the line is not one.
bool ReadHeader(std::string_view line, NetNode* n, std::string* bad) {
  Cursor c(line);
  if (c.TakeWord("Switch")) {
    n->kind = NodeKind::kSwitch;
  } else if (c.TakeWord("Hca") || c.TakeWord("Ca")) {
    n->kind = NodeKind::kCa;
  } else if (c.TakeWord("Rt")) {
    n->kind = NodeKind::kRouter;
  } else {
    return false;
  }
  c.SkipSpace();
  long long ports = 0;
  if (!c.Number(&ports)) return false;
  c.SkipSpace();
  if (!c.Quoted(&n->id)) return false;
  c.SkipSpace();
  if (ports > 254) {
    *bad = "a node of " + std::to_string(ports) + " ports (at most 254)";
    return true;
  }
  n->ports = static_cast<int>(ports);
  if (c.Done()) return true;
  if (!c.Take('#')) return false;
  c.SkipSpace();
  std::string description;
  if (c.Quoted(&description)) n->description = description;
  if (n->kind == NodeKind::kSwitch) LidIn(c.Rest(), &n->lid);
  return true;
}

// A port line; false when the line is not one.
bool ReadPort(std::string_view line, NodeKind kind, NetPort* p, std::string* bad) {
  Cursor c(line);
  long long port = 0, peer_port = 0;
  if (!c.Take('[') || !c.Number(&port) || !c.Take(']')) return false;
  // ibnetdiscover: a CA port's GUID, `[1](8f10403960985)`. ibdiagnet: the
  // port's label, then a CA port's GUID, `[1](1/1/1)`, `[1](1)(b0cf0e0300e5b948)`.
  std::string paren, second;
  if (c.Parenthesized(&paren)) {
    const bool two = c.Parenthesized(&second);
    const auto g = two ? Hex(second) : kind == NodeKind::kSwitch ? std::nullopt : Hex(paren);
    if (g) p->guid = g;
    if (two || !g) p->label = paren;
  }
  c.SkipSpace();
  if (!c.Quoted(&p->peer_id) || !c.Take('[') || !c.Number(&peer_port) || !c.Take(']')) return false;
  if (c.Parenthesized(&paren)) {
    if (const auto g = Hex(paren)) p->peer_guid = g;
  }
  c.SkipSpace();
  if (!c.Done() && !c.Take('#')) return false;
  if (port > 254 || peer_port > 254) {
    *bad = "port numbers must be 0..254";
    return true;
  }
  p->port = static_cast<int>(port);
  p->peer_port = static_cast<int>(peer_port);
  ReadPortComment(c.Rest(), p);
  return true;
}

// A skipped line as messages quote it: control characters as spaces.
std::string Quote(std::string_view line) {
  std::string s(line);
  for (char& ch : s) {
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  }
  return "'" + config::Excerpt(s, 60) + "'";
}

std::string At(int line) { return "line " + std::to_string(line) + ": "; }

}  // namespace

std::optional<std::uint64_t> GuidOfNetId(std::string_view id) {
  if (id.size() != 18 || id[1] != '-' || (id[0] != 'S' && id[0] != 'H' && id[0] != 'R')) return std::nullopt;
  return Hex(id.substr(2));
}

bool ParseNetFile(std::string_view text, NetFile* out, std::string* error) {
  NetFile file;
  Pending pending;
  int n = 0;
  for (const std::string_view raw : config::Lines(text)) {
    ++n;
    const std::string_view line = config::Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (ReadKey(line, &pending)) continue;
    if (line == "Non-Chassis Nodes" || line.substr(0, 8) == "Chassis ") continue;  // ibnetdiscover -g
    std::string bad;
    NetNode node;
    if (ReadHeader(line, &node, &bad)) {
      if (!bad.empty()) {
        *error = At(n) + bad;
        return false;
      }
      node.line = n;
      node.guid = GuidOfNetId(node.id);
      if (!node.guid) node.guid = pending.guid;
      node.vendor_id = pending.vendor_id;
      node.device_id = pending.device_id;
      node.system_image_guid = pending.system_image_guid;
      pending = {};
      file.nodes.push_back(std::move(node));
      continue;
    }
    NetPort port;
    const NodeKind kind = file.nodes.empty() ? NodeKind::kUnknown : file.nodes.back().kind;
    if (ReadPort(line, kind, &port, &bad)) {
      if (!bad.empty()) {
        *error = At(n) + bad;
        return false;
      }
      if (file.nodes.empty()) {
        *error = At(n) + "a port line before any node line";
        return false;
      }
      port.line = n;
      file.nodes.back().links.push_back(std::move(port));
      continue;
    }
    file.skipped.push_back(At(n) + "neither a node nor a port line: " + Quote(line));
  }
  if (file.nodes.empty()) {
    *error = "no node line (Switch, Ca or Rt): not ibnetdiscover output";
    return false;
  }
  *out = std::move(file);
  return true;
}

bool FabricFromNetFile(const NetFile& file, Fabric* out, std::vector<std::string>* notes, std::string* error) {
  std::vector<Node> nodes;
  std::map<std::string, std::size_t> by_id;
  std::map<std::uint64_t, std::size_t> by_guid;
  for (std::size_t i = 0; i < file.nodes.size(); ++i) {
    const NetNode& nn = file.nodes[i];
    Node node;
    node.guid = nn.guid.value_or(0xfe00000000000000ull + i);
    if (auto [it, fresh] = by_guid.try_emplace(node.guid, i); !fresh) {
      *error = At(nn.line) + "a second node line for " + FormatGuid(node.guid) + " (the first on line " +
               std::to_string(file.nodes[it->second].line) + ")";
      return false;
    }
    by_id.try_emplace(nn.id, i);
    node.kind = nn.kind;
    node.description = nn.description.empty() ? nn.id : nn.description;
    node.num_ports = static_cast<std::uint8_t>(nn.ports);
    node.lid = nn.lid;
    node.vendor_id = nn.vendor_id;
    node.device_id = nn.device_id;
    node.system_image_guid = nn.system_image_guid;
    nodes.push_back(std::move(node));
  }
  const auto find = [&](const std::string& id) -> std::optional<std::size_t> {
    if (auto it = by_id.find(id); it != by_id.end()) return it->second;
    if (const auto g = GuidOfNetId(id)) {
      if (auto it = by_guid.find(*g); it != by_guid.end()) return it->second;
    }
    return std::nullopt;
  };
  const auto name = [&](std::size_t i, int port) { return nodes[i].description + "[" + std::to_string(port) + "]"; };
  // Every end once: (node, port) -> (peer node, peer port, line).
  struct End {
    std::size_t peer;
    int peer_port;
    int line;
  };
  std::map<std::pair<std::size_t, int>, End> ends;
  std::map<std::pair<std::size_t, int>, Port> ports;
  const auto add = [&](std::size_t i, const NetPort& np, std::optional<std::size_t> peer) {
    Port p;
    p.number = static_cast<std::uint8_t>(np.port);
    p.guid = nodes[i].kind == NodeKind::kSwitch ? nodes[i].guid : np.guid.value_or(0);
    p.lid = nodes[i].kind == NodeKind::kSwitch ? nodes[i].lid : np.lid;
    p.state = 4;
    p.phys_state = 5;
    SetRate(np.rate, &p);
    if (peer) p.remote = PortRef{nodes[*peer].guid, static_cast<std::uint8_t>(np.peer_port)};
    ports[{i, np.port}] = p;
  };
  for (std::size_t i = 0; i < file.nodes.size(); ++i) {
    for (const NetPort& np : file.nodes[i].links) {
      const std::optional<std::size_t> peer = find(np.peer_id);
      if (!peer) {
        notes->push_back(At(np.line) + name(i, np.port) + " names a node the file does not list (\"" + np.peer_id +
                         "\"): its cable is left out");
        add(i, np, std::nullopt);
        continue;
      }
      for (const auto& [me, me_port, other, other_port] :
           {std::tuple{i, np.port, *peer, np.peer_port}, std::tuple{*peer, np.peer_port, i, np.port}}) {
        auto [it, fresh] = ends.try_emplace({me, me_port}, End{other, other_port, np.line});
        if (!fresh && (it->second.peer != other || it->second.peer_port != other_port)) {
          *error = At(np.line) + name(me, me_port) + " is cabled to " + name(it->second.peer, it->second.peer_port) +
                   " on line " + std::to_string(it->second.line) + " but to " + name(other, other_port) + " here";
          return false;
        }
      }
      add(i, np, peer);
    }
  }
  // A cable listed from one end only: the other end as that line says.
  for (const auto& [end, e] : ends) {
    if (ports.count(end)) continue;
    const Port& far = ports.at({e.peer, e.peer_port});
    Port p = far;
    p.number = static_cast<std::uint8_t>(end.second);
    p.guid = nodes[end.first].kind == NodeKind::kSwitch ? nodes[end.first].guid : 0;
    p.lid = nodes[end.first].kind == NodeKind::kSwitch ? nodes[end.first].lid : 0;
    p.remote = PortRef{nodes[e.peer].guid, static_cast<std::uint8_t>(e.peer_port)};
    ports[end] = p;
    notes->push_back(At(e.line) + name(end.first, end.second) + " is not listed under its own node: taken from " +
                     name(e.peer, e.peer_port) + "'s line");
  }
  for (auto& [end, p] : ports) nodes[end.first].ports.push_back(p);  // ascending by port within a node
  for (Node& node : nodes) {
    if (node.lid != 0) continue;
    for (const Port& p : node.ports) {
      if (p.lid != 0) {
        node.lid = p.lid;
        break;
      }
    }
  }
  *out = Fabric(std::move(nodes));
  return true;
}

bool LoadNetFile(const std::string& path, Fabric* out, std::vector<std::string>* notes, std::string* error) {
  return config::ParseFile(
      path,
      [&](const std::string& text, std::string* why) {
        NetFile file;
        if (!ParseNetFile(text, &file, why)) return false;
        notes->insert(notes->end(), file.skipped.begin(), file.skipped.end());
        return FabricFromNetFile(file, out, notes, why);
      },
      error);
}

}  // namespace ibfabric::topology
