#include "config/yaml.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace ibfabric::config::yaml {

void Keys(const YAML::Node& map, const std::string& where, const std::map<std::string, KeyHandler>& handlers) {
  if (!map.IsMap()) throw Bad{LineOf(map), where + " must be a map of keys"};
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    auto it = handlers.find(key);
    if (it == handlers.end()) {
      std::string known;
      for (const auto& [k, h] : handlers) known += (known.empty() ? "" : ", ") + k;
      throw Bad{LineOf(kv.first), "unknown key '" + key.substr(0, 40) + "' in " + where + " (known: " + known + ")"};
    }
    const std::string path = where == "the file" ? key : where + "." + key;
    it->second(kv.second, path);
  }
}

double Number(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) throw Bad{LineOf(n), key + " must be a number"};
  const std::string& s = n.Scalar();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
    throw Bad{LineOf(n), key + " must be a number, not '" + s.substr(0, 40) + "'"};
  }
  if (v < 0) throw Bad{LineOf(n), key + " must not be negative"};
  return v;
}

int Count(const YAML::Node& n, const std::string& key, int min, int max) {
  const double v = Number(n, key);
  if (v != std::floor(v) || v < min || v > max) {
    throw Bad{LineOf(n), key + " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max)};
  }
  return static_cast<int>(v);
}

std::string String(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) throw Bad{LineOf(n), key + " must be a string"};
  return n.Scalar();
}

bool Boolean(const YAML::Node& n, const std::string& key) {
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  if (s == "true") return true;
  if (s == "false") return false;
  throw Bad{LineOf(n), key + " must be true or false"};
}

bool Parse(const std::string& text, const std::function<void(const YAML::Node& root)>& body, std::string* error) {
  try {
    body(YAML::Load(text));
  } catch (const Bad& b) {
    *error = "line " + std::to_string(b.line) + ": " + b.why;
    return false;
  } catch (const YAML::Exception& e) {
    *error = "line " + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg;
    return false;
  }
  return true;
}

}  // namespace ibfabric::config::yaml
