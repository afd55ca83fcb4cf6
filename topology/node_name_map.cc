#include "topology/node_name_map.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "config/config_file.h"
#include "config/text.h"

namespace ibfabric::topology {

bool ParseNodeNameMap(std::string_view text, NodeNameMap* map, std::string* error) {
  NodeNameMap out;
  std::map<std::uint64_t, int> defined_on;
  int line_no = 0;
  for (const std::string_view raw : config::Lines(text)) {
    ++line_no;
    std::string_view line = config::Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    auto fail = [&](const std::string& why) {
      *error = "line " + std::to_string(line_no) + ": " + why;
      return false;
    };
    const std::size_t guid_end = line.find_first_of(" \t#");
    const std::string guid_text(line.substr(0, guid_end));
    char* after = nullptr;
    errno = 0;
    const unsigned long long guid = std::strtoull(guid_text.c_str(), &after, 0);
    if (guid_text.empty() || *after != '\0' || errno == ERANGE || guid_text.front() == '-') {
      return fail("'" + guid_text + "' is not a GUID");
    }
    std::string_view rest =
        guid_end == std::string_view::npos ? std::string_view{} : config::Trim(line.substr(guid_end));
    std::string name;
    if (!rest.empty() && rest.front() == '"') {
      const std::size_t close = rest.find('"', 1);
      if (close == std::string_view::npos) return fail("unterminated quote in the name");
      name = std::string(rest.substr(1, close - 1));
    } else {
      name = std::string(config::Trim(rest.substr(0, rest.find('#'))));
    }
    if (name.empty()) return fail("no name after GUID " + guid_text);
    if (auto it = defined_on.find(guid); it != defined_on.end()) {
      return fail("GUID " + guid_text + " is already named on line " + std::to_string(it->second));
    }
    defined_on[guid] = line_no;
    out[guid] = name;
  }
  *map = std::move(out);
  return true;
}

bool LoadNodeNameMap(const std::string& path, NodeNameMap* map, std::string* error) {
  return config::ParseFile(
      path, [map](const std::string& text, std::string* why) { return ParseNodeNameMap(text, map, why); }, error);
}

Fabric WithNames(const Fabric& fabric, const NodeNameMap& map) {
  if (map.empty()) return fabric;
  std::vector<Node> nodes = fabric.nodes();
  for (auto& n : nodes) {
    if (auto it = map.find(n.guid); it != map.end()) n.description = it->second;
  }
  return Fabric(std::move(nodes));
}

}  // namespace ibfabric::topology
