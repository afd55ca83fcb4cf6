#pragma once
// blast_radius: what each fault hurts. For every active bad or flapping
// cable and every congestion root this exporter alerts on, the routes
// between host ports that cross it (topology/blast_radius.h: a cable's
// either end as the port a route leaves by, a root its port), from the
// forwarding tables the routing collector read, so only where this
// exporter reads them (fabric scope, or shard 0: topology/scope.h
// reports_topology). Where adaptive routing is on at a switch, those are
// the tables' static routes, and said so. Each fault traced once, again
// when the tables, the graph (Cycle::fabric_generation) or the switches
// routing adaptively change; at the sweep, after link_health. No MADs.
// A trace costs about (destinations routed out of the fault's ports) x
// (host ports) steps (topology/blast_radius.h).
//
// Part: BlastReport under "blast_radius". Metrics, for each fault (its
// cable's labels as on infiniband_alert_active, `cause`, `cable` as the
// rules' label_join names it, `routing` "static" or "adaptive"):
// infiniband_alert_blast_radius_routes (host-port pairs whose route
// crosses it) and infiniband_alert_blast_radius_ports (host ports sending
// or receiving one); and one infiniband_blast_radius_port_faults{node_guid,
// port,host,faults} per host port a fault hurts (HurtPorts): how many faults,
// `faults` naming them ("bad_cable ib-spine01[3] - ib-leaf02[1]", "; "
// between, in order), one series a port so that rules can join the jobs
// (infiniband_host_port_job_info) on node_guid and port.
//
// Route: GET /api/v1/whatif?cable=GUID:PORT|switch=GUID[&limit=N]: what
// taking that cable or switch out now would cost, computed per request
// from the snapshot (no MAD): the host routes that leave by its ports (the
// first N hop by hop), the hosts cut off or losing a port, the rails
// broken, the leaf uplinks the tables use before and after
// (topology/blast_radius.h UplinksUsed), the jobs on those hosts where the
// fabric_jobs part knows them (collectors/parts/fabric_jobs.h), and "safe
// now" or "wait" with why ("wait for job 4242 (cn0005 loses every path)";
// not knowing the jobs, wait while any host would lose a port); without
// parameters, for each active alert's cable.

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "collectors/framework/collector_info.h"
#include "topology/blast_radius.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kBlastRadiusCollector = "blast_radius";

struct BlastEntry {
  Cause cause = Cause::kBadCable;
  topology::Link cable;
  std::optional<topology::PortRef> root;  // congestion: the root port, the one egress
  topology::BlastRadius radius;
  bool adaptive = false;  // adaptive routing on at a switch the routes leave by: static routes
};
struct BlastReport {
  std::vector<std::shared_ptr<const BlastEntry>> entries;  // in the order of the active alerts (shared with the cache)
  // The entry of an alert (cause and cable), or null.
  const BlastEntry* Find(Cause cause, const topology::Link& cable) const;
};

// The host ports a fault hurts, for the jobs on them: where the fault is
// at a host's own cable (an end, or the root, is a host's port or faces
// one), that host's port: all its traffic crosses it, and other hosts'
// only where they talk to it; else, between switches, every host port
// sending or receiving a route across it.
std::vector<topology::PortRef> HurtPorts(const topology::Fabric& fabric, const BlastEntry& e);

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo BlastRadiusCollectorInfo();
std::unique_ptr<Collector> MakeBlastRadiusCollector(const CollectorOptions& options);
void RenderBlastRadius(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
