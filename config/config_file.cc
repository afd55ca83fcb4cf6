#include "config/config_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ibfabric::config {

bool ParseFile(const std::string& path, const TextParser& parse, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  std::string why;
  if (parse(ss.str(), &why)) return true;
  const std::string kLine = "line ";
  *error = why.rfind(kLine, 0) == 0 ? path + ":" + why.substr(kLine.size()) : path + ": " + why;
  return false;
}

}  // namespace ibfabric::config
