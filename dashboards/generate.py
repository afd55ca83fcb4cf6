#!/usr/bin/env python3
"""Writes the Grafana dashboards of dashboards/*.json.

The JSON files are what Grafana imports; this script is where they are
edited, so that the dashboards share one set of variables, one panel
shape and one naming of queries. `generate.py --check` exits 1 when a
committed file differs from what the script writes (a ctest entry runs it).

Every dashboard has a Prometheus data source variable and the filters
fabric (a target label set in the scrape config, see deploy/), switch and
node (HCA). Panel queries use only metrics this exporter exposes, and the
rule-generated ALERTS series where a panel shows firing rules.

No data source is named: Grafana's import asks for one (the DS_PROMETHEUS
input of `__inputs`, which becomes the data source variable's default), and
a provisioned dashboard (deploy/grafana/) takes the variable's first
Prometheus. The metrics each dashboard needs are listed in README.md,
between the markers, from the queries (--check fails when that list is
stale too).
"""
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DS = {"type": "prometheus", "uid": "${datasource}"}
F = 'fabric=~"$fabric"'
SW = F + ',switch=~"$switch"'
HCA = F + ',hca=~"$node"'



def kinds(label):
    """The nodes the switch and node filters let through, each variable for
    its own kind (one being All does not undo the other), as `label`."""
    return (f'label_replace(infiniband_switch_info{{{SW}}}, "{label}", "$1", "switch", "(.*)")'
            f' or label_replace(infiniband_hca_info{{{HCA}}}, "{label}", "$1", "hca", "(.*)")')


def ports(selector):
    """A per-port selector (a `node` label) kept to the filtered nodes."""
    return f'({selector} and on (fabric, node) ({kinds("node")}))'


def cables(selector):
    """A per-cable selector (`node` and `remote_node`) kept to the cables with
    an end on a filtered node."""
    return (f'({selector} and on (fabric, node) ({kinds("node")})'
            f' or {selector} and on (fabric, remote_node) ({kinds("remote_node")}))')


def variables(extra_topn=False):
    def query(name, label, expr):
        return {
            "name": name, "label": label, "type": "query", "datasource": DS,
            "query": {"query": f"label_values({expr})", "refId": name},
            "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "sort": 1,
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        }
    out = [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {"selected": False, "text": "${DS_PROMETHEUS}", "value": "${DS_PROMETHEUS}"}, "hide": 0},
        query("fabric", "Fabric", "infiniband_exporter_build_info, fabric"),
        query("switch", "Switch", 'infiniband_switch_info{fabric=~"$fabric"}, switch'),
        query("node", "Node", 'infiniband_hca_info{fabric=~"$fabric"}, hca'),
    ]
    if extra_topn:
        out.append({"name": "topn", "label": "Top N", "type": "custom", "query": "5,10,20,50",
                    "current": {"selected": True, "text": "10", "value": "10"},
                    "options": [{"selected": v == "10", "text": v, "value": v} for v in ["5", "10", "20", "50"]]})
    return {"list": out}


