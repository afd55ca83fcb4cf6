#pragma once
// Helpers shared by every YAML file read (--alerts.config,
// --web.config.file, --partitions.plan, YAML cabling plans): strict key
// handling, so that an unknown or misspelt
// key is an error naming its line, never silently ignored.

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <string>

namespace ibfabric::config::yaml {

// Thrown by the helpers with the node where the problem is; Parse turns it
// into "line N: why".
struct Bad {
  int line;
  std::string why;
};

inline int LineOf(const YAML::Node& n) { return n.Mark().line + 1; }

using KeyHandler = std::function<void(const YAML::Node& value, const std::string& path)>;

// Calls handlers[key] for each key of `map`, with the dotted path of the key
// ("bad_cable.bit_error_rate"); unknown keys throw Bad listing the known ones.
// `where` is "the file" for the top level.
void Keys(const YAML::Node& map, const std::string& where, const std::map<std::string, KeyHandler>& handlers);

// A finite, non-negative number.
double Number(const YAML::Node& n, const std::string& key);
// A whole number in [min, max].
int Count(const YAML::Node& n, const std::string& key, int min, int max);
// A scalar string (numbers and booleans are scalars too).
std::string String(const YAML::Node& n, const std::string& key);
// true/false.
bool Boolean(const YAML::Node& n, const std::string& key);

// Loads `text` and hands the root to `body`, which throws Bad on a bad
// value. False with "line N: reason" on Bad or on text that is not YAML.
bool Parse(const std::string& text, const std::function<void(const YAML::Node& root)>& body, std::string* error);

}  // namespace ibfabric::config::yaml
