#include "tests/testbed/personality.h"

#include <fnmatch.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tests/model/personalities.h"

#ifndef IBFABRIC_HW_PERSONALITY_LIB
#error "IBFABRIC_HW_PERSONALITY_LIB must be defined by the build"
#endif

namespace ibfabric::testbed {

bool ParsePersonalityFile(const std::string& text, std::vector<PersonalityRule>* rules, std::string* error) {
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    PersonalityRule r;
    if (!(words >> r.pattern)) continue;
    std::string option;
    if (!(words >> r.model)) {
      *error = "personality file line " + std::to_string(number) + ": a node pattern needs a model";
      return false;
    }
    if (!model::FindPersonality(r.model)) {
      std::string known;
      for (const auto& p : model::Personalities()) known += (known.empty() ? "" : ", ") + std::string(p.name);
      *error = "personality file line " + std::to_string(number) + ": unknown model '" + r.model + "' (" + known + ")";
      return false;
    }
    while (words >> option) {
      if (option.rfind("max_width=", 0) == 0 && model::ParseWidth(option.substr(10))) {
        r.max_width = option.substr(10);
      } else {
        *error = "personality file line " + std::to_string(number) + ": unknown option '" + option +
                 "' (max_width=1x|2x|4x|8x|12x)";
        return false;
      }
    }
    rules->push_back(r);
  }
  return true;
}

