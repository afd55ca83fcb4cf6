// Every shipped alert rule in a Prometheus configured as each shipped
// deployment configures it, all three watching one simulated fabric at
// once:
// - fabric: one exporter with the default --scope=fabric (a small fabric,
//   the systemd unit on one host), scraped as
//   deploy/prometheus/scrape-systemd.yml says;
// - kubernetes: the DaemonSet's exporter on every host and the
//   StatefulSet's inter-switch shards (their scope flags read from
//   deploy/kubernetes/, two replicas), scraped as
//   deploy/prometheus/scrape-kubernetes.yml says (its DNS names replaced
//   by the pods' addresses);
// - systemd: the unit's --scope=local on every host and --scope=inter-switch
//   on one (deploy/systemd/ibfabric_exporter.default), scrape-systemd.yml;
// - sharded: the Kubernetes exporters scraped by two Prometheus shards
//   (deploy/prometheus/prometheus-shard.yml: hashmod over the targets,
//   infiniband-rules.yml) that send what the jobs rules join by remote
//   write to a global server (prometheus-global.yml,
//   infiniband-jobs-rules.yml); its alerts are those of all three.
// Host 1 runs a Slurm job (its local exporter's mapping directory and
// sysfs) whose cable is bad: the jobs rule names it once wherever local
// exporters are scraped.
// ibsim takes 10 clients, so the DaemonSet and the systemd unit share the
// per-host exporters (the same binary with the same flags on each host).
// The rules file is used as shipped but for its `for:` durations and the
// staleness threshold (minutes to seconds). Each planted fault fires its
// rule exactly once in each deployment, naming the cable, nothing else
// fires, and treydock-style joins find one series per port: a bad cable,
// congestion, a flapping link, a degraded and a miswired cable, a link
// down between switches of two shards, a host's own cable pulled, the
// subnet managers' failover and loss, two masters, a master that does not
// sweep, a fabric that hangs (every exporter
// stale), a host that answers nothing (unreachable where read from the far
// side; its own exporters stale), a switch that answers nothing
// (unreachable once, though two shards read it) and an exporter that stops.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/host_sysfs.h"
#include "tests/testbed/prometheus_server.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The rules with every "for: Nm" as "for: Ns" and the staleness threshold
// of 300 s as 5 s.
std::string FastRules() {
  return std::regex_replace(ForInSeconds(SourceFile("deploy/prometheus/infiniband-rules.yml")),
                            std::regex(R"(_timestamp_seconds > 300)"), "_timestamp_seconds > 5");
}

std::string FastJobsRules() { return ForInSeconds(SourceFile("deploy/prometheus/infiniband-jobs-rules.yml")); }

