// GET /api/v1/collectors (collectors/api/json.h): the registry as this
// exporter runs it.
#include "collectors/api/json.h"
#include "collectors/registry.h"

namespace ibfabric::collectors {

nlohmann::json CollectorsJson(const Snapshot& snapshot) {
  nlohmann::json list = nlohmann::json::array();
  for (const CollectorInfo& c : Registry()) {
    const std::string name(c.name);
    nlohmann::json routes = nlohmann::json::array();
    for (const ApiRoute& r : c.routes) {
      routes.push_back(
          {{"path", std::string(r.path.substr(r.path.rfind('/', 0) == 0 ? 1 : 0))}, {"title", std::string(r.title)}});
    }
    nlohmann::json one{{"name", name},
                       {"help", std::string(c.help)},
                       {"enabled", snapshot.Enabled(name)},
                       {"this_host", c.this_host},
                       {"routes", std::move(routes)}};
    if (const auto run = snapshot.runs.find(name); run != snapshot.runs.end() && run->second.ran) {
      one["last_run"] = {{"success", run->second.success}, {"duration_seconds", run->second.duration_seconds}};
    }
    list.push_back(std::move(one));
  }
  return {{"collectors", std::move(list)}};
}

}  // namespace ibfabric::collectors
