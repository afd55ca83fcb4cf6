#pragma once
// A reader of the Prometheus text exposition format, enough to assert on
// exact series: name, labels, value. Comment lines are skipped.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ibfabric::testbed {

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

class Scrape {
 public:
  // Throws std::runtime_error naming the line that does not parse.
  static Scrape Parse(const std::string& text);

  const std::vector<Sample>& samples() const { return samples_; }
  // Every sample of `name` whose labels include all of `match`.
  std::vector<Sample> Find(const std::string& name, const Labels& match = {}) const;
  // The one sample that matches, or nullopt when none or several do.
  std::optional<double> Value(const std::string& name, const Labels& match = {}) const;
  // The sum of every sample that matches (0 when none does), as PromQL's sum().
  double Sum(const std::string& name, const Labels& match = {}) const;
  // # TYPE lines: metric family -> type.
  const std::map<std::string, std::string>& types() const { return types_; }

 private:
  std::vector<Sample> samples_;
  std::map<std::string, std::string> types_;
};

}  // namespace ibfabric::testbed
