#pragma once
// Hardware personalities on a simulated fabric: which node is which real
// device (tests/model/personalities.h), written as the state file the
// preload tests/tools/hw_personality.cc reads, and what a test plants on
// them while clients run (a Tick, Busy answers, a cable that trained
// narrower or slower), as ibsim's console plants counters.
//
// A personality file assigns models to nodes, one rule a line, the first
// that matches a node's name (its NodeDescription in the net file, or its
// ID in the "H-<guid>" form) winning; '#' starts a comment:
//
//   ib-spine*        quantum-3
//   ib-leaf*         quantum-2
//   cn*              connectx-7  max_width=2x
//   H-00000000000003*  aggregation-node
//
// Thread-safety: none; one test thread.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/testbed/process.h"
#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {

struct PersonalityRule {
  std::string pattern;    // fnmatch(3) glob over node names
  std::string model;      // a name from model::Personalities()
  std::string max_width;  // "": the model's widths; "2x": up to 2x
};
// One line error naming the line on a bad rule or an unknown model.
bool ParsePersonalityFile(const std::string& text, std::vector<PersonalityRule>* rules, std::string* error);

class HardwareFabric {
 public:
  // The nodes and cables of `net_text` (ibsim's net format) with the model
  // each rule gives; the state is written to `dir`/personality.json.
  static std::unique_ptr<HardwareFabric> Make(const std::string& net_text, const std::vector<PersonalityRule>& rules,
                                              const std::string& dir, std::string* error);

  // The LIDs the SM gave out, read with ibnetdiscover through `sim`, so
  // that LID-routed MADs of any client find their node; writes the state.
  bool ResolveLids(const SimFabric& sim, std::string* error);

