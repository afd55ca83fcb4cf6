// gen_fabric: prints a two-tier fat tree in ibsim's net format.
//   gen_fabric [--leaves N] [--spines N] [--hosts-per-leaf N]
//              [--links-per-pair N] [--radix N] [--rate 4xQDR]

#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "tests/testbed/fat_tree.h"

int main(int argc, char** argv) {
  ibfabric::testbed::FatTreeSpec spec;
  std::map<std::string, int*> ints{{"--leaves", &spec.leaves},
                                   {"--spines", &spec.spines},
                                   {"--hosts-per-leaf", &spec.hosts_per_leaf},
                                   {"--links-per-pair", &spec.links_per_pair},
                                   {"--radix", &spec.radix}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "gen_fabric: " << a << " needs a value\n";
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--rate") {
      spec.rate = v;
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
  try {
    std::cout << ibfabric::testbed::FatTree::Generate(spec).NetFile();
  } catch (const std::invalid_argument& e) {
    std::cerr << "gen_fabric: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
