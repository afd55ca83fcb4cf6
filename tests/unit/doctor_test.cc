// The preflight's lines (exporter/doctor.h Judge), line by line, from
// findings laid out as a clean fabric, an M_Key-protected one without the
// key, and a port on a limited P_Key would give them.

#include "exporter/doctor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ibfabric::exporter {
namespace {

using transport::MadOutcome;
using transport::MgmtClass;

DoctorFindings Clean() {
  DoctorFindings f;
  f.local.ca_name = "mlx5_0";
  f.local.port = 1;
  f.local.lid = 1;
  f.local.state = 4;
  f.local.pkeys = {0xffff};
  f.local.pkey = 0xffff;
  f.sm_lid = 3;
  f.local_smp = MadOutcome::kOk;
  f.local_gmp = MadOutcome::kOk;
  f.walked = true;
  f.switches = 2;
  f.cas = 2;
  f.walk_smps = 29;
  f.walk_seconds = 0.01;
  for (const auto& [lid, name] :
       {std::pair<std::uint16_t, const char*>{2, "ib-spine01"}, {3, "ib-leaf01"}, {4, "cn0002"}}) {
    DoctorFindings::Sampled s;
    s.access = {lid, MadOutcome::kOk, MadOutcome::kOk, 0};
    s.name = name;
    f.sample.push_back(s);
  }
  f.traps = {{64, true}, {65, true}, {128, true}, {144, true}};
  f.pma_asked = f.pma_answered = 4;
  f.pma_extended = 4;
  f.pma_one_gmp = 2;
  f.vendor_asked = f.vendor_answered = 2;
  f.sweep_gmps = 12;
  f.sweep_smps = 3;
  f.table_smps = 14;
  f.walk_gmps = 4;
  return f;
}

TEST(DoctorTest, ACleanFabricPasses) {
  const DoctorReport r = Judge(Clean());
  EXPECT_EQ(r.lines, (std::vector<std::string>{
                         "ok    local port: mlx5_0 port 1, LID 1, SM at LID 3",
                         "ok    p_key: index 0 = 0xffff, the full-member default",
                         "ok    smps: this host's NodeInfo answers",
                         "ok    walk: 2 switches, 2 CAs in 0.01 s, 29 SMPs",
                         "ok    sample: SMPs answer at 3 of 3, GMPs at 3",
                         "ok    traps: the SA at LID 3 accepts traps 64, 65, 128, 144 (whether it delivers them is "
                         "judged while running: infiniband_exporter_traps_delivering)",
                         "info  capabilities: PortCountersExtended at 4 of 4 PMAs (4 asked), every counter in one GMP "
                         "at 2; vendor SMPs (AdaptiveRoutingInfo) answered by 2 of 2 NVIDIA switches; RS-FEC counters "
                         "are not read by this version",
                         "info  mad load: a sweep: ~12 GMPs and ~3 SMPs; a full walk: 29 SMPs for the graph, ~14 for "
                         "the tables and 4 GMPs",
                         "ok    verdict: pass",
                     }));
  EXPECT_EQ(r.exit_code, 0);
}

TEST(DoctorTest, AnMKeyFabricWithoutTheKeyFailsAndSaysWhatToGive) {
  DoctorFindings f = Clean();
  f.local_smp = MadOutcome::kTimeout;
  f.walked = false;
  f.sample.clear();
  for (const auto& [lid, name] : {std::pair<std::uint16_t, const char*>{1, "this host"}, {3, "the SM"}}) {
    DoctorFindings::Sampled s;
    s.access = {lid, MadOutcome::kTimeout, MadOutcome::kOk, 0};
    s.name = name;
    f.sample.push_back(s);
  }
  const DoctorReport r = Judge(f);
  ASSERT_EQ(r.lines.size(), 7u);
  EXPECT_EQ(r.lines[2],
            "fail  smps: this host's NodeInfo (SMP) goes unanswered while its PMA (GMP) answers: the fabric looks "
            "M_Key-protected; give the SM's M_Key with --ib.m-key-file=FILE");
  EXPECT_EQ(r.lines[3], "fail  walk: not possible: this host's NodeInfo does not answer");
  EXPECT_EQ(r.lines[4],
            "fail  sample: SMPs answer at 0 of 2, GMPs at 2: this host (LID 1) and 1 more drop SMPs but answer GMPs: "
            "M_Key protection; give the SM's M_Key with --ib.m-key-file=FILE");
  EXPECT_EQ(r.lines[6], "fail  verdict: fail (the exporter would not see the fabric from here)");
  EXPECT_EQ(r.exit_code, 1);
  // A key given that is not the SM's says so.
  f.m_key_given = true;
  EXPECT_NE(Judge(f).lines[2].find("the M_Key given does not match the SM's"), std::string::npos);
}

TEST(DoctorTest, ALimitedPKeyIsDegradedAndNamesTheFullIndex) {
  DoctorFindings f = Clean();
  f.local.pkeys = {0x7fff, 0xffff};
  f.local.pkey_index = 0;
  f.local.pkey = 0x7fff;
  f.sample[2].access.gmp = MadOutcome::kTimeout;
  const DoctorReport r = Judge(f);
  EXPECT_EQ(r.lines[1],
            "warn  p_key: index 0 = 0x7fff, a limited member: the PMAs of other limited members will not answer, each "
            "request raises a Bad P_Key trap at the SM, and their traps do not reach this exporter "
            "(--ib.pkey-index=1 is 0xffff)");
  EXPECT_EQ(r.lines[4],
            "warn  sample: SMPs answer at 3 of 3, GMPs at 2: the PMA of cn0002 (LID 4) does not answer on the limited "
            "P_Key 0x7fff: a limited member drops it (see p_key)");
  EXPECT_EQ(r.lines.back(), "warn  verdict: degraded (2 warnings)");
  EXPECT_EQ(r.exit_code, 3);
}

TEST(DoctorTest, TrapsNotAskedByChoiceAreInformationNotAWarning) {
  DoctorFindings f = Clean();
  f.traps.clear();
  f.traps_asked = false;
  const DoctorReport r = Judge(f);
  EXPECT_EQ(r.lines[5], "info  traps: not asked (--sm.no-traps): changes are found by the sweeps' rotation");
  EXPECT_EQ(r.exit_code, 0);
  f.traps_asked = true;  // asked, but no SM known
  f.sm_lid = 0;
  EXPECT_EQ(Judge(f).lines[5], "warn  traps: no SM known to ask: changes are found by the sweeps' rotation");
  f.sm_lid = 3;
  f.traps = {{64, true}, {65, true}, {128, false}, {144, false}};
  EXPECT_EQ(Judge(f).lines[5],
            "warn  traps: the SA at LID 3 refuses or does not answer traps 128, 144: changes are found by the sweeps' "
            "rotation");
}

// A port that is not Active: said first, everything by LID skipped; no SM
// known is a warning; NVIDIA switches that answer no vendor SMP are one.
TEST(DoctorTest, APortNotActiveIsOneFailureAndWhatCannotBeAskedIsSkipped) {
  DoctorFindings f = Clean();
  f.local.state = 2;  // Init
  f.local.lid = 0;
  f.walked = false;
  f.local_gmp = MadOutcome::kTimeout;
  f.sample.clear();
  f.traps.clear();
  const DoctorReport r = Judge(f);
  EXPECT_EQ(r.lines, (std::vector<std::string>{
                         "fail  local port: mlx5_0 port 1 is not Active with a LID (state 2, LID 0): check the cable "
                         "and that an SM runs",
                         "ok    p_key: index 0 = 0xffff, the full-member default",
                         "ok    smps: this host's NodeInfo answers",
                         "fail  walk: skipped: the local port is not Active",
                         "fail  sample: skipped: the local port is not Active",
                         "fail  traps: skipped: the local port is not Active",
                         "fail  verdict: fail (the exporter would not see the fabric from here)",
                     }));
  EXPECT_EQ(r.exit_code, 1);

  DoctorFindings g = Clean();
  g.sm_lid = 0;
  g.vendor_answered = 0;
  g.traps.clear();
  const DoctorReport w = Judge(g);
  EXPECT_EQ(w.lines[0], "warn  local port: mlx5_0 port 1, LID 1, no SM known (MasterSMLID 0)");
  EXPECT_EQ(w.lines[5], "warn  traps: no SM known to ask: changes are found by the sweeps' rotation");
  EXPECT_EQ(w.lines[7],
            "warn  vendor smps: none of 2 NVIDIA switches answers AdaptiveRoutingInfo: whether they route adaptively "
            "is unknown, and routing balance is judged on the static tables; check that their firmware answers "
            "vendor SMPs");
  EXPECT_EQ(w.lines.back(), "warn  verdict: degraded (3 warnings)");
  EXPECT_EQ(w.exit_code, 3);
}

// A limited P_Key with no full entry says how to get one.
TEST(DoctorTest, ALimitedOnlyPortSaysHowToBecomeAFullMember) {
  DoctorFindings f = Clean();
  f.local.pkeys = {0x7fff};
  f.local.pkey = 0x7fff;
  EXPECT_NE(Judge(f).lines[1].find("no entry is 0xffff: make this port a full member in the SM's partitions.conf"),
            std::string::npos);
}

// A split port says where each kind of MAD leaves from; an agent that
// did not register is a line of its own: the directed-route SMP or PMA
// agent a failure, the others a warning, and SMPs are then not judged as
// unanswered (none could be sent).
TEST(DoctorTest, AgentsThatDidNotRegisterAreEachALine) {
  DoctorFindings split = Clean();
  split.local.smi_ca_name = "smi0";
  split.local.smi_port = 1;
  const DoctorReport s = Judge(split);
  ASSERT_GE(s.lines.size(), 2u);
  EXPECT_EQ(s.lines[1],
            "info  management: SMPs leave from smi0 port 1 (the SMI sub-device sharing the port's GUID), GMPs from "
            "mlx5_0 port 1");
  EXPECT_EQ(s.exit_code, 0);

  DoctorFindings f = Clean();
  f.local_smp = MadOutcome::kSendError;
  f.walked = false;
  f.agent_problems = {{MgmtClass::kSubnLidRouted, "cannot register the LID-routed SMP agent (class 0x01) on mlx5_0"},
                      {MgmtClass::kSubnDirectRoute, "cannot register the directed-route SMP agent (class 0x81)"}};
  const DoctorReport r = Judge(f);
  ASSERT_GE(r.lines.size(), 5u);
  EXPECT_EQ(r.lines[1], "warn  mad agents: cannot register the LID-routed SMP agent (class 0x01) on mlx5_0");
  EXPECT_EQ(r.lines[2], "fail  mad agents: cannot register the directed-route SMP agent (class 0x81)");
  EXPECT_EQ(r.lines[4], "fail  smps: none can be sent from this port (see mad agents)");
  EXPECT_EQ(r.exit_code, 1);

  f.agent_problems = {{MgmtClass::kSubnAdm, "cannot register the SubnAdm (SA) agent (class 0x03)"}};
  f.local_smp = MadOutcome::kOk;
  const DoctorReport sa = Judge(f);
  EXPECT_EQ(sa.lines[1], "warn  mad agents: cannot register the SubnAdm (SA) agent (class 0x03)");
  EXPECT_EQ(sa.lines[3], "ok    smps: this host's NodeInfo answers");
}

}  // namespace
}  // namespace ibfabric::exporter