// The `- --flag=value` arguments of a shipped manifest that say what an
// exporter reads (--scope, --shard, --topology.plan).
std::vector<std::string> ScopeArgs(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex kArg(R"(- (--(?:scope|shard)=\S+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kArg); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

// One deployment: its exporters (shared with another deployment where
// both run the same exporter on a host) and its Prometheus.
struct Deployment {
  std::string name;
  std::vector<std::pair<std::string, ExporterProcess*>> exporters;  // role -> exporter
  std::unique_ptr<PrometheusServer> prometheus;                     // sharded: the global server
  std::vector<std::unique_ptr<PrometheusServer>> shards;

  std::string Targets() const {
    std::string out;
    for (const auto& [role, e] : exporters) {
      out += (out.empty() ? "" : ", ") + ("'127.0.0.1:" + std::to_string(e->port()) + "'");
    }
    return out;
  }
  // alertname -> the label sets of its firing alerts.
  std::map<std::string, std::vector<json>> Firing() const {
    std::map<std::string, std::vector<json>> out;
    std::vector<const PrometheusServer*> servers{prometheus.get()};
    for (const auto& s : shards) servers.push_back(s.get());
    for (const PrometheusServer* p : servers) {
      std::string error;
      const auto r = p->Query("ALERTS{alertstate=\"firing\"}", &error);
      if (!r) continue;
      for (const json& x : *r) out[x["metric"].value("alertname", "")].push_back(x["metric"]);
    }
    return out;
  }
};

// A cable as "a[p] - b[q]", its two ends in order, whichever end an
// alert calls `node`.
std::string Cable(const std::string& a, const std::string& b) { return a < b ? a + " - " + b : b + " - " + a; }
std::string Cable(const Endpoint& a, const Endpoint& b) {
  return Cable(a.node + "[" + std::to_string(a.port) + "]", b.node + "[" + std::to_string(b.port) + "]");
}
// What a firing alert names: its cable; else its condition (SMs), kind
// (topology), node GUID (unreachable), job (a fault hurts it), instance
// (the exporter's own alerts) or nothing (a failover).
std::string Subject(const json& a) {
  if (a.contains("remote_node")) {
    return Cable(a.value("node", "") + "[" + a.value("port", "") + "]",
                 a.value("remote_node", "") + "[" + a.value("remote_port", "") + "]");
  }
  for (const char* k : {"condition", "kind", "guid", "hpc_job"}) {
    if (a.contains(k)) return a.value(k, "");
  }
  return a.value("alertname", "").rfind("InfinibandExporter", 0) == 0 ? a.value("instance", "") : "";
}
// alertname -> what each firing alert names, repeats kept.
using Fired = std::map<std::string, std::multiset<std::string>>;
Fired Reduce(const std::map<std::string, std::vector<json>>& firing) {
  Fired out;
  for (const auto& [name, all] : firing) {
    for (const json& a : all) out[name].insert(Subject(a));
  }
  return out;
}
std::string Show(const Fired& f) {
  std::string out;
  for (const auto& [name, subjects] : f) {
    out += "  " + name + ":";
    for (const auto& x : subjects) out += " {" + x + "}";
    out += "\n";
  }
  return out;
}

class DeploymentsTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    const FatTreeSpec clean = Spec(2, 2, 2, 1, 8);
    const FatTree plain = FatTree::Generate(clean);
    FatTreeSpec spec = clean;
    spec.trained[plain.LeafUplink(2, 1)] = "1x";  // below what both ends allow
    spec.leaf_links.push_back({1, 2});            // miswired: a leaf cabled to a leaf
    StartFabric(spec);
    if (!sim_) return;
    dir_ = MakeTempDir("deployments");
    WriteFile(dir_ + "/alerts.yaml", kPagingAlerts);
    std::string error;
    SimFabric::SmOptions master;  // a resident master that sweeps every second
    master.sweep_seconds = 1;
    master.priority = 10;
    sm_ = sim_->StartSubnetManager(master, &error).release();
    ASSERT_NE(sm_, nullptr) << error;
    StartDeployments();
    // The faults, each on its own cable.
    ramps_.push_back(new Ramp(tree_->LeafHostPort(1), "PortCounters.SymbolErrorCounter", 10, 60000));
    // 20 M ticks a step, 5-10 steps a second: 8-16 % of the time at QDR, well
    // inside the warning band (5-25 %). PortXmitWait is 32 bits.
    ramps_.push_back(new Ramp(tree_->LeafHostPort(3), "PortCounters.PortXmitWait", 20'000'000, 4'000'000'000ULL));
    // LinkDownedCounter is 8 bits: the ramp starts again below its limit.
    ramps_.push_back(new Ramp(tree_->LeafUplink(1, 1), "PortCounters.LinkDownedCounter", 1, 200));
    Console("Unlink " + At(tree_->LeafUplink(2, 2)));
  }
  static void TearDownTestSuite() {
    for (Ramp* r : ramps_) delete r;
    ramps_.clear();
    deployments_.clear();
    exporters_.clear();
    delete standby_;
    standby_ = nullptr;
    delete sysfs_;
    sysfs_ = nullptr;
    delete sm_;
    sm_ = nullptr;
    if (!dir_.empty()) RemoveTree(dir_);
    StopFabric();
  }

  static ExporterProcess* Exporter(const std::string& host, std::vector<std::string> args) {
    args.insert(args.end(), {"--sweep.interval=1s", "--discovery.interval=1m", "--mad.timeout=20ms",
                             "--sm.stall-after=10s", "--alerts.config=" + dir_ + "/alerts.yaml"});
    std::string error;
    auto e = ExporterProcess::Start(*sim_, args, &error, {}, FabricEnv({{"SIM_HOST", host}}));
    EXPECT_NE(e, nullptr) << host << ": " << error;
    host_of_[e.get()] = host;
    // Walked and swept before any fault is planted.
    if (e) {
      EXPECT_TRUE(e->WaitForSweeps(1, seconds(60))) << host << ": " << e->Log();
    }
    exporters_.push_back(std::move(e));
    return exporters_.back().get();
  }

  static void StartDeployments() {
    const auto daemonset = ScopeArgs(SourceFile("deploy/kubernetes/daemonset.yaml"));
    const auto statefulset = ScopeArgs(SourceFile("deploy/kubernetes/fabric-statefulset.yaml"));
    ASSERT_EQ(daemonset, (std::vector<std::string>{"--scope=local"}));
    ASSERT_EQ(statefulset.size(), 2u);
    const std::string unit_flags = SourceFile("deploy/systemd/ibfabric_exporter.default");
    ASSERT_NE(unit_flags.find("IBFABRIC_EXPORTER_ARGS=\"--scope=local\""), std::string::npos);
    ASSERT_NE(unit_flags.find("IBFABRIC_EXPORTER_ARGS=\"--scope=inter-switch"), std::string::npos);

    auto fabric = std::make_unique<Deployment>();
    fabric->name = "fabric";
    fabric->exporters.emplace_back("fabric", Exporter(tree_->Host(1), {}));
    auto k8s = std::make_unique<Deployment>();
    k8s->name = "kubernetes";
    auto unit = std::make_unique<Deployment>();
    unit->name = "systemd";
    const Scrape walked = fabric->exporters.front().second->ScrapeMetrics();
    for (const auto& host : tree_->hosts()) {
      std::vector<std::string> args = daemonset;
      if (host == tree_->Host(1)) {
        // Slurm job 4242 on its HCA (the prolog's mapping file).
        sysfs_ = new HostSysfs();
        sysfs_->AddHca("mlx5_0", std::stoull(FabricSuite::NodeGuid(walked, host), nullptr, 16), host + " mlx5_0",
                       "0000:3b:00.0");
        std::filesystem::create_directories(dir_ + "/jobs");
        WriteFile(dir_ + "/jobs/mlx5_0", "4242\n");
        args.insert(args.end(), {"--host.sysfs=" + sysfs_->root(), "--host.proc=" + sysfs_->proc(),
                                 "--host.job-mapping-dir=" + dir_ + "/jobs"});
      }
      ExporterProcess* local = Exporter(host, args);
      k8s->exporters.emplace_back("local " + host, local);
      unit->exporters.emplace_back("local " + host, local);
    }
    for (int i = 0; i < 2; ++i) {
      std::vector<std::string> args;
      for (const std::string& a : statefulset) {
        args.push_back(std::regex_replace(a, std::regex(R"(\$\(SHARD\)/\d+)"), std::to_string(i) + "/2"));
      }
      k8s->exporters.emplace_back("shard " + std::to_string(i), Exporter(tree_->Host(1 + i), args));
    }
    unit->exporters.emplace_back("inter-switch", Exporter(tree_->Host(3), {"--scope=inter-switch"}));
    for (const auto& e : exporters_) ASSERT_NE(e, nullptr);

    const std::string rules = FastRules();
    const std::map<std::string, std::string> both{{"infiniband-rules.yml", rules},
                                                  {"infiniband-jobs-rules.yml", FastJobsRules()}};
    auto fast = [](std::string c) {
      c = std::regex_replace(c, std::regex(R"((scrape|evaluation)_interval: 30s)"), "$1_interval: 1s");
      return std::regex_replace(c, std::regex(R"(scrape_timeout: 25s)"), "scrape_timeout: 1s");
    };
    std::string error;
    const std::string systemd_config = fast(SourceFile("deploy/prometheus/scrape-systemd.yml"));
    for (Deployment* d : {fabric.get(), unit.get()}) {
      const std::string c = std::regex_replace(systemd_config, std::regex(R"(- targets:\n(\s+- \S+\n)+)"),
                                               "- targets: [" + d->Targets() + "]\n");
      ASSERT_NE(c, systemd_config) << "no targets list in scrape-systemd.yml";
      d->prometheus = PrometheusServer::Start(c, both, &error);
      ASSERT_NE(d->prometheus, nullptr) << error << "\n" << c;
    }
    const std::string k8s_config = fast(SourceFile("deploy/prometheus/scrape-kubernetes.yml"));
    const std::string kc =
        std::regex_replace(k8s_config, std::regex(R"(dns_sd_configs:[\s\S]*?refresh_interval: \S+\n)"),
                           "static_configs:\n      - targets: [" + k8s->Targets() + "]\n");
    ASSERT_NE(kc, k8s_config) << "no dns_sd_configs in scrape-kubernetes.yml";
    k8s->prometheus = PrometheusServer::Start(kc, both, &error);
    ASSERT_NE(k8s->prometheus, nullptr) << error << "\n" << kc;

    // The same exporters, scraped by two shards and joined on a global server.
    auto sharded = std::make_unique<Deployment>();
    sharded->name = "sharded";
    sharded->exporters = k8s->exporters;
    const auto no_alerting = [](const std::string& c) {
      return std::regex_replace(c, std::regex(R"(alerting:\n(\s+\S.*\n)+)"), "");
    };
    const std::string global_config = no_alerting(fast(SourceFile("deploy/prometheus/prometheus-global.yml")));
    // Every server finds both rule files beside its configuration, as in
    // /etc/prometheus: a configuration that named the wrong one would load it.
    sharded->prometheus = PrometheusServer::Start(global_config, both, &error, {"--web.enable-remote-write-receiver"});
    ASSERT_NE(sharded->prometheus, nullptr) << error << "\n" << global_config;
    const std::string shard_config = no_alerting(fast(SourceFile("deploy/prometheus/prometheus-shard.yml")));
    for (int i = 0; i < 2; ++i) {
      std::string c = std::regex_replace(shard_config, std::regex(R"(file_sd_configs:\n\s+- files:\n\s+- \S+\n)"),
                                         "static_configs:\n      - targets: [" + k8s->Targets() + "]\n");
      c = std::regex_replace(c, std::regex(R"(regex: '0')"), "regex: '" + std::to_string(i) + "'");
      c = std::regex_replace(c, std::regex(R"(url: http://\S+/api/v1/write)"),
                             "url: http://127.0.0.1:" + std::to_string(sharded->prometheus->port()) +
                                 "/api/v1/write\n    queue_config: {batch_send_deadline: 1s}");
      sharded->shards.push_back(PrometheusServer::Start(c, both, &error));
      ASSERT_NE(sharded->shards.back(), nullptr) << error << "\n" << c;
    }
    // Each exporter scraped by exactly one shard (once both have taken in
    // their targets: discovery hands them over within seconds).
    std::multiset<std::string> scraped;
    std::string split;
    WaitUntil(
        [&] {
          scraped.clear();
          split.clear();
          for (const auto& s : sharded->shards) {
            const auto targets = s->Api("/api/v1/targets?state=active", &error);
            if (!targets) return false;
            split += (split.empty() ? "" : " + ") + std::to_string((*targets)["activeTargets"].size());
            for (const json& t : (*targets)["activeTargets"]) scraped.insert(t["labels"].value("instance", ""));
          }
          return scraped.size() >= k8s->exporters.size();
        },
        seconds(30), std::chrono::milliseconds(250));
    std::printf("sharded: %s of %zu targets\n", split.c_str(), k8s->exporters.size());
    ASSERT_EQ(scraped.size(), k8s->exporters.size()) << split;
    ASSERT_EQ(std::set<std::string>(scraped.begin(), scraped.end()).size(), scraped.size()) << split;
    deployments_.push_back(std::move(fabric));
    deployments_.push_back(std::move(k8s));
    deployments_.push_back(std::move(unit));
    deployments_.push_back(std::move(sharded));
  }

  // Waits until every deployment fires exactly `want` (topology findings
  // aside: each kind once, `kinds` among them, the same kinds everywhere),
  // then checks that it still does a few evaluations later (no duplicate
  // arriving late). `only` names alerts that fire in that deployment alone.
  static void ExpectEverywhere(const Fired& want, const std::set<std::string>& kinds = {},
                               const std::map<std::string, Fired>& only = {}) {
    auto wanted = [&](const Deployment& d) {
      Fired w = want;
      if (auto it = only.find(d.name); it != only.end()) {
        for (const auto& [name, subjects] : it->second) w[name].insert(subjects.begin(), subjects.end());
      }
      return w;
    };
    auto matches = [&](const Deployment& d, std::string* why) {
      const auto firing = d.Firing();
      const Fired all = Reduce(firing);
      Fired got = all;
      const std::multiset<std::string> found = got["InfinibandTopologyFinding"];
      got.erase("InfinibandTopologyFinding");
      // Failing fires per phase that fails (its `collector` label): once per exporter.
      if (auto f = got.find("InfinibandExporterFailing"); f != got.end()) {
        const std::set<std::string> exporters(f->second.begin(), f->second.end());
        f->second = {exporters.begin(), exporters.end()};
      }
      const std::set<std::string> once(found.begin(), found.end());
      bool ok = got == wanted(d) && once.size() == found.size();
      for (const auto& k : kinds) ok = ok && once.count(k) > 0;
      if (why) {
        *why = d.name + " fires:\n" + Show(all) + "want:\n" + Show(wanted(d)) + "from:\n";
        for (const auto& [name, alerts] : firing) {
          for (const json& a : alerts) {
            *why +=
                "  " + name + " " + Subject(a) + " " + a.value("instance", "") + " " + a.value("collector", "") + "\n";
          }
        }
        for (const auto& [role, e] : d.exporters) {
          *why += "  " + role + " 127.0.0.1:" + std::to_string(e->port()) + "\n";
          // Each exporter's congestion trees with their evidence (an extra
          // hot spot on a down uplink failed two fresh-clone runs).
          const json alerts = json::parse(e->Get("/api/v1/alerts"), nullptr, false);
          if (alerts.is_object() && alerts.contains("congestion_trees") && !alerts["congestion_trees"].empty())
            *why += "    congestion_trees: " + alerts["congestion_trees"].dump() + "\n";
        }
      }
      return ok;
    };
    for (const auto& d : deployments_) {
      std::string why;
      EXPECT_TRUE(WaitUntil([&] { return matches(*d, nullptr); }, seconds(90), std::chrono::milliseconds(500)))
          << (matches(*d, &why), why);
    }
    // Findings raise their alert after a while (`for:`), not at the same
    // sweep in every deployment, and those from the forwarding tables are
    // of the tables each exporter last read (opensm reprograms them, a
    // switch at a time, as links change): the same kinds everywhere,
    // eventually.
    auto kinds_of = [](const Deployment& d) { return Reduce(d.Firing())["InfinibandTopologyFinding"]; };
    const auto same_kinds = [&](std::string* why) {
      for (const auto& d : deployments_) {
        if (kinds_of(*d) == kinds_of(*deployments_.front())) continue;
        if (why) {
          *why = d->name + " finds other topology kinds than " + deployments_.front()->name + ":";
          for (const auto& k : kinds_of(*d)) *why += " " + k;
          *why += " against";
          for (const auto& k : kinds_of(*deployments_.front())) *why += " " + k;
        }
        return false;
      }
      return true;
    };
    std::string why_kinds;
    EXPECT_TRUE(WaitUntil([&] { return same_kinds(nullptr); }, seconds(60), std::chrono::milliseconds(500)))
        << (same_kinds(&why_kinds), why_kinds);
    // A few evaluations later: still exactly `want`, nothing late.
    std::this_thread::sleep_for(seconds(3));
    for (const auto& d : deployments_) {
      std::string why;
      EXPECT_TRUE(matches(*d, &why)) << why;
    }
    EXPECT_TRUE(WaitUntil([&] { return same_kinds(nullptr); }, seconds(60), std::chrono::milliseconds(500)))
        << (same_kinds(&why_kinds), why_kinds);
  }

  static Fired CableFaults() {
    const Endpoint flapping = tree_->LeafUplink(1, 1), degraded = tree_->LeafUplink(2, 1),
                   down = tree_->LeafUplink(2, 2);
    std::string miswired;
    for (const auto& c : tree_->cables()) {
      if (c.a.node.find("leaf") != std::string::npos && c.b.node.find("leaf") != std::string::npos) {
        miswired = Cable(c.a, c.b);
      }
    }
    return {{"InfinibandBadCable", {Cable(tree_->HostPort(1), tree_->LeafHostPort(1))}},
            {"InfinibandCongestionHotSpot", {Cable(tree_->HostPort(3), tree_->LeafHostPort(3))}},
            {"InfinibandFlappingLink", {Cable(flapping, *tree_->Peer(flapping))}},
            {"InfinibandDegradedLink", {Cable(degraded, *tree_->Peer(degraded))}},
            {"InfinibandLinkDown", {Cable(down, *tree_->Peer(down))}},
            // The same cable as the fat tree's pattern misses it, at the
            // ports the other leaf and spine use (Alertmanager mutes it
            // under the down link).
            {"InfinibandMissingCable", {Cable(down, *tree_->Peer(down))}},
            {"InfinibandMiswiredCable", {miswired}}};
  }
  static std::string NodeGuid(const std::string& node) {
    return FabricSuite::NodeGuid(deployments_.front()->exporters.front().second->ScrapeMetrics(), node);
  }

  static inline std::vector<std::unique_ptr<Deployment>> deployments_;
  static inline std::vector<std::unique_ptr<ExporterProcess>> exporters_;
  static inline std::map<const ExporterProcess*, std::string> host_of_;  // the host each runs on
  static inline std::vector<Ramp*> ramps_;
  static inline Process* standby_ = nullptr;
  static inline HostSysfs* sysfs_ = nullptr;  // host 1's
  static inline std::string dir_;
  // What fires everywhere as the tests go on, and what in one deployment only.
  static inline Fired want_;
  static inline std::map<std::string, Fired> only_;
  static inline const std::set<std::string> kKinds{"same_tier_link"};
};

// treydock-style joins on (guid, port) and (guid): one series per port in
// every deployment (no many-to-many, nothing lost). The sharded one's global
// server holds only what the jobs rules join; its shards scrape the
// Kubernetes exporters, each whole, as the Kubernetes deployment does.
TEST_F(DeploymentsTest, JoinsFindOneSeriesPerPort) {
  for (const auto& d : deployments_) {
    if (!d->shards.empty()) continue;
    auto count = [&](const std::string& expr) {
      std::string error;
      const auto r = d->prometheus->Query("count(" + expr + ")", &error);
      EXPECT_TRUE(r) << d->name << ": " << expr << ": " << error;
      return r && !r->empty() ? std::stod((*r)[0]["value"][1].get<std::string>()) : -1.0;
    };
    // Every cabled port that is up once its exporter has walked: 4 host
    // cables, 3 leaf-spine cables (the fourth is down), a leaf-leaf cable.
    ASSERT_TRUE(WaitUntil(
        [&] {
          return count("infiniband_hca_uplink_info") == tree_->hosts().size() &&
                 count("infiniband_switch_uplink_info") >= 12;
        },
        seconds(60), std::chrono::milliseconds(500)))
        << d->name << ": " << count("infiniband_hca_uplink_info") << " HCA and "
        << count("infiniband_switch_uplink_info") << " switch uplinks";
    // Each pair compared in one query (one evaluation time): two queries
    // apart may see an exporter's walk add ports between them.
    const auto differ = [&](const std::string& a, const std::string& b) {
      std::string error;
      const auto r = d->prometheus->Query("count(" + a + ") - count(" + b + ")", &error);
      EXPECT_TRUE(r) << d->name << ": " << a << " vs " << b << ": " << error;
      return r && !r->empty() ? std::stod((*r)[0]["value"][1].get<std::string>()) : -1.0;
    };
    for (const std::string kind : {"switch", "hca"}) {
      const std::string ports = "infiniband_" + kind + "_port_symbol_error_total";
      const std::string uplinks = "infiniband_" + kind + "_uplink_info";
      EXPECT_EQ(differ(uplinks, "count by (guid, port) (" + uplinks + ")"), 0) << d->name << " " << uplinks;
      EXPECT_EQ(differ(ports + " * on (guid, port) group_left (uplink) " + uplinks, uplinks), 0) << d->name;
      EXPECT_EQ(differ(ports + " * on (guid) group_left () infiniband_" + kind + "_info", ports), 0) << d->name;
    }
  }
}

// The cable faults, each once, from whichever exporter reads the cable;
// then a host's own cable pulled: down once (in the local deployments from
// the host's own exporter, which reads its port locally); the fabric
// exporter, which reads the host from the far side, also finds the host
// unreachable (Alertmanager mutes that under the down link).
TEST_F(DeploymentsTest, EachCableFaultFiresOnceEverywhere) {
  want_ = CableFaults();
  want_["InfinibandNoStandbySM"] = {"no_standby"};
  // Host 1's job, hurt by its bad cable, where local exporters are read.
  for (const char* d : {"kubernetes", "systemd", "sharded"}) only_[d]["InfinibandFaultHurtsJob"] = {"4242"};
  ExpectEverywhere(want_, kKinds, only_);
  const std::string host4 = NodeGuid(tree_->Host(4));
  ASSERT_FALSE(host4.empty());
  Console("Unlink " + At(tree_->HostPort(4)));
  want_["InfinibandLinkDown"].insert(Cable(tree_->HostPort(4), tree_->LeafHostPort(4)));
  only_["fabric"]["InfinibandNodeUnreachable"] = {host4};
  ExpectEverywhere(want_, kKinds, only_);
}

// The subnet managers are watched by one exporter of each deployment: a
// standby joining, the master killed (a failover), the last SM killed.
TEST_F(DeploymentsTest, SubnetManagerConditionsFireOnceEverywhere) {
  SimFabric::SmOptions o;
  o.attach = tree_->Host(2);
  o.priority = 1;
  o.sweep_seconds = 1;
  o.standby = true;
  o.config = "sminfo_polling_timeout 500\npolling_retry_number 2\n";
  std::string error;
  standby_ = sim_->StartSubnetManager(o, &error).release();
  ASSERT_NE(standby_, nullptr) << error;
  want_.erase("InfinibandNoStandbySM");
  ExpectEverywhere(want_, kKinds, only_);
  sm_->Signal(SIGKILL);
  want_["InfinibandSMFailover"] = {""};
  want_["InfinibandNoStandbySM"] = {"no_standby"};
  ExpectEverywhere(want_, kKinds, only_);
  standby_->Signal(SIGKILL);
  // No master: no standby is not a condition of its own then.
  want_.erase("InfinibandNoStandbySM");
  want_["InfinibandNoMasterSM"] = {"no_master"};
  ExpectEverywhere(want_, kKinds, only_);
}

// Two SMs that ignore each other (opensm ignore_other_sm) both claim
// master; once one is gone the other, which never sweeps (-s 0), is a
// master that does not sweep. Fresh SM clients on hosts 1 and 3 (the dead
// SMs' slots freed first: ibsim takes 10 clients).
TEST_F(DeploymentsTest, TwoMastersAndAMasterThatDoesNotSweepFireOnceEverywhere) {
  sim_->DisconnectDeadClients();
  std::unique_ptr<Process> sms[2];
  for (int i = 0; i < 2; ++i) {
    SimFabric::SmOptions o;
    o.attach = tree_->Host(i == 0 ? 1 : 3);
    o.priority = 5 + i;
    o.sweep_seconds = 0;
    o.config = "ignore_other_sm TRUE\n";
    std::string error;
    sms[i] = sim_->StartSubnetManager(o, &error);
    ASSERT_NE(sms[i], nullptr) << error;
  }
  want_.erase("InfinibandNoMasterSM");
  want_["InfinibandMultipleMasterSMs"] = {"multiple_masters"};
  want_["InfinibandNoStandbySM"] = {"no_standby"};
  ExpectEverywhere(want_, kKinds, only_);
  sms[1]->Signal(SIGKILL);
  want_.erase("InfinibandMultipleMasterSMs");
  want_["InfinibandMasterSMNotSweeping"] = {"master_not_sweeping"};
  ExpectEverywhere(want_, kKinds, only_);
  sms[0]->Signal(SIGKILL);
  sim_->DisconnectDeadClients();
  want_.erase("InfinibandMasterSMNotSweeping");
  want_.erase("InfinibandNoStandbySM");
  want_["InfinibandNoMasterSM"] = {"no_master"};
  ExpectEverywhere(want_, kKinds, only_);
}

// A fabric that hangs (ibsim frozen: no MAD answered): every exporter of
// each deployment is stale and failing, once each; they call no node
// unreachable (nothing answers them: they cannot tell the fabric from
// themselves) and clear no fault they can no longer see. All clears when
// the fabric answers again.
TEST_F(DeploymentsTest, AHungFabricMakesEachExporterStaleOnce) {
  std::map<std::string, Fired> hung = only_;
  for (const auto& d : deployments_) {
    for (const auto& [role, e] : d->exporters) {
      const std::string instance = "127.0.0.1:" + std::to_string(e->port());
      hung[d->name]["InfinibandExporterStale"].insert(instance);
      hung[d->name]["InfinibandExporterFailing"].insert(instance);
    }
  }
  sim_->Pause();
  ExpectEverywhere(want_, kKinds, hung);
  for (const auto& d : deployments_) {
    std::string error;
    const auto sweeps = d->prometheus->Query(
        "count by (instance) (ALERTS{alertname=\"InfinibandExporterFailing\",collector=\"port_counters\"}) > 1",
        &error);
    ASSERT_TRUE(sweeps) << error;
    EXPECT_TRUE(sweeps->empty()) << d->name << ": the counter sweep failing more than once for one exporter";
  }
  sim_->Resume();
  ExpectEverywhere(want_, kKinds, only_);
}

// A host whose own port drops every MAD (ibsim's `Error` at its HCA port,
// as a hung HCA): the fabric exporter reads it from the far side and calls
// it unreachable, once. The exporters that run on that host (its
// DaemonSet/systemd one, and the StatefulSet shard placed there) reach
// nothing: stale and failing, once each, and they call nothing
// unreachable (from there a hung fabric looks the same). All clears when
// the port answers again.
TEST_F(DeploymentsTest, AHostThatAnswersNothingIsUnreachableOnceAndItsExportersStale) {
  const std::string host = tree_->Host(2);
  const std::string guid = NodeGuid(host);
  ASSERT_FALSE(guid.empty());
  std::map<std::string, Fired> only = only_;
  only["fabric"]["InfinibandNodeUnreachable"].insert(guid);
  int attached = 0;
  for (const auto& d : deployments_) {
    for (const auto& [role, e] : d->exporters) {
      if (host_of_.at(e) != host) continue;
      const std::string instance = "127.0.0.1:" + std::to_string(e->port());
      only[d->name]["InfinibandExporterStale"].insert(instance);
      only[d->name]["InfinibandExporterFailing"].insert(instance);
      ++attached;
    }
  }
  ASSERT_EQ(attached, 5);  // the local exporter in three deployments, one shard in two
  Console("Error " + At(tree_->HostPort(2)) + " 100");
  ExpectEverywhere(want_, kKinds, only);
  Console("Error " + At(tree_->HostPort(2)) + " 0");
  ExpectEverywhere(want_, kKinds, only_);
}

// A switch whose agent answers nothing (ibsim's `Error` at its port 0; it
// still forwards): unreachable once in each deployment. In the Kubernetes
// one both shards read ports of this spine; one of them states its
// health. All clears when it answers again.
TEST_F(DeploymentsTest, ASwitchThatAnswersNothingIsUnreachableOnceEverywhere) {
  const std::string spine = tree_->Spine(1);
  const std::string guid = NodeGuid(spine);
  ASSERT_FALSE(guid.empty());
  Fired want = want_;
  want["InfinibandNodeUnreachable"].insert(guid);
  Console("Error \"" + spine + "\"[0] 100");
  ExpectEverywhere(want, kKinds, only_);
  Console("Error \"" + spine + "\"[0] 0");
  ExpectEverywhere(want_, kKinds, only_);
}

// An exporter that stops: down once, in each deployment that scrapes it.
TEST_F(DeploymentsTest, AnExporterThatStopsIsDownOnce) {
  ExporterProcess* local = exporters_.at(2).get();  // host 2's, in the DaemonSet and the systemd unit
  const std::string instance = "127.0.0.1:" + std::to_string(local->port());
  local->process().Signal(SIGKILL);
  only_["kubernetes"]["InfinibandExporterDown"] = {instance};
  only_["systemd"]["InfinibandExporterDown"] = {instance};
  only_["sharded"]["InfinibandExporterDown"] = {instance};
  ExpectEverywhere(want_, kKinds, only_);
  // The fabric deployment's only exporter: down, and nothing else is known.
  ExporterProcess* fabric = exporters_.at(0).get();
  const std::string fabric_instance = "127.0.0.1:" + std::to_string(fabric->port());
  fabric->process().Signal(SIGKILL);
  const Deployment& d = *deployments_.front();
  // (A failover stays for the 30 minutes its rule looks back.)
  const Fired down{{"InfinibandExporterDown", {fabric_instance}}, {"InfinibandSMFailover", {""}}};
  EXPECT_TRUE(WaitUntil([&] { return Reduce(d.Firing()) == down; }, seconds(60), std::chrono::milliseconds(500)))
      << Show(Reduce(d.Firing()));
}

}  // namespace
}  // namespace ibfabric::testbed
