#include "exporter/state.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ibfabric::collectors {

using nlohmann::json;

namespace {
constexpr int kVersion = 1;
}

std::string SaveState(const PersistedState& state) {
  json ports = json::array();
  const auto& specs = CounterSpecs();
  for (const auto& [ref, t] : state.ports) {
    json counters = json::object();
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      if (!t.present.test(i)) continue;
      counters[specs[i].metric] = {{"total", t.Total(i)}, {"raw", t.LastRaw(i)}, {"bits", t.LastBits(i)}};
    }
    ports.push_back({{"guid", ref.node_guid}, {"port", ref.port}, {"stale", t.stale}, {"counters", counters}});
  }
  json nodes = json::array();
  for (const auto& [guid, label] : state.nodes) {
    json node{{"guid", guid}, {"kind", static_cast<int>(label.kind)}, {"name", label.name}};
    if (!label.port_guids.empty()) {
      json port_guids = json::array();
      for (const auto& [port, port_guid] : label.port_guids) port_guids.push_back({port, port_guid});
      node["port_guids"] = std::move(port_guids);
    }
    nodes.push_back(std::move(node));
  }
  json remembered = json::array();
  for (const auto& ref : state.remembered) remembered.push_back({ref.node_guid, ref.port});
  json collectors = json::object();
  for (const auto& [name, saved] : state.collectors) collectors[name] = saved;
  return json{
      {"version", kVersion}, {"ports", ports}, {"nodes", nodes}, {"remembered", remembered}, {"collectors", collectors}}
      .dump();
}

bool LoadState(const std::string& text, PersistedState* state, std::string* error) {
  try {
    const json j = json::parse(text);
    if (j.at("version").get<int>() != kVersion) {
      *error = "state version " + j.at("version").dump() + " is not " + std::to_string(kVersion);
      return false;
    }
    PersistedState out;
    std::map<std::string, std::size_t> by_name;
    for (std::size_t i = 0; i < kCounterCount; ++i) by_name[CounterSpecs()[i].metric] = i;
    for (const auto& p : j.at("ports")) {
      PortTotals t;
      t.stale = p.at("stale").get<bool>();
      for (const auto& [name, c] : p.at("counters").items()) {
        auto it = by_name.find(name);
        if (it == by_name.end()) continue;  // a counter this build does not know
        t.SetTotal(it->second, c.at("total").get<std::uint64_t>());
        t.SetLastRaw(it->second, c.at("raw").get<std::uint64_t>());
        // A counter's field is its own or PortCountersExtended's 64-bit one.
        const auto bits = c.at("bits").get<unsigned>();
        if (bits != 64 && bits != CounterSpecs()[it->second].bits) {
          *error = "state: counter " + name + " from a " + std::to_string(bits) + "-bit field (it has " +
                   std::to_string(CounterSpecs()[it->second].bits) + " or 64)";
          return false;
        }
        t.last_wide.set(it->second, bits == 64);
        t.present.set(it->second);
      }
      out.ports[{p.at("guid").get<std::uint64_t>(), p.at("port").get<std::uint8_t>()}] = t;
    }
    for (const auto& n : j.at("nodes")) {
      NodeLabel& label = out.nodes[n.at("guid").get<std::uint64_t>()];
      label.kind = static_cast<topology::NodeKind>(n.at("kind").get<int>());
      label.name = n.at("name").get<std::string>();
      if (n.contains("port_guids")) {  // written since the HCA series carry port GUIDs
        for (const auto& pg : n.at("port_guids")) {
          label.port_guids[pg.at(0).get<std::uint8_t>()] = pg.at(1).get<std::uint64_t>();
        }
      }
    }
    for (const auto& r : j.at("remembered")) {
      out.remembered.insert({r.at(0).get<std::uint64_t>(), r.at(1).get<std::uint8_t>()});
    }
    if (j.contains("collectors")) {  // written since collectors save their own
      for (const auto& [name, saved] : j.at("collectors").items()) out.collectors[name] = saved;
    } else if (j.contains("waits")) {
      // An older build's file: its one collector state, the PortXmitWait
      // seconds, in the form that collector saves them.
      out.collectors["xmit_wait_tick"] = j.at("waits");
    }
    *state = std::move(out);
    return true;
  } catch (const json::exception& e) {
    *error = std::string("malformed state: ") + e.what();
    return false;
  }
}

}  // namespace ibfabric::collectors