std::unique_ptr<HardwareFabric> HardwareFabric::Make(const std::string& net_text,
                                                     const std::vector<PersonalityRule>& rules, const std::string& dir,
                                                     std::string* error) {
  std::unique_ptr<HardwareFabric> f(new HardwareFabric());
  f->path_ = dir + "/personality.json";
  static const std::regex kHeader(R"re(^\s*(Switch|Hca|Ca)\s+\d+\s+"([^"]+)"(?:\s*#\s*"([^"]*)")?)re");
  static const std::regex kPort(R"re(^\s*\[(\d+)\](?:\([^)]*\))?\s+"([^"]+)"\[(\d+)\])re");
  std::istringstream in(net_text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kHeader)) {
      Node n;
      n.id = m[2];
      n.description = m[3].matched ? std::string(m[3]) : n.id;
      n.is_switch = m[1] == "Switch";
      for (const PersonalityRule& r : rules) {
        if (fnmatch(r.pattern.c_str(), n.description.c_str(), 0) == 0 ||
            fnmatch(r.pattern.c_str(), n.id.c_str(), 0) == 0) {
          n.model = r.model;
          n.max_width = r.max_width;
          break;
        }
      }
      if (f->attach_.empty()) f->attach_ = n.id;
      f->nodes_.push_back(n);
    } else if (!f->nodes_.empty() && std::regex_search(line, m, kPort)) {
      f->nodes_.back().ports[std::stoi(m[1])] = {m[2], std::stoi(m[3])};
    }
  }
  if (f->nodes_.empty()) {
    *error = "no node in the net file";
    return nullptr;
  }
  for (const Node& n : f->nodes_) {
    if (!n.model.empty() && model::FindPersonality(n.model)->is_switch != n.is_switch) {
      *error = n.id + " is a " + (n.is_switch ? "switch" : "CA") + " but its model " + n.model + " is not";
      return nullptr;
    }
  }
  if (!f->Write(error)) return nullptr;
  return f;
}

bool HardwareFabric::ResolveLids(const SimFabric& sim, std::string* error) {
  const CommandResult r = sim.Tool({"ibnetdiscover"});
  if (r.exit_code != 0) {
    *error = "ibnetdiscover failed: " + r.err;
    return false;
  }
  // Switch lines carry "# "desc" ... lid N"; a CA's LIDs are on its port
  // lines ("# lid N lmc ...").
  static const std::regex kSwitch(R"re(^Switch\s+\d+\s+"([^"]+)"\s*#\s*"([^"]*)".*\blid (\d+))re");
  static const std::regex kCa(R"re(^(?:Ca|Hca)\s+\d+\s+"([^"]+)"\s*#\s*"([^"]*)")re");
  static const std::regex kCaPort(R"re(^\[\d+\].*#\s*lid (\d+))re");
  for (Node& n : nodes_) n.lids.clear();
  Node* ca = nullptr;
  const auto find = [this](const std::string& id, const std::string& description) -> Node* {
    for (Node& n : nodes_) {
      if (n.id == id) return &n;
    }
    int matches = 0;
    Node* found = nullptr;
    for (Node& n : nodes_) {
      if (n.description == description) {
        found = &n;
        ++matches;
      }
    }
    return matches == 1 ? found : nullptr;  // a shared description names no node
  };
  std::istringstream in(r.out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kSwitch)) {
      ca = nullptr;
      if (Node* n = find(m[1], m[2])) n->lids.push_back(static_cast<std::uint16_t>(std::stoi(m[3])));
    } else if (std::regex_search(line, m, kCa)) {
      ca = find(m[1], m[2]);
    } else if (ca && std::regex_search(line, m, kCaPort)) {
      ca->lids.push_back(static_cast<std::uint16_t>(std::stoi(m[1])));
    }
  }
  return Write(error);
}

HardwareFabric::Node* HardwareFabric::Find(const std::string& name, std::string* error) {
  for (Node& n : nodes_) {
    if (n.id == name || n.description == name) return &n;
  }
  *error = "no node '" + name + "' in the fabric";
  return nullptr;
}

bool HardwareFabric::PlantTick(const std::string& node, std::uint8_t tick, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  n->tick = tick;
  return Write(error);
}

bool HardwareFabric::PlantFec(const std::string& node, int port, const FecPlant& fec, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  if (fec.lanes.size() > 12 || fec.lanes_per_second.size() > 12) {
    *error = "fec " + node + ": at most 12 lanes (PortExtendedSpeedsCounters)";
    return false;
  }
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  FecPlant next = fec;
  // New rates without counts of their own count on from where the old
  // rates got to (a cable getting worse, not a counter cleared).
  const auto was = n->fec.find(port);
  next.serial = ++serial_;
  next.lineage.clear();
  if (was != n->fec.end() && fec.lanes.empty() && !fec.lanes_per_second.empty()) {
    next.lineage = was->second.lineage;
    next.lineage.push_back(was->second.serial);
    const double seconds = static_cast<double>(now_ms - was->second.since_ms) / 1000;
    const FecPlant& w = was->second;
    const auto counted = [&](std::uint32_t at, std::uint32_t per_second) {
      return static_cast<std::uint32_t>(
          std::min(4294967295.0, model::CountedSince(at, per_second, seconds, w.step_factor, w.step_seconds, w.steps,
                                                     w.step_after ? *w.step_after : -1.0)));
    };
    const std::size_t lanes = std::max(was->second.lanes.size(), was->second.lanes_per_second.size());
    for (std::size_t lane = 0; lane < lanes; ++lane) {
      next.lanes.push_back(
          counted(lane < was->second.lanes.size() ? was->second.lanes[lane] : 0,
                  lane < was->second.lanes_per_second.size() ? was->second.lanes_per_second[lane] : 0));
    }
    if (fec.uncorrectable_blocks == 0)
      next.uncorrectable_blocks = counted(was->second.uncorrectable_blocks, was->second.uncorrectable_per_second);
  }
  next.since_ms = now_ms;  // the rates count from now (the preload reads the wall clock: another process)
  n->fec[port] = next;
  return Write(error);
}

bool HardwareFabric::PlantEnv(const std::string& node, const EnvPlant& env, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  n->env = env;
  return Write(error);
}

bool HardwareFabric::PlantModule(const std::string& node, int port, const ModulePlant& module, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  if (module.text.empty() && module.numbers.empty()) {
    n->modules.erase(port);
  } else {
    n->modules[port] = module;
  }
  return Write(error);
}

bool HardwareFabric::PlantRegisters(const std::string& node, bool on, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  n->registers_off = !on;
  return Write(error);
}

bool HardwareFabric::PlantBusy(const std::string& node, int count, std::string* error, std::uint16_t attr) {
  Node* n = Find(node, error);
  if (!n) return false;
  n->busy = count;
  n->busy_attr = attr;
  n->busy_serial = ++serial_;
  return Write(error);
}

bool HardwareFabric::PlantRedirect(const std::string& node, std::uint32_t qp, std::string* error, bool to_gid) {
  Node* n = Find(node, error);
  if (!n) return false;
  if (qp == 1 || qp > 0xffffff) {
    *error = "redirect " + node + ": a QP is 2..0xffffff (0: none)";
    return false;
  }
  n->redirect_qp = qp;
  n->redirect_to_gid = to_gid;
  return Write(error);
}

bool HardwareFabric::PlantQp1Dropped(const std::string& node, int port, std::uint64_t value, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  if (!model::FindPersonality(n->model)) {
    *error = "qp1 " + node + ": a node without a model keeps ibsim's ClassPortInfo (no QP1Dropped)";
    return false;
  }
  if (port < 0 || port > 254) {
    *error = "qp1 " + node + ": a port is 0..254";
    return false;
  }
  n->qp1_dropped[port] = value;
  return Write(error);
}

bool HardwareFabric::PlantAdaptiveRouting(const std::string& node, bool on, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  const model::Personality* m = model::FindPersonality(n->model);
  if (!m || m->ar_group_cap == 0) {
    *error = "ar " + node + ": its model has no adaptive routing";
    return false;
  }
  n->adaptive_routing = on;
  return Write(error);
}

bool HardwareFabric::PlantMKey(const std::string& node, std::uint64_t m_key, std::string* error) {
  if (node == "all") {
    for (Node& n : nodes_) n.m_key = m_key;
    return Write(error);
  }
  Node* n = Find(node, error);
  if (!n) return false;
  n->m_key = m_key;
  return Write(error);
}

std::uint16_t HardwareFabric::LidOf(const std::string& node) const {
  for (const Node& n : nodes_) {
    if (n.id == node) return n.lids.empty() ? 0 : n.lids.front();
  }
  return 0;
}

bool HardwareFabric::PlantPKeys(const std::string& node, const std::vector<std::uint16_t>& pkeys, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  n->pkeys = pkeys;
  return Write(error);
}

bool HardwareFabric::PlantLink(const std::string& node, int port, const std::string& width, const std::string& speed,
                               std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  if (!width.empty() && !model::ParseWidth(width)) {
    *error = "unknown width '" + width + "' (1x, 2x, 4x, 8x, 12x)";
    return false;
  }
  if (!speed.empty() && !model::ParseLinkSpeed(speed)) {
    *error = "unknown speed '" + speed + "' (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR)";
    return false;
  }
  const auto peer = n->ports.find(port);
  if (peer == n->ports.end()) {
    *error = node + " has no cable on port " + std::to_string(port);
    return false;
  }
  n->plants[port] = {width, speed};
  const std::string far_id = peer->second.first;
  const int far_port = peer->second.second;
  Node* far = Find(far_id, error);
  if (far) far->plants[far_port] = {width, speed};
  return Write(error);
}

bool HardwareFabric::Clear(const std::string& node, std::string* error) {
  Node* n = Find(node, error);
  if (!n) return false;
  n->tick.reset();
  n->busy = 0;
  n->redirect_qp = 0;
  n->redirect_to_gid = false;
  n->qp1_dropped.clear();
  n->adaptive_routing = false;
  n->m_key = 0;
  n->pkeys.clear();
  n->env = EnvPlant{};
  n->registers_off = false;
  n->modules.clear();
  for (const auto& [port, plant] : n->plants) {
    const auto peer = n->ports.find(port);
    if (peer == n->ports.end()) continue;
    std::string ignored;
    if (Node* far = Find(peer->second.first, &ignored)) far->plants.erase(peer->second.second);
  }
  n->plants.clear();
  n->fec.clear();
  return Write(error);
}

bool HardwareFabric::Command(const std::string& line, std::string* error) {
  std::istringstream words(line);
  std::string verb, node;
  if (!(words >> verb >> node)) {
    *error =
        "usage: tick NODE N | busy NODE N [ATTR] | redirect NODE QP | ar NODE 1|0 | link NODE PORT [width=W] [speed=S] "
        "| fec NODE PORT [mode=N] [lanes=N,..] [corrected_blocks=N] [uncorrectable_blocks=N] | clear NODE";
    return false;
  }
  int number = 0;
  if (verb == "clear") return Clear(node, error);
  if (verb == "env") {  // env NODE [temperature=C] [fan=T:RPM].. [failed_fans=T,..] [psu=I:ok|failed].. [watts=I:W]..
    EnvPlant env;
    for (std::string option; words >> option;) {
      const auto eq = option.find('=');
      const std::string key = option.substr(0, eq), value = eq == std::string::npos ? "" : option.substr(eq + 1);
      const auto colon = value.find(':');
      const auto number_of = [&](const std::string& v, int* out) {
        char* end = nullptr;
        const long x = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || x < 0 || x > 100000) return false;
        *out = static_cast<int>(x);
        return true;
      };
      int a = 0, b = 0;
      if (key == "temperature") {
        char* end = nullptr;
        env.temperature = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0') {
          *error = "env " + node + ": temperature wants degrees C, not '" + value + "'";
          return false;
        }
      } else if ((key == "fan" || key == "watts") && colon != std::string::npos &&
                 number_of(value.substr(0, colon), &a) && number_of(value.substr(colon + 1), &b)) {
        (key == "fan" ? env.fan_rpm : env.watts)[a] = b;
      } else if (key == "psu" && colon != std::string::npos && number_of(value.substr(0, colon), &a) &&
                 (value.substr(colon + 1) == "ok" || value.substr(colon + 1) == "failed")) {
        env.psus[a] = value.substr(colon + 1);
      } else if (key == "failed_fans") {
        std::istringstream items(value);
        for (std::string item; std::getline(items, item, ',');) {
          if (!number_of(item, &a)) {
            *error = "env " + node + ": failed_fans wants tachometer numbers, not '" + item + "'";
            return false;
          }
          env.failed_fans.push_back(a);
        }
      } else {
        *error = "env " + node + ": '" + option +
                 "' is not temperature=C, fan=T:RPM, failed_fans=T,.., psu=I:ok|failed or watts=I:W";
        return false;
      }
    }
    return PlantEnv(node, env, error);
  }
  if (verb == "registers") {  // registers NODE on|off
    std::string state;
    if (!(words >> state) || (state != "on" && state != "off")) {
      *error = "registers " + node + ": want on or off";
      return false;
    }
    return PlantRegisters(node, state == "on", error);
  }
  if (verb == "pkeys") {
    std::string list;
    std::istringstream again(line);
    again >> verb >> node >> list;
    std::vector<std::uint16_t> pkeys;
    std::istringstream items(list);
    for (std::string item; std::getline(items, item, ',');) {
      char* end = nullptr;
      const unsigned long v = std::strtoul(item.c_str(), &end, 0);
      if (item.empty() || *end != '\0' || v > 0xffff) {
        *error = "pkeys " + node + ": '" + item + "' is no P_Key (0x-hex or decimal, up to 0xffff)";
        return false;
      }
      pkeys.push_back(static_cast<std::uint16_t>(v));
    }
    return PlantPKeys(node, pkeys, error);
  }
  if (verb == "mkey") {
    std::string key;
    std::istringstream again(line);
    again >> verb >> node >> key;
    char* end = nullptr;
    errno = 0;
    const unsigned long long k = std::strtoull(key.c_str(), &end, 0);
    if (key.empty() || *end != '\0' || errno != 0) {
      *error = "mkey " + node + ": '" + key + "' is no 64-bit key (0x-hex or decimal)";
      return false;
    }
    return PlantMKey(node, k, error);
  }
  if (!(words >> number)) {
    *error = verb + " " + node + ": a number is missing";
    return false;
  }
  if (verb == "module") {  // module NODE PORT [KEY=VALUE]..
    static const std::set<std::string> kText{"vendor", "pn", "sn", "rev"};
    static const std::set<std::string> kNumbers{"temperature", "high", "type", "identifier", "length", "rx", "tx"};
    ModulePlant m;
    for (std::string option; words >> option;) {
      const auto eq = option.find('=');
      const std::string key = option.substr(0, eq), value = eq == std::string::npos ? "" : option.substr(eq + 1);
      char* end = nullptr;
      const double parsed = std::strtod(value.c_str(), &end);
      if (kText.count(key) && !value.empty()) {
        m.text[key] = value;
      } else if (kNumbers.count(key) && !value.empty() && *end == '\0') {
        m.numbers[key] = parsed;
      } else {
        *error = "module " + node + ": '" + option +
                 "' is not vendor=S, pn=S, sn=S, rev=S, temperature=C, high=C, type=N, identifier=N, length=N, "
                 "rx=W or tx=W";
        return false;
      }
    }
    return PlantModule(node, number, m, error);
  }
  if (verb == "fec") {  // fec NODE PORT [mode=N] [lanes=A,B,..] [corrected_blocks=N] [uncorrectable_blocks=N] ...
    FecPlant fec;
    for (std::string option; words >> option;) {
      const auto eq = option.find('=');
      const std::string key = option.substr(0, eq), value = eq == std::string::npos ? "" : option.substr(eq + 1);
      std::vector<std::uint32_t> values;
      std::istringstream items(value);
      for (std::string item; std::getline(items, item, ',');) {
        char* end = nullptr;
        const unsigned long v = std::strtoul(item.c_str(), &end, 0);
        if (item.empty() || *end != '\0' || v > 0xffffffffUL) {
          *error = "fec " + node + ": '" + option + "' is not KEY=N[,N...] with 32-bit N";
          return false;
        }
        values.push_back(static_cast<std::uint32_t>(v));
      }
      if (values.empty() || (key != "lanes" && key != "lanes_per_second" && values.size() != 1)) {
        *error = "fec " + node + ": '" + option + "' wants one number (lanes: a list)";
        return false;
      }
      if (key == "mode") {
        fec.mode = static_cast<std::uint16_t>(values[0]);
      } else if (key == "lanes") {
        fec.lanes = values;
      } else if (key == "corrected_blocks") {
        fec.corrected_blocks = values[0];
      } else if (key == "uncorrectable_blocks") {
        fec.uncorrectable_blocks = values[0];
      } else if (key == "lanes_per_second") {
        fec.lanes_per_second = values;
      } else if (key == "uncorrectable_per_second") {
        fec.uncorrectable_per_second = values[0];
      } else if (key == "step_factor") {
        fec.step_factor = values[0];
      } else if (key == "step_seconds") {
        fec.step_seconds = values[0];
      } else if (key == "steps") {
        fec.steps = values[0];
      } else if (key == "step_after") {
        fec.step_after = values[0];
      } else {
        *error = "fec: unknown option '" + key +
                 "' (mode, lanes, corrected_blocks, uncorrectable_blocks, lanes_per_second, uncorrectable_per_second, "
                 "step_factor, step_seconds, steps, step_after)";
        return false;
      }
    }
    return PlantFec(node, number, fec, error);
  }
  if (verb == "tick") {
    if (number < 0 || number > 255) {
      *error = "tick " + node + ": a Tick is 0..255";
      return false;
    }
    return PlantTick(node, static_cast<std::uint8_t>(number), error);
  }
  if (verb == "busy") {
    std::string attr;
    words >> attr;  // optional, hex: 0x16
    char* end = nullptr;
    const unsigned long id = attr.empty() ? 0 : std::strtoul(attr.c_str(), &end, 16);
    if (!attr.empty() && (*end != '\0' || id > 0xffff)) {
      *error = "busy " + node + ": '" + attr + "' is no attribute ID (hex, e.g. 0x16)";
      return false;
    }
    return PlantBusy(node, number, error, static_cast<std::uint16_t>(id));
  }
  if (verb == "ar") {
    if (number != 0 && number != 1) {
      *error = "ar " + node + ": 1 (on) or 0 (off)";
      return false;
    }
    return PlantAdaptiveRouting(node, number == 1, error);
  }
  if (verb == "redirect") {  // redirect NODE QP [gid]
    std::string how;
    words >> how;
    if (number < 0 || (!how.empty() && how != "gid")) {
      *error = "redirect " + node + ": a QP is 2..0xffffff (0: none), then 'gid' for RedirectLID 0";
      return false;
    }
    return PlantRedirect(node, static_cast<std::uint32_t>(number), error, how == "gid");
  }
  if (verb == "qp1") {  // qp1 NODE PORT N
    std::uint64_t value = 0;
    if (!(words >> value)) {
      *error = "qp1 " + node + ": the port, then its QP1Dropped";
      return false;
    }
    return PlantQp1Dropped(node, number, value, error);
  }
  if (verb == "link") {
    std::string option, width, speed;
    while (words >> option) {
      if (option.rfind("width=", 0) == 0) {
        width = option.substr(6);
      } else if (option.rfind("speed=", 0) == 0) {
        speed = option.substr(6);
      } else {
        *error = "link: unknown option '" + option + "' (width=W, speed=S)";
        return false;
      }
    }
    return PlantLink(node, number, width, speed, error);
  }
  *error = "unknown command '" + verb +
           "' (tick, busy, redirect, qp1, ar, mkey, pkeys, link, fec, env, registers, module, clear)";
  return false;
}

Env HardwareFabric::ClientEnv(const SimFabric& sim) const {
  Env env = sim.ClientEnv();
  env["LD_PRELOAD"] = SimPreload() + " " + IBFABRIC_HW_PERSONALITY_LIB;
  env["HW_PERSONALITY"] = path_;
  return env;
}

Env HardwareFabric::PreloadEnv() const {
  return {{"LD_PRELOAD", IBFABRIC_HW_PERSONALITY_LIB}, {"HW_PERSONALITY", path_}};
}

Env SplitSmiEnv(const SimFabric& sim, const HardwareFabric* hw, const std::string& gsi, const std::string& smi) {
  Env env = hw != nullptr ? hw->ClientEnv(sim) : sim.ClientEnv();
  env["LD_PRELOAD"] = std::string(IBFABRIC_SPLIT_SMI_LIB) + " " + env["LD_PRELOAD"];
  env["SPLIT_SMI_GSI"] = gsi;
  env["SPLIT_SMI_SMI"] = smi;
  return env;
}

bool HardwareFabric::Write(std::string* error) const {
  nlohmann::json j;
  j["attach"] = attach_;
  j["nodes"] = nlohmann::json::array();
  for (const Node& n : nodes_) {
    nlohmann::json node{{"id", n.id}, {"switch", n.is_switch}, {"model", n.model}, {"lids", n.lids}};
    if (!n.max_width.empty()) node["max_width"] = n.max_width;
    nlohmann::json ports = nlohmann::json::object();
    for (const auto& [port, peer] : n.ports) ports[std::to_string(port)] = {peer.first, peer.second};
    node["ports"] = ports;
    if (n.tick) node["tick"] = *n.tick;
    if (n.busy > 0) node["busy"] = {{"count", n.busy}, {"serial", n.busy_serial}, {"attr", n.busy_attr}};
    if (n.redirect_qp != 0) {
      node["redirect"] = {{"qp", n.redirect_qp}, {"qkey", kRedirectQkey}, {"to_gid", n.redirect_to_gid}};
    }
    nlohmann::json qp1 = nlohmann::json::object();
    for (const auto& [port, v] : n.qp1_dropped) qp1[std::to_string(port)] = v;
    if (!qp1.empty()) node["qp1_dropped"] = qp1;
    if (n.adaptive_routing) node["adaptive_routing"] = true;
    if (n.m_key != 0) {
      char hex[19];
      std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(n.m_key));
      node["m_key"] = hex;
    }
    if (!n.pkeys.empty()) node["pkeys"] = n.pkeys;
    if (n.registers_off) node["registers_off"] = true;
    nlohmann::json modules = nlohmann::json::object();
    for (const auto& [port, m] : n.modules) {
      nlohmann::json x = nlohmann::json::object();
      for (const auto& [k, v] : m.text) x[k] = v;
      for (const auto& [k, v] : m.numbers) {
        if (k == "type" || k == "identifier" || k == "length") {
          x[k] = static_cast<int>(v);
        } else {
          x[k] = v;
        }
      }
      modules[std::to_string(port)] = x;
    }
    if (!modules.empty()) node["modules"] = modules;
    nlohmann::json plants = nlohmann::json::object();
    for (const auto& [port, plant] : n.plants) {
      nlohmann::json p = nlohmann::json::object();
      if (!plant.first.empty()) p["width"] = plant.first;
      if (!plant.second.empty()) p["speed"] = plant.second;
      plants[std::to_string(port)] = p;
    }
    if (!plants.empty()) node["plant"] = plants;
    nlohmann::json fec = nlohmann::json::object();
    for (const auto& [port, f] : n.fec) {
      nlohmann::json x{{"lanes", f.lanes},
                       {"corrected_blocks", f.corrected_blocks},
                       {"uncorrectable_blocks", f.uncorrectable_blocks},
                       {"serial", f.serial},
                       {"lineage", f.lineage}};
      if (f.mode) x["mode"] = *f.mode;
      if (!f.lanes_per_second.empty() || f.uncorrectable_per_second != 0) {
        x["lanes_per_second"] = f.lanes_per_second;
        x["uncorrectable_per_second"] = f.uncorrectable_per_second;
        x["since_ms"] = f.since_ms;
      }
      if (f.steps > 0) {
        x["step_factor"] = f.step_factor;
        x["step_seconds"] = f.step_seconds;
        x["steps"] = f.steps;
        if (f.step_after) x["step_after"] = *f.step_after;
      }
      fec[std::to_string(port)] = x;
    }
    if (!fec.empty()) node["fec"] = fec;
    nlohmann::json env = nlohmann::json::object();
    if (n.env.temperature) env["temperature"] = *n.env.temperature;
    for (const auto& [t, rpm] : n.env.fan_rpm) env["fans"][std::to_string(t)] = rpm;
    if (!n.env.failed_fans.empty()) env["failed_fans"] = n.env.failed_fans;
    for (const auto& [i, state] : n.env.psus) env["psus"][std::to_string(i)] = state;
    for (const auto& [i, w] : n.env.watts) env["watts"][std::to_string(i)] = w;
    if (!env.empty()) node["env"] = env;
    j["nodes"].push_back(node);
  }
  // Whole or not at all: a client reading it mid-write keeps the old one.
  const std::string tmp = path_ + ".tmp";
  if (!WriteFile(tmp, j.dump()) || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    *error = "cannot write " + path_;
    return false;
  }
  return true;
}

std::unique_ptr<HardwareFabric> PlantTrained(const std::string& net_text,
                                             const std::map<std::pair<std::string, int>, std::string>& trained,
                                             const std::string& dir, const SimFabric* sim, std::string* error,
                                             const std::vector<PersonalityRule>& rules) {
  auto hw = HardwareFabric::Make(net_text, rules, dir, error);
  if (!hw || (sim && !hw->ResolveLids(*sim, error))) return nullptr;
  static const std::regex kRate(R"((\d+x)?([A-Z]\w*)?)");
  for (const auto& [at, rate] : trained) {
    std::smatch m;
    if (!std::regex_match(rate, m, kRate) || rate.empty()) {
      *error = "trained rate '" + rate + "' is not WIDTH and/or SPEED (1x, 1xQDR, QDR)";
      return nullptr;
    }
    if (!hw->PlantLink(at.first, at.second, m[1].str(), m[2].str(), error)) return nullptr;
  }
  return hw;
}

}  // namespace ibfabric::testbed
