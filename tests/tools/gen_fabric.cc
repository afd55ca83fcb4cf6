// gen_fabric: prints a fat tree in ibsim's net format.
//   gen_fabric [--leaves N] [--spines N] [--hosts-per-leaf N]
//              [--links-per-pair N] [--radix N] [--rate 4xQDR]
//              [--pods N --cores N [--core-links N]]
//              [--units N [--servers N] [--devices mlx5_0,mlx5_1,...] [--hca-ports 1|2]]
//              [--hcas-per-host N]
//              [--move NODE[PORT]=LEAF]...
//              [--leaf-link I,J]... [--degraded NODE[PORT]=RATE]...
//              [--trained NODE[PORT]=RATE]... [--personality DIR]
//              [--model PATTERN=MODEL]... [--plant LINE]...
// --pods makes a three-tier tree: --leaves and --spines are per pod, the
// spines are the pods' aggregation switches, --cores a multiple of --spines.
// --units makes a rail-optimized tree (one leaf per unit and rail; servers
// with one HCA per device, "gpu0001 mlx5_0"); with --pods too, --units
// counts every pod's, a pod's --spines are its rail spines (a multiple of
// the rails, each leaf cabled to its own rail's) and --cores a multiple of
// the rail spines a rail (tests/testbed/fat_tree.h); --hcas-per-host names hosts
// so on a plain tree; --move recables the cable at NODE[PORT] to a spare
// port of LEAF (a wrong rail, another unit).
// --leaf-link cables leaf I to leaf J on spare ports (a miswired cable);
// --degraded sets the width and speed of the cable at NODE[PORT] (e.g.
// ib-leaf02[9]=1xQDR) as the net file's note: its ends enabled for that
// only. --trained makes the cable at NODE[PORT] run at RATE (1x, 1xQDR)
// below what its ends allow: written with --personality to
// DIR/personality.json, the state of the hardware-personality preload
// (tests/tools/hw_personality.cc) that clients of the fabric load; with it
// --model gives the nodes PATTERN matches (a glob) a hardware model
// (tests/model/personalities.h: quantum-2, connectx-7, ...) and --plant
// plants a personality console line ("fec ib-leaf04 1 lanes_per_second=..",
// docs/testing.md). All repeat; see tests/testbed/fat_tree.h.

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/testbed/fat_tree.h"
#include "tests/testbed/personality.h"

