#include "tests/testbed/prom_text.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace ibfabric::testbed {

Scrape Scrape::Parse(const std::string& text) {
  Scrape s;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream c(line);
      std::string hash, kind, name, type;
      c >> hash >> kind >> name >> type;
      if (kind == "TYPE") s.types_[name] = type;
      continue;
    }
    Sample smp;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') smp.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string key;
        while (i < line.size() && line[i] != '=') key += line[i++];
        if (i + 1 >= line.size() || line[i + 1] != '"') {
          throw std::runtime_error("line " + std::to_string(n) + ": bad label in: " + line);
        }
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        ++i;  // closing quote
        if (i < line.size() && line[i] == ',') ++i;
        smp.labels[key] = value;
      }
      ++i;  // closing brace
    }
    const std::string rest = line.substr(i);
    char* end = nullptr;
    smp.value = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) throw std::runtime_error("line " + std::to_string(n) + ": no value in: " + line);
    s.samples_.push_back(std::move(smp));
  }
  return s;
}

std::vector<Sample> Scrape::Find(const std::string& name, const Labels& match) const {
  std::vector<Sample> out;
  for (const auto& smp : samples_) {
    if (smp.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = smp.labels.find(k);
      if (it == smp.labels.end() || it->second != v) {
        ok = false;
        break;
      }
    }
    if (ok) out.push_back(smp);
  }
  return out;
}

std::optional<double> Scrape::Value(const std::string& name, const Labels& match) const {
  auto v = Find(name, match);
  if (v.size() != 1) return std::nullopt;
  return v.front().value;
}

double Scrape::Sum(const std::string& name, const Labels& match) const {
  double total = 0;
  for (const auto& s : Find(name, match)) total += s.value;
  return total;
}

}  // namespace ibfabric::testbed