class Layout:
    """Places panels left to right on Grafana's 24-column grid."""

    def __init__(self):
        self.x, self.y, self.row_h, self.next_id = 0, 0, 0, 1
        self.panels = []

    def add(self, panel, w, h):
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        panel["id"] = self.next_id
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.next_id += 1
        self.x += w
        self.row_h = max(self.row_h, h)
        self.panels.append(panel)

    def row(self, title):
        if self.x:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        self.panels.append({"id": self.next_id, "type": "row", "title": title, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.next_id += 1
        self.y += 1


def target(expr, legend="", instant=False, table=False, ref="A"):
    t = {"refId": ref, "datasource": DS, "expr": expr, "legendFormat": legend or "__auto",
         "range": not instant, "instant": instant}
    if table:
        t["format"] = "table"
    return t


def panel(kind, title, targets, unit=None, description="", **extra):
    p = {"type": kind, "title": title, "description": description, "datasource": DS,
         "targets": targets, "fieldConfig": {"defaults": {}, "overrides": []}, "options": {}}
    if unit:
        p["fieldConfig"]["defaults"]["unit"] = unit
    p.update(extra)
    return p


def stat(title, expr, unit=None, description="", red_above=None):
    p = panel("stat", title, [target(expr, instant=True)], unit, description)
    if red_above is not None:
        p["fieldConfig"]["defaults"]["thresholds"] = {
            "mode": "absolute",
            "steps": [{"color": "green", "value": None}, {"color": "red", "value": red_above}]}
    p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background"}
    return p


def table(title, expr, description="", hide=("Time", "__name__", "job", "instance", "Value")):
    p = panel("table", title, [target(expr, instant=True, table=True)], description=description)
    p["transformations"] = [{"id": "organize", "options": {"excludeByName": {h: True for h in hide}}}]
    return p


def timeseries(title, targets, unit=None, description=""):
    return panel("timeseries", title, targets, unit, description)


def dashboard(uid, title, description, layout, topn=False):
    titles = [p["title"] for p in layout.panels if p["type"] != "row"]
    dupes = sorted({t for t in titles if titles.count(t) > 1})
    if dupes:
        raise SystemExit(f"{title}: panel titles must be unique: {dupes}")
    kinds_used = sorted({p["type"] for p in layout.panels if p["type"] != "row"})
    return {
        # What Grafana's import asks for, and what the dashboard needs.
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource",
                      "pluginId": "prometheus", "pluginName": "Prometheus",
                      "description": "The Prometheus that scrapes the ibfabric exporters"}],
        "__requires": [{"type": "grafana", "id": "grafana", "name": "Grafana", "version": "10.4.0"},
                       {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"}]
        + [{"type": "panel", "id": k, "name": k, "version": ""} for k in kinds_used],
        "uid": uid, "title": title, "description": description,
        "tags": ["infiniband", "ibfabric"], "timezone": "browser", "editable": True,
        "schemaVersion": 39, "version": 1, "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": variables(topn), "annotations": {"list": []},
        "links": [{"title": "InfiniBand", "type": "dashboards", "tags": ["ibfabric"], "asDropdown": True,
                   "icon": "external link", "includeVars": True, "keepTime": True, "targetBlank": False,
                   "tooltip": "The other InfiniBand dashboards", "url": ""}],
        "panels": layout.panels,
    }


def overview():
    l = Layout()
    l.row("Health")
    l.add(stat("Active alerts", f'sum(infiniband_alerts{{{F}}})', red_above=1,
               description="Alerts the exporter holds active (bad cables, flapping, degraded, congestion, miswiring)."), 4, 4)
    l.add(stat("Critical alerts", f'sum(infiniband_alerts{{{F},severity="critical"}})', red_above=1), 4, 4)
    l.add(stat("Links down", f'count(infiniband_link_up{{{F}}} == 0) or vector(0)', red_above=1,
               description="Cables seen up before that are down now."), 4, 4)
    l.add(stat("Topology findings", f'sum(infiniband_topology_findings{{{F},level!="information"}})', red_above=1,
               description="Findings that are faults (information kinds left out: docs/api.md, Finding kinds)."), 4, 4)
    l.add(stat("Switches", f'sum(infiniband_exporter_fabric_nodes{{{F},type="switch"}})'), 4, 4)
    l.add(stat("HCAs", f'sum(infiniband_exporter_fabric_nodes{{{F},type="hca"}})'), 4, 4)
    l.add(table("Active alerts by cable", cables(f'infiniband_alert_active{{{F}}} == 1'),
                "Each active alert on its cable, both ends. Details: /api/v1/alerts on the exporter."), 14, 8)
    l.add(table("Firing and pending alert rules", f'ALERTS{{alertname=~"Infiniband.*"}}',
                "Prometheus alert rules of deploy/prometheus/infiniband-rules.yml."), 10, 8)
    l.row("Topology and bandwidth")
    l.add(table("Topology findings by place", f'infiniband_topology_finding{{{F}}}',
                "Miswiring, asymmetry, degraded links from the last discovery (and the cabling plan)."), 12, 8)
    l.add(timeseries("Fabric bandwidth (switch ports, transmit)", [
        target(f'sum(rate(infiniband_switch_port_transmit_data_bytes_total{{{SW}}}[$__rate_interval]))', "transmit"),
        target(f'sum(rate(infiniband_switch_port_receive_data_bytes_total{{{SW}}}[$__rate_interval]))', "receive", ref="B"),
    ], "Bps"), 12, 8)
    l.add(stat("Bisection ratio", f'infiniband_topology_bisection_ratio{{{F}}}', "percentunit",
               "Estimated bisection bandwidth over a non-blocking build of the same tiers."), 6, 4)
    l.add(stat("Bisection bandwidth", f'infiniband_topology_bisection_bandwidth_bytes_per_second{{{F}}}', "Bps"), 6, 4)
    l.add(stat("Tiers", f'infiniband_topology_tiers{{{F}}}'), 6, 4)
    l.add(stat("Fat tree", f'infiniband_topology_is_tree{{{F}}}', description="1: the fabric ranks as a fat tree."), 6, 4)
    l.row("Subnet managers")
    l.add(stat("Master SMs", f'max(infiniband_sm_masters{{{F}}})',
               description="Subnet managers answering as master: exactly 1 is healthy."), 4, 4)
    l.add(stat("Standby SMs", f'max(infiniband_sm_standbys{{{F}}})',
               description="0 means nothing takes over if the master fails."), 4, 4)
    l.add(stat("Master sweeping", f'min(infiniband_sm_master_sweeping{{{F}}})',
               description="1 while the master's SMInfo.ActCount shows activity of its own."), 4, 4)
    l.add(stat("SM failovers (range)", f'sum(increase(infiniband_sm_master_changes_total{{{F}}}[$__range]))', red_above=1), 4, 4)
    l.add(table("SM conditions", f'infiniband_sm_condition{{{F}}} == 1 or infiniband_sm_condition{{{F}}}',
                "no_master, no_standby, master_not_sweeping, multiple_masters, failover (1 while it holds)."), 8, 6)
    l.add(table("Subnet managers", f'infiniband_sm_state{{{F}}} == 1',
                "Every SM behind an IsSM port, in the state it answered (details: /api/v1/subnet_managers)."), 12, 6)
    l.add(timeseries("SM activity (ActCount per second)", [target(
        f'rate(infiniband_sm_activity_count{{{F}}}[$__rate_interval])', "{{node}} port {{port}}")], "cps"), 12, 6)
    return dashboard("ibfabric-overview", "InfiniBand / Fabric overview",
                     "Health of the whole fabric at a glance: alerts, findings, bandwidth.", l)


ERRORS = [
    ("Symbol errors", "symbol_error_total", "Physical layer errors: the first sign of a bad cable."),
    ("Link error recoveries", "link_error_recovery_total", "Link retrains: a marginal cable or transceiver."),
    ("Receive errors", "receive_errors_total", "Packets received with errors."),
    ("Link downed", "link_downed_total", "The link went down: a flap."),
    ("Local link integrity errors", "local_link_integrity_errors_total", ""),
    ("Excessive buffer overrun errors", "excessive_buffer_overrun_errors_total", ""),
]


def port_errors():
    l = Layout()
    l.row("Top ports by error rate")
    for title, metric, desc in ERRORS:
        l.add(timeseries(f"{title}: top $topn switch ports", [target(
            f'topk($topn, rate(infiniband_switch_port_{metric}{{{SW}}}[$__rate_interval]))',
            "{{switch}} port {{port}}")], "cps", desc), 12, 7)
    l.row("HCA ports")
    l.add(timeseries("Symbol errors: top $topn HCA ports", [target(
        f'topk($topn, rate(infiniband_hca_port_symbol_error_total{{{HCA}}}[$__rate_interval]))',
        "{{hca}} port {{port}}")], "cps"), 12, 7)
    l.add(timeseries("Receive errors: top $topn HCA ports", [target(
        f'topk($topn, rate(infiniband_hca_port_receive_errors_total{{{HCA}}}[$__rate_interval]))',
        "{{hca}} port {{port}}")], "cps"), 12, 7)
    l.row("Heat map")
    sums = " + ".join(f'increase(infiniband_switch_port_{m}{{{SW}}}[$__range])' for _, m, _ in ERRORS[:4])
    heat = table("Errors by switch and port over the range", f'sum by (switch, port) ({sums})',
                 "Symbol errors, link error recoveries, receive errors and link downs, summed per port; a row per "
                 "switch, a column per port.", hide=("Time",))
    heat["transformations"] = [{"id": "groupingToMatrix", "options": {
        "rowField": "switch", "columnField": "port", "valueField": "Value"}}]
    heat["fieldConfig"]["defaults"].update({
        "custom": {"cellOptions": {"type": "color-background"}},
        "thresholds": {"mode": "absolute", "steps": [
            {"color": "green", "value": None}, {"color": "yellow", "value": 1}, {"color": "red", "value": 100}]}})
    l.add(heat, 24, 10)
    l.add(timeseries("Bit error ratio estimate: top $topn ports", [target(
        f'topk($topn, {ports(f"infiniband_port_bit_error_ratio{{{F}}}")})', "{{node}} port {{port}}")], "short",
        "Symbol errors over the bits the link carried (its signalling rate times the window), over the exporter's "
        "link-health window."), 24, 7)
    return dashboard("ibfabric-port-errors", "InfiniBand / Port errors",
                     "Which ports and cables are taking errors.", l, topn=True)


def congestion():
    l = Layout()
    l.add(timeseries("Transmit wait ratio: top $topn ports", [target(
        f'topk($topn, {ports(f"infiniband_port_transmit_wait_ratio{{{F}}}")})', "{{node}} port {{port}}")], "percentunit",
        "Fraction of time a port had data to send and no credits (PortXmitWait): congestion spreading back "
        "from a hot spot."), 12, 8)
    l.add(timeseries("Time waiting to send: top $topn switch ports", [target(
        f'topk($topn, rate(infiniband_switch_port_transmit_wait_seconds_total{{{SW}}}[$__rate_interval]))',
        "{{switch}} port {{port}}")], "percentunit",
        "PortXmitWait in seconds per second, each device's counts at its own tick and generation's unit."), 12, 8)
    l.add(timeseries("Transmit discards: top $topn switch ports", [target(
        f'topk($topn, rate(infiniband_switch_port_transmit_discards_total{{{SW}}}[$__rate_interval]))',
        "{{switch}} port {{port}}")], "cps", "Packets dropped for lack of credits or a down link."), 12, 8)
    l.add(timeseries("Transmit discards: top $topn HCA ports", [target(
        f'topk($topn, rate(infiniband_hca_port_transmit_discards_total{{{HCA}}}[$__rate_interval]))',
        "{{hca}} port {{port}}")], "cps"), 12, 8)
    l.add(table("Congestion alerts", cables(f'infiniband_alert_active{{{F},cause="congestion"}} == 1')), 24, 6)
    l.row("Congestion trees: roots and victims")
    l.add(stat("Congestion trees", f'sum(infiniband_congestion_trees{{{F}}})', red_above=1,
               description="Trees of congested ports grouped by the forwarding tables: each has one root, where the "
                           "congestion starts."), 4, 6)
    l.add(table("Congestion roots and their victims", f'infiniband_congestion_root_victims{{{F}}}',
                "Each tree's root port; Value: the congested ports waiting behind it. Fix the root, the victims "
                "clear.", hide=("Time", "__name__", "job", "instance")), 20, 6)
    l.add(timeseries("Head-of-queue discards: top $topn switch ports", [target(
        f'topk($topn, rate(infiniband_switch_port_switch_hoq_lifetime_limit_discards_total{{{SW}}}[$__rate_interval]))',
        "{{switch}} port {{port}}")], "cps",
        "PortXmitDiscardDetails: packets that waited longer than the head-of-queue lifetime for credits. "
        "Where these are, congestion starts."), 12, 8)
    l.add(timeseries("Transmit wait by VL: top $topn switch ports", [target(
        f'topk($topn, rate(infiniband_switch_port_transmit_wait_vl_total{{{SW}}}[$__rate_interval]))',
        "{{switch}} port {{port}} VL {{vl}}")], "cps",
        "PortVLXmitWaitCounters, read from the ports of congestion trees: which virtual lane (service level) "
        "waits."), 12, 8)
    return dashboard("ibfabric-congestion", "InfiniBand / Congestion",
                     "Where the fabric is congested: PortXmitWait and discards.", l, topn=True)


def topology_health():
    l = Layout()
    l.add(stat("Tiers", f'infiniband_topology_tiers{{{F}}}'), 4, 4)
    l.add(stat("Fat tree", f'infiniband_topology_is_tree{{{F}}}'), 4, 4)
    l.add(stat("Degraded links", f'count(infiniband_link_degraded{{{F}}}) or vector(0)', red_above=1,
               description="Links running below the width or speed both their ends allow, or the cabling plan gives."), 4, 4)
    l.add(stat("Miswired or missing cables", f'sum(infiniband_alerts{{{F},cause=~"miswiring|missing_cable"}})',
               red_above=1), 4, 4)
    l.add(stat("Bisection ratio", f'infiniband_topology_bisection_ratio{{{F}}}', "percentunit"), 8, 4)
    l.add(panel("bargauge", "Findings by kind", [target(f'infiniband_topology_findings{{{F}}}', "{{kind}}", instant=True)],
                options={"displayMode": "basic", "orientation": "horizontal"}), 8, 10)
    l.add(table("Findings", f'infiniband_topology_finding{{{F}}}'), 16, 10)
    l.add(table("Degraded links by cable", f'infiniband_link_degraded{{{F}}}'), 12, 8)
    l.add(table("Switch tiers", f'infiniband_switch_tier{{{SW}}}'), 12, 8)
    l.add(panel("bargauge", "Uplinks per switch (asymmetry shows as a short bar)",
                [target(f'infiniband_switch_uplinks{{{SW}}}', "{{switch}}", instant=True)],
                options={"displayMode": "basic", "orientation": "horizontal"}), 12, 10)
    l.add(panel("bargauge", "Leaf blocking factor",
                [target(f'infiniband_leaf_blocking_factor{{{SW}}}', "{{switch}}", instant=True)],
                options={"displayMode": "basic", "orientation": "horizontal"}), 12, 10)
    l.row("Routing (forwarding tables)")
    l.add(stat("Unrouted destinations", f'sum(infiniband_routing_unrouted_destinations{{{SW}}})', red_above=1,
               description="CA LIDs some switch cannot forward: LFT holes or routes over down ports."), 6, 4)
    l.add(stat("Down-up routes", f'max(infiniband_routing_down_up_routes{{{F}}})', red_above=1,
               description="Leaf-to-CA routes that go down a tier and up again, or never arrive."), 6, 4)
    l.add(stat("Worst routing spread", f'max(infiniband_routing_spread{{{SW}}})', red_above=2,
               description="Most minus fewest destinations over a leaf's uplinks (or a spine's parallel downlinks)."), 6, 4)
    l.add(stat("Routing findings", f'sum(infiniband_topology_findings{{{F},kind=~"routing_imbalance|unrouted_destination|down_up_route"}})',
               red_above=1), 6, 4)
    l.add(stat("Switches routing adaptively", f'max(infiniband_routing_adaptive_switches{{{F}}})',
               description="NVIDIA adaptive routing is on there (infiniband_switch_adaptive_routing_enabled): their "
                           "forwarding tables are only a fallback, so their balance is left out of this row and "
                           "congestion trees through them say they follow the static tables."), 6, 4)
    l.add(panel("bargauge", "Routing spread per switch",
                [target(f'infiniband_routing_spread{{{SW}}}', "{{switch}}", instant=True)],
                options={"displayMode": "basic", "orientation": "horizontal"}), 12, 10)
    l.add(table("Destinations per uplink (leaves) and downlink (above)", f'infiniband_routing_port_destinations{{{SW}}}'), 12, 10)
    l.row("Partitions")
    l.add(stat("Partition findings", f'sum(infiniband_topology_findings{{{F},kind=~"partition_.*"}})', red_above=1,
               description="CA ports whose partitions differ from most ports on their leaf or from the partition plan, "
                           "and switch ports whose P_Key table differs from the HCA they face."), 6, 4)
    l.add(stat("Partitions", f'count(count by (pkey) (infiniband_port_partition_info{{{F}}}))'), 6, 4)
    l.add(table("Members per partition", f'count by (pkey, membership) (infiniband_port_partition_info{{{F}}})'), 12, 6)
    l.add(table("Partition membership by port", f'infiniband_port_partition_info{{{F},node=~"$node"}}'), 24, 8)
    return dashboard("ibfabric-topology", "InfiniBand / Topology health",
                     "Tiers, asymmetry, miswiring and degraded links.", l)


def exporter_health():
    l = Layout()
    l.add(stat("Exporters up", f'sum(up{{{F},job=~".*infiniband.*"}})'), 4, 4)
    l.add(stat("Seconds since last good sweep",
               f'max(time() - infiniband_exporter_last_successful_sweep_timestamp_seconds{{{F}}})', "s", red_above=300), 5, 4)
    l.add(stat("Stale ports", f'sum(infiniband_exporter_stale_ports{{{F}}})', red_above=1), 5, 4)
    l.add(stat("Unreachable nodes", f'sum(infiniband_exporter_node_stale{{{F}}})', red_above=1), 5, 4)
    l.add(stat("Ports read", f'sum(infiniband_exporter_sweep_ports{{{F},result="ok"}})'), 5, 4)
    l.add(timeseries("Sweep duration", [target(f'infiniband_exporter_sweep_duration_seconds{{{F}}}', "{{instance}}")], "s"), 12, 8)
    l.add(timeseries("Collector run time", [target(
        f'rate(infiniband_exporter_collector_seconds_total{{{F}}}[$__rate_interval])', "{{instance}} {{collector}}")],
        "percentunit", "Share of wall time each collector runs."), 12, 8)
    l.add(timeseries("MADs", [
        target(f'sum by (instance) (rate(infiniband_exporter_mads_sent_total{{{F}}}[$__rate_interval]))', "{{instance}} sent"),
        target(f'sum by (instance, reason) (rate(infiniband_exporter_mad_failures_total{{{F}}}[$__rate_interval]))',
               "{{instance}} failed: {{reason}}", ref="B"),
        target(f'sum by (instance) (rate(infiniband_exporter_mad_retries_total{{{F}}}[$__rate_interval]))',
               "{{instance}} retried", ref="C")], "cps"), 12, 8)
    l.add(timeseries("Counter readings rejected", [target(
        f'sum by (instance, reason) (increase(infiniband_exporter_readings_rejected_total{{{F}}}[$__rate_interval]))',
        "{{instance}} {{reason}}")], "short",
        "Readings no link can produce (a firmware bug, another tool's reset, a corrupted MAD): folded into no total, "
        "rate or alert; the exporter's log names each port once."), 12, 8)
    l.add(timeseries("Discovery phases", [target(
        f'infiniband_exporter_discovery_phase_seconds{{{F}}}', "{{instance}} {{phase}}")], "s",
        "The last full walk: the graph walk, the tables (read after its first sweep is published) and the analysis."),
        12, 8)
    l.add(timeseries("Discoveries", [target(
        f'increase(infiniband_exporter_discoveries_total{{{F}}}[$__rate_interval])', "{{instance}} {{mode}}")]), 12, 8)
    l.add(timeseries("SMPs per switch per minute, by phase", [target(
        f'sum by (instance, phase) (rate(infiniband_exporter_phase_mads_total{{{F},class=~".*smp"}}[$__rate_interval])) * 60 '
        f'/ on (instance) group_left sum by (instance) (infiniband_exporter_fabric_nodes{{{F},type="switch"}})',
        "{{instance}} {{phase}}")], "short",
        "The exporter's SMP budget: sweeps and trap re-reads in steady state, re-walks per event, full walks hourly."), 12, 8)
    l.add(timeseries("Traps received", [target(
        f'increase(infiniband_exporter_traps_total{{{F}}}[$__rate_interval])', "{{instance}} trap {{trap}}")]), 12, 8)
    l.add(table("Nodes whose MADs fail most (retried or unanswered, share over the alert window)",
                f'topk(20, infiniband_exporter_node_mad_trouble_ratio{{{F}}})'), 12, 6)
    l.add(timeseries("Link downs that were no flap, and walks that missed answers", [
        target(f'increase(infiniband_link_down_explained_total{{{F}}}[$__rate_interval])', "{{instance}} {{kind}}"),
        target(f'increase(infiniband_exporter_discoveries_incomplete_total{{{F}}}[$__rate_interval])',
               "{{instance}} incomplete walks (merged)", ref="B")], "short",
        "Host resets, switch reboots and ports disabled on purpose are events, not flapping links; a walk that "
        "lost answers is merged into the last fabric, never taken as the fabric."), 12, 6)
    l.add(table("Exporters: version, scope and shard",
                f'infiniband_exporter_build_info{{{F}}} * on (instance) group_left (scope, shard, shards) '
                f'infiniband_exporter_scope_info{{{F}}}'), 12, 6)
    l.add(table("Collectors failing", f'infiniband_exporter_collector_success{{{F}}} == 0 or '
                f'infiniband_exporter_collector_success{{{F}}}'), 12, 6)
    return dashboard("ibfabric-exporter", "InfiniBand / Exporter health",
                     "The exporters themselves: sweeps, MADs, staleness.", l)


# The FEC counters move once per --phy.interval (default 5m): their rates
# and shares are taken over three of those.
FEC_RANGE = "15m"


def fec_cables(selector):
    """A per-port ratio on the cables of infiniband_link_up (both ends named),
    the worse end of each: `selector` joined at the cable's a end and, renamed
    to remote_guid/remote_port, at its b end."""
    cable = f"(0 * infiniband_link_up{{{F}}} + 1)"
    at_b = (f'label_replace(label_replace({selector}, "remote_guid", "$1", "guid", "(.*)"), '
            f'"remote_port", "$1", "port", "(.*)")')
    a = f'label_replace({selector} * on (fabric, guid, port) group_right() {cable}, "end", "a", "", "")'
    b = f'label_replace({at_b} * on (fabric, remote_guid, remote_port) group_right() {cable}, "end", "b", "", "")'
    return f"max by (fabric, node, port, remote_node, remote_port) ({a} or {b})"


def physical_layer():
    l = Layout()
    l.row("Forward error correction and bit error ratios")
    raw = f'infiniband_port_raw_bit_error_ratio{{{F}}}'
    tier = f'group by (fabric, guid, tier) (infiniband_switch_tier{{{SW}}})'
    l.add(stat("Degrading cables", f'sum(infiniband_alerts{{{F},cause="cable_degrading"}})', red_above=1,
               description="Cables whose raw (pre-FEC) bit error ratio rose tenfold over its lowest of the day while "
                           "still under the bad-cable level (cable_degrading)."), 6, 4)
    l.add(stat("Ports over the raw BER warning level", f'count({ports(raw)} >= 5e-6) or vector(0)', red_above=1,
               description="Ports whose raw bit error ratio is at or over NVIDIA's NDR field warning level (5e-6). "
                           "bad_cable judges each port at its own speed's, FEC mode's and ASIC's level "
                           "(bad_cable.ber_levels, docs/alerts.md): an HDR port on a 7nm ASIC is over its "
                           "warning at 5e-8."), 6, 4)
    # Each source's counter on its own, then the two together: a port read
    # by one source, then the other, has both in range (`or` keeps one).
    uncorrected = (f'increase(infiniband_switch_port_fec_uncorrectable_blocks_total{{{SW}}}[$__range]) or '
                   f'increase(infiniband_switch_port_phy_effective_errors_total{{{SW}}}[$__range])')
    l.add(stat("Errors FEC left uncorrected (range)", f'sum({uncorrected}) or vector(0)',
               red_above=1, description="Blocks FEC could not correct (PortExtendedSpeedsCounters) or errors it left "
                                        "(PPCNT effective errors) on switch ports: errors that reached the link layer."),
          6, 4)
    l.add(stat("Ports read for FEC", f'count(infiniband_port_fec_info{{{F},source!="none"}}) or vector(0)',
               description="Ports whose FEC or physical-layer counters the exporter reads (infiniband_port_fec_info: "
                           "source ppcnt or pma_extended_speeds)."), 6, 4)
    heat = panel("heatmap", "Raw bit error ratio across ports", [target(
        ports(raw), "{{node}} port {{port}}")], description=(
        "How the ports' raw (pre-FEC) bit error ratios spread over time, a log scale: a cable going bad leaves "
        "the crowd upwards."))
    heat["options"] = {"calculate": True, "calculation": {"yBuckets": {"mode": "count", "scale": {"type": "log", "log": 10}}},
                       "yAxis": {"axisPlacement": "left"}, "color": {"mode": "scheme", "scheme": "Oranges"}}
    l.add(heat, 12, 8)
    l.add(timeseries("Raw bit error ratio by tier (worst port)", [target(
        f'max by (tier) ({raw} * on (fabric, guid) group_left(tier) {tier})', "tier {{tier}}")], "short",
        "The worst switch port's raw bit error ratio in each tier (leaf, spine, core)."), 12, 8)
    l.add(table("Worst 20 cables by raw bit error ratio", f'topk(20, {fec_cables(ports(raw))})',
                "The cables whose worse end has the highest raw (pre-FEC) bit error ratio over its last FEC window, "
                "both ends named.", hide=("Time", "job", "instance")), 12, 8)
    l.add(timeseries("Effective and symbol bit error ratios: top $topn ports", [
        target(f'topk($topn, {ports(f"infiniband_port_effective_bit_error_ratio{{{F}}}")})',
               "effective {{node}} port {{port}}"),
        target(f'topk($topn, {ports(f"infiniband_port_symbol_bit_error_ratio{{{F}}}")})',
               "symbol {{node}} port {{port}}", ref="B"),
    ], "short", "Errors FEC left per bit (post-FEC: uncorrectable blocks, or PPCNT's effective errors) and, where "
                "PPCNT is read, symbol errors per bit: what reached the link layer."), 12, 8)
    # A lane's count: FEC corrected symbols (PortExtendedSpeedsCounters) or
    # raw errors (PPCNT), whichever the port is read by (`or`: one of them
    # where a port was read by both in the range).
    def lane_counts(fn):
        return (f'({fn}(infiniband_switch_port_lane_fec_corrected_symbols_total{{{SW}}}[{FEC_RANGE}]) or '
                f'{fn}(infiniband_switch_port_lane_raw_errors_total{{{SW}}}[{FEC_RANGE}]))')
    lanes = lane_counts("increase")
    share = (f'{lanes} / on (fabric, guid, port) group_left() sum by (fabric, guid, port) ({lanes})')
    per_lane = (f'({share} * on (fabric, guid, port) group_left() count by (fabric, guid, port) ({lanes}) '
                f'* on (fabric, guid, port) group_left() {raw}) > 0')
    l.add(timeseries("Raw bit error ratio per lane: top $topn lanes", [target(
        f'topk($topn, {per_lane})', "{{switch}} port {{port}} lane {{lane}}")], "short",
        "A switch port's raw bit error ratio split over its lanes by their share of its corrected symbols or raw "
        "errors (the last 15 minutes): the lane that goes bad first. Filter by switch for one cable."), 12, 8)
    l.add(timeseries("Raw errors per lane: top $topn lanes", [target(
        f'topk($topn, {lane_counts("rate")})', "{{switch}} port {{port}} lane {{lane}}")], "cps",
        "Raw errors per second on each lane of the switch ports: symbols FEC corrected "
        "(FECCorrectableSymbolCtrLane<n>) or PPCNT's phy_raw_errors_lane<n>."), 12, 8)
    l.row("Cable modules")
    temp = ports(f'infiniband_port_module_temperature_celsius{{{F}}}')
    l.add(stat("Modules over their alarm temperature",
               f'count({temp} >= on (fabric, guid, port) '
               f'(infiniband_port_module_temperature_high_threshold_celsius{{{F}}} > 0)) or vector(0)',
               red_above=1, description="Modules at or over their high temperature alarm threshold (PDDR; "
                                        "InfinibandModuleHot)."), 6, 4)
    l.add(stat("Modules of another part than their cables'",
               f'count({ports(f"infiniband_port_module_part_differs{{{F}}}")}) or vector(0)', red_above=1,
               description="Modules whose part number differs from the one most modules at the same end of their "
                           "level of cables have (infiniband_port_module_part_differs names them)."), 6, 4)
    l.add(stat("Hottest module", f'max({temp})', "celsius",
               description="The highest module temperature among the ports read."), 6, 4)
    l.add(stat("Modules read", f'count({ports(f"infiniband_port_module_info{{{F}}}")}) or vector(0)',
               description="Modules whose PDDR Module Info the exporter reads (infiniband_port_module_info)."), 6, 4)
    l.add(timeseries("Hottest modules: top $topn", [target(f'topk($topn, {temp})', "{{node}} port {{port}}")],
                     "celsius", "The hottest modules' temperatures; their alarm thresholds are in "
                                "infiniband_port_module_temperature_high_threshold_celsius."), 24, 8)
    l.row("Switch environment")
    l.add(stat("Switches with a fan out of range",
               f'count(infiniband_switch_fan_status_info{{{SW},status="ERROR"}}) or vector(0)', red_above=1,
               description="Switches whose fan status (FORE) is ERROR; infiniband_switch_fan_rpm names the fan."), 6, 4)
    l.add(stat("Failed power supplies",
               f'count(infiniband_switch_power_supply_status_info{{{SW},status="ERROR"}}) or vector(0)', red_above=1,
               description="Switch power supplies reporting ERROR (MSPS)."), 6, 4)
    l.add(stat("Hottest switch ASIC", f'max(infiniband_switch_temperature_celsius{{{SW}}})', "celsius",
               description="The highest switch ASIC temperature (MTMP sensor 0)."), 6, 4)
    l.add(stat("Switch power drawn", f'sum(infiniband_switch_power_supply_watts{{{SW}}})', "watt",
               description="Power drawn by the switches' supplies (MSPS)."), 6, 4)
    l.add(timeseries("Switch ASIC temperature", [
        target(f'infiniband_switch_temperature_celsius{{{SW}}}', "{{switch}}"),
        target(f'max(infiniband_switch_temperature_high_threshold_celsius{{{SW}}})', "threshold", ref="B"),
    ], "celsius", "Each switch's ASIC temperature, and the highest threshold among them."), 12, 8)
    l.add(timeseries("Fan speeds", [target(f'infiniband_switch_fan_rpm{{{SW}}}', "{{switch}} fan {{fan}}")], "rpm",
                     "Every fan of the switches (MFSM); a failed one drops to 0."), 12, 8)
    l.add(table("Switch hardware", f'infiniband_switch_hardware_info{{{SW}}}',
                "Firmware, PSID, part and serial numbers of each switch (MGIR, MSGI)."), 24, 6)
    return dashboard("ibfabric-physical-layer", "InfiniBand / Physical layer",
                     "Cables going bad before they fail: FEC, raw and effective bit error ratios, per lane.", l,
                     topn=True)


H = F + ',host=~"$host"'
# A host series' host, from infiniband_host_port_info (the host collector's,
# one per HCA port): joined on the exporter (instance) and the device.
HOST_OF = f'max by (fabric, instance, device, host) (infiniband_host_port_info{{{H}}})'
TRANSPORT = ("req_transport_retries_exceeded|req_rnr_retries_exceeded|local_ack_timeout_err|rnr_nak_retry_err|"
             "out_of_buffer|packet_seq_err|out_of_sequence|implied_nak_seq_err|duplicate_request")
# The jobs a fault hurts: the rule InfinibandFaultHurtsJob's expression, over
# the recording rule of the host ports each fault hurts.
HURT_JOBS = (f'count by (faults, source, hpc_job, namespace, pod) (infiniband_host_port_job_info{{{F}}} '
             f'* on (node_guid, port) group_left (faults) infiniband:host_port_faults)')


def host_cable_end(which):
    """One end of each filtered host port's cable (`cable` is a/port/b/port
    on infiniband_host_port_info), as guid and port labels."""
    group = "1" if which == "a" else "3"
    port = "2" if which == "a" else "4"
    info = f'max by (fabric, cable) (infiniband_host_port_info{{{H},cable!=""}})'
    rx = "^([^/]+)/([^/]+)/([^/]+)/([^/]+)$"
    return (f'label_replace(label_replace({info}, "guid", "${group}", "cable", "{rx}"), '
            f'"port", "${port}", "cable", "{rx}")')


def hosts():
    l = Layout()
    l.row("Its HCAs")
    l.add(stat("HCA ports seen", f'count(infiniband_host_port_info{{{H}}}) or vector(0)',
               description="HCA ports of the selected hosts, as their kernels show them (the local exporters' host "
                           "collector)."), 6, 4)
    l.add(stat("PCIe links below their maximum",
               f'sum(infiniband_host_pcie_link_degraded{{{F}}} * on (fabric, instance, device) group_left (host) '
               f'{HOST_OF}) or vector(0)', red_above=1,
               description="HCAs whose PCIe link trained narrower or slower than it can (InfinibandHostPcieDegraded)."),
          6, 4)
    l.add(stat("Transport alerts firing",
               f'count(ALERTS{{{H},alertstate="firing",alertname=~"InfinibandHost.*"}}) or vector(0)', red_above=1,
               description="The host rules firing for the selected hosts: retries exhausted, ack timeouts, "
                           "out_of_buffer, PCIe."), 6, 4)
    l.add(stat("Jobs on them", f'count(count by (source, hpc_job, namespace, pod) '
                               f'(infiniband_host_port_job_info{{{H}}})) or vector(0)',
               description="Slurm jobs and Kubernetes pods holding the selected hosts' HCA ports."), 6, 4)
    l.add(table("HCAs and their PCIe links",
                f'infiniband_host_pcie_link_width{{{F}}} * on (fabric, instance, device) group_left (host) {HOST_OF}',
                "Each HCA's PCIe link width now (Value) with its host; the speed and the maxima are "
                "infiniband_host_pcie_link_transfers_per_second and the _max_ twins.",
                hide=("Time", "__name__", "job")), 12, 8)
    l.add(table("HCA ports", f'infiniband_host_port_info{{{H}}}',
                "Each HCA port: link layer, state, rate, node GUID and the cable it is on.",
                hide=("Time", "__name__", "job", "Value")), 12, 8)
    l.row("Transport errors")
    l.add(timeseries("Transport errors per second", [target(
        f'rate(infiniband_host_port_hw_counters_total{{{F},counter=~"{TRANSPORT}"}}[$__rate_interval]) '
        f'* on (fabric, instance, device) group_left (host) {HOST_OF}', "{{host}} {{device}}[{{port}}] {{counter}}")],
        "cps", "The driver's counters of lost work and retries (hw_counters): retries exhausted, ack timeouts, RNR "
               "NAKs, sequence errors, drops for lack of receive buffers."), 12, 8)
    l.add(timeseries("Congestion notifications per second", [target(
        f'rate(infiniband_host_port_hw_counters_total{{{F},counter=~"np_cnp_sent|rp_cnp_handled|np_ecn_marked_roce_packets"}}[$__rate_interval]) '
        f'* on (fabric, instance, device) group_left (host) {HOST_OF}', "{{host}} {{device}}[{{port}}] {{counter}}")],
        "cps", "Congestion control on the HCA: notifications sent as the receiver (np_cnp_sent) and handled as the "
               "sender (rp_cnp_handled)."), 12, 8)
    l.row("Its cable, both ends")
    l.add(timeseries("Bit error ratio at both ends of its cable", [
        target(f'infiniband_port_bit_error_ratio{{{F}}} and on (fabric, guid, port) ({host_cable_end("a")})',
               "{{node}}[{{port}}]"),
        target(f'infiniband_port_bit_error_ratio{{{F}}} and on (fabric, guid, port) ({host_cable_end("b")})',
               "{{node}}[{{port}}]", ref="B")],
        "short", "Symbol errors per bit received at the host's end and at the leaf's end of each of its cables."),
        12, 8)
    l.add(timeseries("Its cables up", [target(
        f'label_join(infiniband_link_up{{{F}}}, "cable", "/", "guid", "port", "remote_guid", "remote_port") '
        f'and on (fabric, cable) infiniband_host_port_info{{{H}}}', "{{node}}[{{port}}] - {{remote_node}}[{{remote_port}}]")],
        "short", "1 while each of the host's cables is up (both ends named)."), 12, 8)
    l.row("Its jobs and what hurts them")
    l.add(table("Jobs on these hosts", f'infiniband_host_port_job_info{{{H}}}',
                "Each job holding an HCA port: a Slurm job (hpc_job) or a Kubernetes pod (namespace, pod, "
                "container, resource).", hide=("Time", "__name__", "job", "instance", "Value")), 12, 8)
    l.add(table("Jobs a fault hurts", HURT_JOBS,
                "Every job on a host port whose routes cross a bad or flapping cable or a congestion root (the "
                "fabric exporter's blast radius), with the faults named; Value: its ports there. What the rule "
                "InfinibandFaultHurtsJob alerts on.", hide=("Time",)), 12, 8)
    l.add(table("Faults and their blast radius", f'infiniband_alert_blast_radius_ports{{{F}}}',
                "Host ports whose routes cross each fault (Value); infiniband_alert_blast_radius_routes counts the "
                "routes.", hide=("Time", "__name__", "job", "instance")), 24, 8)
    d = dashboard("ibfabric-hosts", "InfiniBand: hosts",
                  "A host's own RDMA stack (its HCAs' transport errors, PCIe links, firmware), its cables at both "
                  "ends, its jobs, and the jobs each fault hurts.", l)
    d["templating"]["list"].append({
        "name": "host", "label": "Host", "type": "query", "datasource": DS,
        "query": {"query": 'label_values(infiniband_host_port_info{fabric=~"$fabric"}, host)', "refId": "host"},
        "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "sort": 1,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]}})
    return d


DASHBOARDS = {
    "fabric-overview.json": overview,
    "port-errors.json": port_errors,
    "congestion.json": congestion,
    "topology-health.json": topology_health,
    "exporter-health.json": exporter_health,
    "physical-layer.json": physical_layer,
    "hosts.json": hosts,
}


METRIC = re.compile(r"\b((?:infiniband|ibfabric)_[a-z0-9_]+|infiniband:[a-z0-9_:]+|ALERTS)\b")
BEGIN, END = "<!-- metrics: generate.py writes this list -->", "<!-- end of metrics -->"


def required_metrics(dash):
    """The series a dashboard's queries (panels and variables) read."""
    found = set()
    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("expr", "query") and isinstance(v, str):
                    found.update(METRIC.findall(v))
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(dash["panels"])
    walk(dash["templating"])
    return sorted(found)


def readme_with(metrics):
    """README.md with the list of each dashboard's metrics put in."""
    lines = [BEGIN, "", "| file | metrics its queries read |", "| --- | --- |"]
    for name, used in metrics.items():
        lines.append(f"| `{name}` | " + ", ".join(f"`{m}`" for m in used) + " |")
    lines += ["", END]
    text = (HERE / "README.md").read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + "\n".join(lines) + text[end:]


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    metrics = {}
    for name, build in DASHBOARDS.items():
        dash = build()
        metrics[name] = required_metrics(dash)
        text = json.dumps(dash, indent=2, sort_keys=True) + "\n"
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    readme = readme_with(metrics)
    if check:
        if (HERE / "README.md").read_text() != readme:
            stale.append("README.md")
    else:
        (HERE / "README.md").write_text(readme)
    if stale:
        print("dashboards out of date (run dashboards/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