int main(int argc, char** argv) {
  ibfabric::testbed::FatTreeSpec spec;
  std::string personality_dir;
  std::vector<ibfabric::testbed::PersonalityRule> models;
  std::vector<std::string> plants;
  std::map<std::string, int*> ints{{"--leaves", &spec.leaves},
                                   {"--spines", &spec.spines},
                                   {"--hosts-per-leaf", &spec.hosts_per_leaf},
                                   {"--links-per-pair", &spec.links_per_pair},
                                   {"--radix", &spec.radix},
                                   {"--pods", &spec.pods},
                                   {"--cores", &spec.cores},
                                   {"--core-links", &spec.core_links},
                                   {"--units", &spec.rails.units},
                                   {"--servers", &spec.rails.servers},
                                   {"--hca-ports", &spec.rails.ports_per_hca},
                                   {"--hcas-per-host", &spec.hcas_per_host}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "gen_fabric: " << a << " needs a value\n";
      return 2;
    }
    const std::string v = argv[++i];
    static const std::regex kLeafLink(R"((\d{1,5}),(\d{1,5}))");
    static const std::regex kDegraded(R"(([^\[\]=\s]+)\[(\d{1,3})\]=(\S+))");
    std::smatch m;
    if (a == "--rate") {
      spec.rate = v;
    } else if (a == "--leaf-link") {
      if (!std::regex_match(v, m, kLeafLink)) {
        std::cerr << "gen_fabric: --leaf-link wants I,J (two leaf numbers), not '" << v << "'\n";
        return 2;
      }
      spec.leaf_links.emplace_back(std::stoi(m[1].str()), std::stoi(m[2].str()));
    } else if (a == "--degraded" || a == "--trained") {
      if (!std::regex_match(v, m, kDegraded)) {
        std::cerr << "gen_fabric: " << a << " wants NODE[PORT]=RATE (e.g. ib-leaf02[9]=1xQDR), not '" << v << "'\n";
        return 2;
      }
      (a == "--degraded" ? spec.degraded : spec.trained)[{m[1].str(), std::stoi(m[2].str())}] = m[3].str();
    } else if (a == "--personality") {
      personality_dir = v;
    } else if (a == "--model") {
      std::vector<ibfabric::testbed::PersonalityRule> rule;
      std::string why;
      const auto eq = v.find('=');
      if (eq == std::string::npos ||
          !ibfabric::testbed::ParsePersonalityFile(v.substr(0, eq) + " " + v.substr(eq + 1) + "\n", &rule, &why)) {
        std::cerr << "gen_fabric: --model wants PATTERN=MODEL (e.g. ib-leaf04=quantum-2), not '" << v << "'"
                  << (why.empty() ? "" : ": " + why) << "\n";
        return 2;
      }
      models.insert(models.end(), rule.begin(), rule.end());
    } else if (a == "--plant") {
      plants.push_back(v);
    } else if (a == "--devices") {
      static const std::regex kDevices(R"([A-Za-z0-9_]+(,[A-Za-z0-9_]+)*)");
      if (!std::regex_match(v, kDevices)) {
        std::cerr << "gen_fabric: --devices wants device names separated by commas, not '" << v << "'\n";
        return 2;
      }
      for (std::size_t at = 0; at <= v.size();) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        spec.rails.devices.push_back(v.substr(at, comma - at));
        at = comma + 1;
      }
    } else if (a == "--move") {
      static const std::regex kMove(R"(([^\[\]=]+)\[(\d{1,3})\]=(\S+))");
      if (!std::regex_match(v, m, kMove)) {
        std::cerr << "gen_fabric: --move wants NODE[PORT]=LEAF (e.g. \"gpu0001 mlx5_3[1]=ib-su01-leaf03\"), not '" << v
                  << "'\n";
        return 2;
      }
      spec.moves.push_back({{m[1].str(), std::stoi(m[2].str())}, m[3].str()});
    } else if (auto it = ints.find(a); it != ints.end()) {
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || n < 0 || n > 100000) {
        std::cerr << "gen_fabric: invalid value for " << a << ": '" << v << "'\n";
        return 2;
      }
      *it->second = static_cast<int>(n);
    } else {
      std::cerr << "gen_fabric: unknown flag " << a << "\n";
      return 2;
    }
  }
  if ((!spec.trained.empty() || !models.empty() || !plants.empty()) && personality_dir.empty()) {
    std::cerr << "gen_fabric: --trained, --model and --plant need --personality DIR (where the preload's state goes)\n";
    return 2;
  }
  try {
    const std::string net = ibfabric::testbed::FatTree::Generate(spec).NetFile();
    if (!personality_dir.empty()) {
      std::map<std::pair<std::string, int>, std::string> trained;
      for (const auto& [e, rate] : spec.trained) trained[{e.node, e.port}] = rate;
      std::string error;
      auto hw = ibfabric::testbed::PlantTrained(net, trained, personality_dir, nullptr, &error, models);
      if (!hw) {
        std::cerr << "gen_fabric: " << error << "\n";
        return 2;
      }
      for (const std::string& line : plants) {
        if (!hw->Command(line, &error)) {
          std::cerr << "gen_fabric: --plant '" << line << "': " << error << "\n";
          return 2;
        }
      }
    }
    std::cout << net;
  } catch (const std::invalid_argument& e) {
    std::cerr << "gen_fabric: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