  // Plants, each written at once: the node's PortSamplesControl.Tick; its
  // next `count` PMA requests (per client process) answered Busy; the
  // cable at `port` trained to `width` ("1x") and/or `speed` ("HDR"), at
  // both ends; everything planted on the node gone. PlantBusy's `attr`:
  // only PMA requests of that attribute (0: any).
  bool PlantTick(const std::string& node, std::uint8_t tick, std::string* error);
  bool PlantBusy(const std::string& node, int count, std::string* error, std::uint16_t attr = 0);
  // The node's PMA moves to queue pair `qp` (0: back to QP1): a request
  // to its QP1 is answered with the Redirect status and a ClassPortInfo
  // naming its LID, `qp` and the Q_Key kRedirectQkey (IBTA 13.5.3.3); one
  // to `qp` with that Q_Key is answered as QP1 would be. `to_gid`: the
  // ClassPortInfo names RedirectLID 0 and a RedirectGID instead (an agent
  // reached through a GRH).
  bool PlantRedirect(const std::string& node, std::uint32_t qp, std::string* error, bool to_gid = false);
  // The port's QP1Dropped (which ibsim does not keep), in PortCounters and
  // PortCountersExtended, and the node's PMA ClassPortInfo then says
  // IsQP1DropSupported (CapabilityMask bit 15). A modelled node only.
  bool PlantQp1Dropped(const std::string& node, int port, std::uint64_t value, std::string* error);
  static constexpr std::uint32_t kRedirectQkey = 0x00c0ffee;
  // Adaptive routing on or off at a switch whose model has it, as an SM
  // (UFM, opensm's AR engines) would set it: what AdaptiveRoutingInfo says.
  bool PlantAdaptiveRouting(const std::string& node, bool on, std::string* error);
  // The node's SMA protects its ports with `m_key` (0: no more), as an SM
  // with M_Key protection level 2 leaves it (opensm(8)): an SMP whose
  // M_Key differs is dropped unanswered; GMPs are not concerned. `node`
  // "all": every node of the fabric.
  bool PlantMKey(const std::string& node, std::uint64_t m_key, std::string* error);
  // The node's ports' P_Key table as the SM left it (empty: not modelled,
  // every P_Key matches). A PMA request from this process goes out with
  // the entry of the attached node's table at the request's P_Key index
  // and is dropped unanswered where no entry of the target's table
  // matches it (the same 15 bits, one of the two a full member: IBTA
  // 10.9.3), as the target's port drops it (raising a Bad P_Key trap at the
  // SM, which is not modelled). Set the same table in ibsim (smp_set
  // pkeys) so that its SMPs, and the sysfs umad2sim makes, show it.
  bool PlantPKeys(const std::string& node, const std::vector<std::uint16_t>& pkeys, std::string* error);
  bool PlantLink(const std::string& node, int port, const std::string& width, const std::string& speed,
                 std::string* error);
  // What the port's PortExtendedSpeedsCounters (RS-FEC layout) reads:
  // corrected symbols per lane (their sum the port's), corrected and
  // uncorrectable blocks; `mode` its PortInfoExtended.FECModeActive where
  // given (else the one its link speed runs). Only where the model claims
  // them (a Quantum switch); the counters stay until planted again.
  // `lanes_per_second` and `uncorrectable_per_second` go on counting from
  // the planting (a cable going bad at a steady rate).
  struct FecPlant {
    std::optional<std::uint16_t> mode;
    std::vector<std::uint32_t> lanes;
    std::uint32_t corrected_blocks = 0;
    std::uint32_t uncorrectable_blocks = 0;
    std::vector<std::uint32_t> lanes_per_second;
    std::uint32_t uncorrectable_per_second = 0;
    // The rates rise `step_factor` times every `step_seconds`, `steps`
    // times, then stay (a cable going bad step by step; 0 steps: steady),
    // the first step `step_after` seconds after the planting (unset: one
    // step_seconds).
    std::uint32_t step_factor = 1;
    std::uint32_t step_seconds = 0;
    std::uint32_t steps = 0;
    std::optional<std::uint32_t> step_after;
    std::int64_t since_ms = 0;  // when it was planted (wall clock), set by PlantFec
    // Set by PlantFec: which planting this is, and the plantings it counts
    // on from (new rates, no counts: a cable getting worse): a clear the
    // exporter sent (PortExtendedSpeedsCounters Set) holds across those
    // and is forgotten at any other.
    std::uint64_t serial = 0;
    std::vector<std::uint64_t> lineage;
  };
  bool PlantFec(const std::string& node, int port, const FecPlant& fec, std::string* error);
  // A switch's environment as its registers answer it (a model that claims
  // AccessRegister: the Quantum switches): the ASIC's temperature, a fan's
  // speed, fans failed (under their limit, 0 RPM), a power supply "ok" or
  // "failed" and its watts. Unplanted: 45 C, 11000 RPM, every supply OK at
  // 290 W.
  struct EnvPlant {
    std::optional<double> temperature;
    std::map<int, int> fan_rpm;
    std::vector<int> failed_fans;
    std::map<int, std::string> psus;
    std::map<int, int> watts;
  };
  bool PlantEnv(const std::string& node, const EnvPlant& env, std::string* error);
  // The module at a port (PDDR page 3) where not the default NVIDIA OSFP
  // optical module at 45 C: its vendor, part and serial number, revision,
  // temperature and alarm threshold (C), type and identifier (PDDR's
  // codes), length (its code), rx and tx power on every lane (W). Empty:
  // the default again.
  struct ModulePlant {
    std::map<std::string, std::string> text;  // vendor, pn, sn, rev
    std::map<std::string, double> numbers;    // temperature, high, type, identifier, length, rx, tx
  };
  bool PlantModule(const std::string& node, int port, const ModulePlant& module, std::string* error);
  // The node's registers in band off (its GeneralInfo says no
  // AccessRegister, which answers "unsupported": older firmware, or a
  // VS_Key the exporter does not hold) or on again (its model's).
  bool PlantRegisters(const std::string& node, bool on, std::string* error);
  bool Clear(const std::string& node, std::string* error);
  // One console line: "fec NODE PORT [mode=N] [lanes=N,..] [corrected_blocks=N]
  // [uncorrectable_blocks=N] [lanes_per_second=N,..] [uncorrectable_per_second=N] [step_factor=N
  // step_seconds=N steps=N [step_after=N]]", "tick NODE N", "busy NODE N
  // [ATTR]", "redirect NODE QP [gid]", "qp1 NODE PORT N", "ar NODE 1|0", "mkey NODE|all KEY", "pkeys NODE PKEY,...",
  // "link NODE PORT [width=W] [speed=S]", "env NODE [temperature=C] [fan=T:RPM].. [failed_fans=T,..]
  // [psu=I:ok|failed].. [watts=I:W]..", "registers NODE on|off", "module NODE PORT [vendor=S] [pn=S] [sn=S] [rev=S]
  // [temperature=C] [high=C] [type=N] [identifier=N] [length=N] [rx=W] [tx=W]", "clear NODE".
  bool Command(const std::string& line, std::string* error);

