#include "config/slurm_names.h"

#include <cctype>
#include <sstream>

namespace ibfabric::config {

std::string SlurmSafe(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool kept = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
    out += kept ? c : '_';
  }
  return out;
}

std::string FirstWordName(const std::string& description) {
  return SlurmSafe(description.substr(0, description.find(' ')));
}

bool ParseSlurmNodeNames(const std::string& text, std::map<std::string, std::string>* names, std::string* error) {
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string host, node, extra;
    if (!(words >> host)) continue;
    if (!(words >> node) || (words >> extra)) {
      *error = "line " + std::to_string(number) + ": not FABRIC_HOST SLURM_NODE";
      return false;
    }
    if (SlurmSafe(node) != node) {
      *error = "line " + std::to_string(number) + ": '" + node + "' is no Slurm node name (letters, digits, . - _)";
      return false;
    }
    if (!names->emplace(host, node).second) {
      *error = "line " + std::to_string(number) + ": " + host + " named twice";
      return false;
    }
  }
  return true;
}

}  // namespace ibfabric::config
