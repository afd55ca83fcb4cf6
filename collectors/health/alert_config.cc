#include "collectors/health/alert_config.h"

#include <functional>
#include <map>
#include <vector>

#include "config/config_file.h"
#include "config/values.h"
#include "config/yaml.h"
#include "topology/link_rate.h"

namespace ibfabric::collectors {

namespace yaml = config::yaml;
namespace {

using yaml::Bad;
using yaml::Count;
using yaml::Keys;
using yaml::LineOf;
using yaml::Number;

void Level(const YAML::Node& n, const std::string& key, std::optional<double>* out) {
  if (n.IsNull()) {
    out->reset();
    return;
  }
  *out = Number(n, key);
}

std::function<void(const YAML::Node&, const std::string&)> Levels(Threshold* t, double* minimum = nullptr,
                                                                  const char* minimum_key = nullptr) {
  return [t, minimum, minimum_key](const YAML::Node& n, const std::string& where) {
    std::map<std::string, std::function<void(const YAML::Node&, const std::string&)>> h{
        {"warning", [t](const YAML::Node& v, const std::string& k) { Level(v, k, &t->warning); }},
        {"critical", [t](const YAML::Node& v, const std::string& k) { Level(v, k, &t->critical); }}};
    if (minimum) h[minimum_key] = [minimum](const YAML::Node& v, const std::string& k) { *minimum = Number(v, k); };
    Keys(n, where, h);
    if (t->warning && t->critical && *t->warning > *t->critical) {
      throw Bad{LineOf(n), where + ": warning must not be above critical"};
    }
  };
}

// bad_cable.ber_levels: a list of rows, each {speed, fec, asic, raw,
// effective}, which replaces NVIDIA's table (ber_levels.h) whole.
void BerLevels(const YAML::Node& n, const std::string& where, std::vector<BerRow>* rows) {
  if (!n.IsSequence()) throw Bad{LineOf(n), where + " must be a list of {speed, fec, asic, raw, effective}"};
  rows->clear();
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node r = n[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    BerRow row;
    bool has_speed = false;
    Keys(r, at,
         {{"speed",
           [&](const YAML::Node& v, const std::string& k) {
             row.speed = topology::ParseSpeed(v.IsScalar() ? v.Scalar() : "");
             has_speed = row.speed != topology::Speed::kUnknown;
             if (!has_speed)
               throw Bad{LineOf(v), k + " must be a speed: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR"};
           }},
          {"fec",
           [&](const YAML::Node& v, const std::string& k) {
             const auto c = ParseFecClass(v.IsScalar() ? v.Scalar() : "");
             if (!c) throw Bad{LineOf(v), k + " must be any, none, rs, ll_rs or plr"};
             row.fec = *c;
           }},
          {"asic",
           [&](const YAML::Node& v, const std::string& k) {
             const std::string s = v.IsScalar() ? v.Scalar() : "";
             if (s == "7nm") {
               row.asic = AsicProcess::k7nm;
             } else if (s == "16nm") {
               row.asic = AsicProcess::k16nm;
             } else if (s == "unknown") {
               row.asic = AsicProcess::kUnknown;
             } else if (s != "any") {
               throw Bad{LineOf(v), k + " must be 7nm, 16nm, unknown or any"};
             }
           }},
          {"raw", Levels(&row.raw)},
          {"effective", Levels(&row.effective)}});
    if (!has_speed) throw Bad{LineOf(r), at + ": speed is required"};
    rows->push_back(row);
  }
}

std::function<void(const YAML::Node&, const std::string&)> SeverityOf(Severity* s) {
  return [s](const YAML::Node& n, const std::string& where) {
    Keys(n, where, {{"severity", [s](const YAML::Node& v, const std::string& k) {
                       const std::string x = v.IsScalar() ? v.Scalar() : "";
                       if (x == "warning") {
                         *s = Severity::kWarning;
                       } else if (x == "critical") {
                         *s = Severity::kCritical;
                       } else {
                         throw Bad{LineOf(v), k + " must be warning or critical"};
                       }
                     }}});
  };
}

}  // namespace

bool ParseAlertConfig(const std::string& text, AlertConfig* config, std::string* error) {
  AlertConfig c;
  // The plain FEC levels given without ber_levels apply everywhere, as they
  // did before the table (a site's copper levels keep their effect).
  bool plain_levels = false, table = false;
  const bool ok = yaml::Parse(
      text,
      [&c, &plain_levels, &table](const YAML::Node& root) {
        if (!root.IsNull()) {
          Keys(root, "the file",
               {{"window",
                 [&](const YAML::Node& n, const std::string& k) {
                   std::chrono::milliseconds d{};
                   if (!n.IsScalar() || !config::ParseDuration(n.Scalar(), &d) || d.count() < 100 ||
                       d > std::chrono::hours(24)) {
                     throw Bad{LineOf(n), k + " must be a duration from 100ms to 24h, such as 5m"};
                   }
                   c.window = d;
                 }},
                {"raise_after",
                 [&](const YAML::Node& n, const std::string& k) { c.raise_after = Count(n, k, 1, 1000); }},
                {"clear_after",
                 [&](const YAML::Node& n, const std::string& k) { c.clear_after = Count(n, k, 1, 1000); }},
                {"keep_cleared",
                 [&](const YAML::Node& n, const std::string& k) {
                   c.keep_cleared = static_cast<std::size_t>(Count(n, k, 0, 100000));
                 }},
                {"bad_cable",
                 [&](const YAML::Node& n, const std::string& k) {
                   Keys(n, k,
                        {{"symbol_errors_per_second", Levels(&c.symbol_errors)},
                         {"link_error_recoveries_per_second", Levels(&c.link_error_recoveries)},
                         {"rcv_errors_per_second", Levels(&c.rcv_errors)},
                         {"local_link_integrity_errors_per_second", Levels(&c.local_link_integrity_errors)},
                         {"excessive_buffer_overrun_errors_per_second", Levels(&c.excessive_buffer_overrun_errors)},
                         {"bit_error_rate", Levels(&c.bit_error_rate, &c.bit_error_rate_min_bits, "min_bits")},
                         {"packet_drop_rate",
                          Levels(&c.packet_drop_rate, &c.packet_drop_rate_min_packets, "min_packets")},
                         {"raw_bit_error_ratio",
                          [&](const YAML::Node& v, const std::string& kk) {
                            Levels (&c.raw_bit_error_ratio)(v, kk);
                            plain_levels = true;
                          }},
                         {"effective_bit_error_ratio",
                          [&](const YAML::Node& v, const std::string& kk) {
                            Levels (&c.effective_bit_error_ratio)(v, kk);
                            plain_levels = true;
                          }},
                         {"ber_levels", [&](const YAML::Node& v, const std::string& kk) {
                            BerLevels(v, kk, &c.ber_levels);
                            table = true;
                          }}});
                 }},
                {"flapping_link",
                 [&](const YAML::Node& n, const std::string& k) {
                   Keys(n, k, {{"link_downs", Levels(&c.link_downs)}});
                 }},
                {"congestion",
                 [&](const YAML::Node& n, const std::string& k) {
                   Keys(n, k,
                        {{"xmit_wait_fraction", Levels(&c.xmit_wait_fraction)},
                         {"xmit_wait_tick_multiplier",
                          [&](const YAML::Node& v, const std::string& kk) {
                            c.xmit_wait_tick_multiplier = Number(v, kk);
                            if (*c.xmit_wait_tick_multiplier < 1 || *c.xmit_wait_tick_multiplier > 256) {
                              throw Bad{LineOf(v), kk + " must be from 1 to 256"};
                            }
                          }},
                         {"xmit_discards_per_second", Levels(&c.xmit_discards)}});
                 }},
                {"cable_degrading",
                 [&](const YAML::Node& n, const std::string& k) {
                   Keys(n, k,
                        {{"raw_bit_error_ratio_factor",
                          [&](const YAML::Node& v, const std::string& kk) {
                            if (v.IsNull()) {
                              c.degrading.factor.reset();
                              return;
                            }
                            c.degrading.factor = Number(v, kk);
                            if (*c.degrading.factor <= 1) throw Bad{LineOf(v), kk + " must be above 1 (null: off)"};
                          }},
                         {"period",
                          [&](const YAML::Node& v, const std::string& kk) {
                            std::chrono::milliseconds d{};
                            if (!v.IsScalar() || !config::ParseDuration(v.Scalar(), &d) ||
                                d < std::chrono::seconds(24) || d > std::chrono::hours(24 * 7)) {
                              throw Bad{LineOf(v), kk + " must be a duration from 24s to 168h, such as 24h"};
                            }
                            c.degrading.period = d;
                          }},
                         {"min_raw_bit_error_ratio",
                          [&](const YAML::Node& v, const std::string& kk) { c.degrading.min_raw = Number(v, kk); }}});
                 }},
                {"degraded_link", SeverityOf(&c.degraded_severity)},
                {"miswiring", SeverityOf(&c.miswiring_severity)}});
        }
      },
      error);
  if (ok && plain_levels && !table) c.ber_levels.clear();
  if (ok) *config = c;
  return ok;
}

bool LoadAlertConfig(const std::string& path, AlertConfig* config, std::string* error) {
  return config::ParseFile(
      path, [config](const std::string& text, std::string* why) { return ParseAlertConfig(text, config, why); }, error);
}

}  // namespace ibfabric::collectors