  // The node's LID (a CA's first port's) as ResolveLids found it; 0: none.
  std::uint16_t LidOf(const std::string& node) const;

  // The environment of a client on `sim`: umad2sim, then the preload.
  Env ClientEnv(const SimFabric& sim) const;
  // The same less umad2sim, for ExporterProcess::Start (which puts an
  // LD_PRELOAD it is given after umad2sim's).
  Env PreloadEnv() const;
  const std::string& state_path() const { return path_; }

 private:
  struct Node {
    std::string id;           // as the net file names it
    std::string description;  // the comment form's NodeDescription, else the id
    bool is_switch = false;
    std::string model, max_width;
    std::map<int, std::pair<std::string, int>> ports;  // port -> (peer id, peer port)
    std::vector<std::uint16_t> lids;
    std::optional<std::uint8_t> tick;
    int busy = 0;
    std::uint16_t busy_attr = 0;
    std::uint64_t busy_serial = 0;
    std::uint32_t redirect_qp = 0;
    bool redirect_to_gid = false;
    std::map<int, std::uint64_t> qp1_dropped;
    bool adaptive_routing = false;
    std::uint64_t m_key = 0;
    std::vector<std::uint16_t> pkeys;
    std::map<int, std::pair<std::string, std::string>> plants;  // port -> (width, speed)
    std::map<int, FecPlant> fec;
    EnvPlant env;
    bool registers_off = false;
    std::map<int, ModulePlant> modules;
  };
  Node* Find(const std::string& name, std::string* error);
  bool Write(std::string* error) const;

  std::string path_;
  std::string attach_;  // the first node of the file: ibsim's default SIM_HOST
  std::vector<Node> nodes_;
  std::uint64_t serial_ = 0;
};

// The environment of a client on `sim` whose HCA port is split as a
// multi-plane ConnectX-8's is (tests/tools/split_smi.cc): `gsi` names the
// parent device, `smi` its SMI sub-device ("": none was created); the
// personalities of `hw` too where given. For RunCommand, and for
// ExporterProcess::Start (its LD_PRELOAD names umad2sim: taken whole).
Env SplitSmiEnv(const SimFabric& sim, const HardwareFabric* hw, const std::string& gsi, const std::string& smi);

// A hardware fabric over the fabric of `net_text` (models by `rules`;
// none by default), its state in `dir`, with each cable of `trained`
// (port -> "1x", "1xQDR", "QDR") planted to run at that: what a plain
// simulated fabric needs for a link below what both its ends allow
// (ibsim's note sets the enabled width instead). With `sim` its LIDs are
// resolved; without, the preload learns them from the PortInfo answers it
// sees.
std::unique_ptr<HardwareFabric> PlantTrained(const std::string& net_text,
                                             const std::map<std::pair<std::string, int>, std::string>& trained,
                                             const std::string& dir, const SimFabric* sim, std::string* error,
                                             const std::vector<PersonalityRule>& rules = {});

}  // namespace ibfabric::testbed
