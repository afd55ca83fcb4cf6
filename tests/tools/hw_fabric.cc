// hw_fabric: a simulated fabric with hardware personalities, by hand.
//
//   build/tests/hw_fabric NETFILE PERSONALITYFILE [ATTACH_NODE]
//
// Starts ibsim on NETFILE, brings the subnet up with opensm, gives each
// node the model PERSONALITYFILE assigns (tests/testbed/personality.h),
// prints the environment a client needs (export lines for a shell), then
// "ready", and reads commands from standard input until it ends: "hw tick
// NODE N", "hw busy NODE N", "hw redirect NODE QP", "hw ar NODE 1|0", "hw
// mkey NODE|all KEY", "hw link NODE PORT [width=W] [speed=S]", "hw clear
// NODE" plant on the personalities; any other line goes to ibsim's console
// (PerformanceSet, Unlink, ...).
// docs/testing.md shows a session.

#include <cstdio>
#include <iostream>
#include <string>

#include "tests/testbed/personality.h"
#include "tests/testbed/sim_fabric.h"

int main(int argc, char** argv) {
  using namespace ibfabric::testbed;
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: hw_fabric NETFILE PERSONALITYFILE [ATTACH_NODE]\n");
    return 2;
  }
  std::string error;
  std::vector<PersonalityRule> rules;
  if (!ParsePersonalityFile(ReadFile(argv[2]), &rules, &error)) {
    std::fprintf(stderr, "hw_fabric: %s: %s\n", argv[2], error.c_str());
    return 2;
  }
  SimOptions options;
  if (argc == 4) options.attach = argv[3];
  const std::string net = ReadFile(argv[1]);
  if (net.empty()) {
    std::fprintf(stderr, "hw_fabric: cannot read %s\n", argv[1]);
    return 2;
  }
  auto sim = SimFabric::Start(net, options, &error);
  if (!sim) {
    std::fprintf(stderr, "hw_fabric: %s\n", error.c_str());
    return 1;
  }
  auto hw = HardwareFabric::Make(net, rules, sim->dir(), &error);
  if (!hw || !hw->ResolveLids(*sim, &error)) {
    std::fprintf(stderr, "hw_fabric: %s\n", error.c_str());
    return 1;
  }
  for (const auto& [name, value] : hw->ClientEnv(*sim)) std::printf("export %s=\"%s\"\n", name.c_str(), value.c_str());
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.rfind("hw ", 0) == 0) {
      if (!hw->Command(line.substr(3), &error)) std::printf("error: %s\n", error.c_str());
    } else if (!line.empty()) {
      bool ok = false;
      std::printf("%s", sim->Console(line, &ok).c_str());
      if (!ok) std::printf("error: ibsim did not take '%s'\n", line.c_str());
    }
    std::printf("> ");
    std::fflush(stdout);
  }
  return 0;
}
