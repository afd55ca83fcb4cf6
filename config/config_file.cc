#include "config/config_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "config/text.h"

namespace ibfabric::config {

bool ParseFile(const std::string& path, const TextParser& parse, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  // Every file read here is text that ends up in names, label values and
  // JSON (YAML and JSON require UTF-8 anyway): a byte that is not UTF-8 is
  // refused here, naming its line, rather than breaking a scrape later.
  std::string why = Utf8Problem(text);
  if (why.empty() && parse(text, &why)) return true;
  const std::string kLine = "line ";
  *error = why.rfind(kLine, 0) == 0 ? path + ":" + why.substr(kLine.size()) : path + ": " + why;
  return false;
}

}  // namespace ibfabric::config
