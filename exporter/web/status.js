// The exporter's status page, problem first: what is wrong, on which cables
// (both ends), since when; then the fabric's structure as tier and pod
// matrices coloured by their worst cable (a drawing on small fabrics); a
// search; a node page and a port page behind deep links. Reads only this
// exporter's own JSON API (relative URLs) and only summaries up front:
// alerts, findings, the switch structure, the SMs; a node or port when it
// is opened. Builds every element with textContent, never HTML from data.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const RANK = { bad: 5, miswired: 4, sm: 4, degraded: 3, congested: 2, down: 1, ok: 0 };
const CAUSE_STATE = { bad_cable: "bad", flapping_link: "bad", congestion: "congested", degraded_link: "degraded", miswiring: "miswired",
                      cable_degrading: "degraded", missing_cable: "down" };
const CAUSE_LABEL = { bad_cable: "bad cable", flapping_link: "flapping link", congestion: "congestion", degraded_link: "degraded link",
                      miswiring: "miswired", subnet_manager: "subnet manager", cable_degrading: "degrading cable",
                      missing_cable: "missing cable" };
const SIGNAL_LABEL = {
  symbol_errors: "symbol errors", link_error_recoveries: "link error recoveries", link_downed: "link downs",
  link_downs: "link downs", rcv_errors: "receive errors", rcv_remote_physical_errors: "remote physical errors",
  local_link_integrity_errors: "link integrity errors", excessive_buffer_overrun_errors: "buffer overruns",
  xmit_discards: "discards", xmit_wait: "XmitWait ticks", rcv_data: "received", rcv_packets: "packets received",
  bit_error_rate: "bit error rate", packet_drop_rate: "packet drop rate", xmit_wait_fraction: "waiting to send",
  hoq_lifetime_discards: "head-of-queue discards", victim: "victim waiting",
  raw_bit_error_ratio: "raw (pre-FEC) bit error ratio", effective_bit_error_ratio: "effective (post-FEC) bit error ratio",
  raw_bit_error_ratio_baseline: "its lowest raw ratio",
};
// Information kinds (below_tier_majority, ca_on_non_leaf, ...) are left
// out: no fault to colour.
const FINDING_STATE = {
  same_tier_link: "miswired", skip_tier_link: "miswired", ca_to_ca: "miswired",
  plan_wrong_remote_node: "miswired", plan_wrong_remote_port: "miswired", plan_extra_link: "miswired",
  plan_unknown_node: "miswired", below_enabled: "degraded",
  plan_rate_mismatch: "degraded", plan_missing_link: "down", missing_cable: "down",
};
// A fabric this small is drawn (every switch and HCA); a bigger one is
// shown as matrices.
const DRAW_SWITCHES = 16, DRAW_CAS = 96;
const FIRST_PROBLEMS = 15;  // problem lines shown before "show all"
const MAX_LIST = 500;       // findings listed per kind before "and N more"

const state = {
  alerts: null, findings: null, structure: null, sms: null, topology: null, collectors: null, whatif: null,
  cables: new Map(),   // cable key -> problem (see problems())
  names: new Map(),    // guid -> name, of every node the page has seen
  open: new Set(),     // problem lines whose evidence is open
  showAll: false,
  pod: null,           // the pod zoomed into, or null
  first: true,
};

function el(tag, attrs, ...children) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.setAttribute("class", v);
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

// The fabric this page shows, where the exporter reads several
// (?fabric=NAME in the page's address, as /api/v1/fabrics names it; docs/api.md): every API
// call asks for it. None: the exporter's first (or only) fabric.
const FABRIC = new URLSearchParams(location.search).get("fabric");

// An API path of the fabric shown (the same path where none is chosen).
function ofFabric(path) {
  return FABRIC ? path + (path.includes("?") ? "&" : "?") + "fabric=" + encodeURIComponent(FABRIC) : path;
}

async function get(path) {
  if (path.startsWith("api/v1/") && !path.startsWith("api/v1/fabrics")) path = ofFabric(path);
  const r = await fetch(path, { cache: "no-store", credentials: "same-origin" });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
  return body;
}

// --- Numbers and times for people.

const naturalCompare = new Intl.Collator("en", { numeric: true, sensitivity: "base" }).compare;

function fmtNum(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a < 0.01) return v.toExponential(1).replace(".0e", "e");
  if (a < 1000) return String(Number(v.toPrecision(3)));
  const units = ["k", "M", "G", "T", "P", "E"];
  let i = -1, x = a;
  while (x >= 1000 && i < units.length - 1) { x /= 1000; ++i; }
  return (v < 0 ? "-" : "") + Number(x.toPrecision(3)) + units[i];
}
function fmtBytes(v) {
  if (v === null || v === undefined) return "–";
  const units = ["B", "kB", "MB", "GB", "TB", "PB"];
  let i = 0, x = Math.abs(v);
  while (x >= 1000 && i < units.length - 1) { x /= 1000; ++i; }
  return Number(x.toPrecision(x >= 100 ? 3 : 2)) + " " + units[i];
}
function fmtPercent(v) {
  if (v === null || v === undefined) return "–";
  const p = v * 100;
  return (p !== 0 && Math.abs(p) < 0.1 ? fmtNum(p) : String(Number(p.toFixed(1)))) + " %";
}
function ago(unixSeconds) {
  if (!unixSeconds) return "–";
  const s = Math.max(0, Date.now() / 1000 - unixSeconds);
  if (s < 90) return Math.round(s) + " s ago";
  if (s < 5400) return Math.round(s / 60) + " min ago";
  if (s < 36 * 3600) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " d ago";
}
const unixOf = (iso) => (iso ? Date.parse(iso) / 1000 : 0);
function timeCell(iso, unix) {
  const t = unix || unixOf(iso);
  return el("time", { datetime: iso || "", title: iso || "", text: ago(t) });
}
// One evidence entry as a short phrase: "symbol errors 49.8/s", "bit error
// rate 1.9e-4", "waiting to send 12 %", "3 link downs", or its detail.
function evidenceText(e) {
  const text = valueText(e);
  // A value that is about one port of a tree (a victim, a discarding port) names it.
  return e.value !== undefined && e.detail ? text + " (" + e.detail + ")" : text;
}
function valueText(e) {
  const label = SIGNAL_LABEL[e.signal] || e.signal.replace(/_/g, " ");
  if (e.value !== undefined && e.unit === "per_second") {
    return e.signal === "rcv_data" ? label + " " + fmtBytes(e.value * 4) + "/s" : label + " " + fmtNum(e.value) + "/s";
  }
  if (e.value !== undefined && e.unit === "fraction") return label + " " + fmtPercent(e.value);
  if (e.value !== undefined && e.unit === "events") return fmtNum(e.value) + " " + label;
  if (e.value !== undefined) return label + " " + fmtNum(e.value);
  return e.detail || label;
}
// The same, short, for a problem line: a finding or a rate by its gist.
function evidenceGist(e) {
  if (e.value !== undefined) return evidenceText(e);
  const m = /^topology: (\w+) at (\S+)$/.exec(e.detail || "");
  if (m) return "runs " + m[2] + " (" + m[1].replace(/_/g, " ") + ")";
  if (e.signal === "rate_drop") return e.detail;
  return (SIGNAL_LABEL[e.signal] || e.signal).replace(/_/g, " ");
}
// The evidence that says most: the one furthest over its threshold.
function keyEvidence(a) {
  let best = null, score = -1;
  for (const e of a.evidence || []) {
    const s = e.value !== undefined && e.threshold ? e.value / e.threshold : 0;
    if (best === null || s > score) { best = e; score = s; }
  }
  return best;
}

// --- Names, ends, links.

const endKey = (guid, port) => guid + ":" + port;
// How a node type reads on the page (nodes[].type of /api/v1/topology).
const TYPE_LABEL = { ca: "HCA", aggregation_node: "SHARP aggregation node" };
const cableKey = (a, b) => [endKey(a.guid, a.port), endKey(b.guid, b.port)].sort().join("|");
const nameOf = (guid) => state.names.get(guid) || guid;
function learn(guid, name) { if (guid && name) state.names.set(guid, name); }

function portLink(guid, port, name) {
  learn(guid, name);
  return el("a", { class: "port", "data-port": endKey(guid, port), href: "#port=" + endKey(guid, port),
                   text: (name || nameOf(guid)) + "[" + port + "]" });
}
function nodeLink(guid, name) {
  learn(guid, name);
  return el("a", { class: "node", "data-guid": guid, href: "#node=" + guid, text: name || nameOf(guid) });
}
function hostLink(name) {
  return el("a", { class: "host", "data-host": name, href: "#host=" + encodeURIComponent(name), text: name });
}
function cableEnds(a, b) {
  return el("span", { class: "cable" }, portLink(a.guid, a.port, a.node || a.name), el("span", { class: "sep", text: " ⇄ " }),
            portLink(b.guid, b.port, b.node || b.name));
}

// --- What is wrong: one problem per cable (its alerts, and the findings
// about it), and the fabric-wide conditions.

function problems() {
  const out = new Map();
  const add = (key, a, b) => {
    if (!out.has(key)) out.set(key, { key, a, b, state: "ok", severity: "", alerts: [], findings: [], since: 0 });
    return out.get(key);
  };
  for (const al of (state.alerts && state.alerts.active) || []) {
    const ends = al.ends || [];
    const key = ends.length === 2 ? cableKey(ends[0], ends[1]) : "fabric:" + al.id;
    const p = add(key, ends[0], ends[1]);
    p.alerts.push(al);
    const st = CAUSE_STATE[al.cause] || "sm";
    if (RANK[st] > RANK[p.state]) p.state = st;
    if (al.severity === "critical" || !p.severity) p.severity = al.severity;
    if (!p.since || al.since_unix < p.since) p.since = al.since_unix;
  }
  // Findings about a cable with an alert are its evidence; those about
  // other cables are listed with the findings only.
  for (const f of (state.findings && state.findings.findings) || []) {
    if (!f.a || !f.b) continue;
    const p = out.get(cableKey(f.a, f.b));
    if (p) p.findings.push(f);
  }
  return out;
}

function problemOrder(x, y) {
  const sev = (p) => (p.severity === "critical" ? 1 : 0);
  return sev(y) - sev(x) || RANK[y.state] - RANK[x.state] || (x.since || 0) - (y.since || 0);
}

function verdict() {
  const box = document.getElementById("verdict");
  const counts = (state.alerts && state.alerts.active_counts) || { critical: 0, warning: 0 };
  const list = [...state.cables.values()];
  const cables = list.filter((p) => p.a && p.b).length;
  if (!state.alerts) {
    box.className = "verdict unknown";
    box.replaceChildren(el("strong", { text: "No alert data" }));
    return;
  }
  if (list.length === 0) {
    box.className = "verdict healthy";
    box.replaceChildren(el("strong", { id: "verdict-text", text: "Healthy" }), " no active alerts");
    return;
  }
  const since = Math.min(...list.map((p) => p.since || Infinity));
  const where = [];
  if (cables) where.push(cables + (cables === 1 ? " cable" : " cables"));
  if (list.length > cables) where.push((list.length - cables) + " fabric-wide");
  box.className = "verdict " + (counts.critical ? "critical" : "warning");
  box.replaceChildren(
    el("strong", { id: "verdict-text", text: list.length + (list.length === 1 ? " problem" : " problems") }),
    ": " + where.join(", ") + " · " + counts.critical + " critical, " + counts.warning + " warning · first " + ago(since));
}

// What keeps the exporter from seeing the fabric (M_Key, ...): above all else.
function blindSpots() {
  const box = document.getElementById("blind-spots");
  const list = (state.alerts && state.alerts.exporter_blind_spots) || [];
  box.hidden = list.length === 0;
  box.replaceChildren(...list.map((b) => el("p", { "data-kind": b.kind },
    el("strong", { text: b.summary }), " " + b.action)));
}

function chips() {
  const box = document.getElementById("chips");
  box.replaceChildren();
  const byCause = new Map();
  for (const a of (state.alerts && state.alerts.active) || []) {
    const c = byCause.get(a.cause) || { n: 0, critical: false };
    c.n += 1;
    c.critical = c.critical || a.severity === "critical";
    byCause.set(a.cause, c);
  }
  for (const [cause, c] of byCause) {
    box.append(el("span", { class: "chip " + (c.critical ? "crit" : "warn"), "data-cause": cause,
                            text: (CAUSE_LABEL[cause] || cause) + " " + c.n }));
  }
  const st = state.structure;
  if (st) {
    const plural = { leaf: "leaves", unranked: "unranked" };
    for (const t of st.tiers) {
      box.append(el("span", { class: "chip", text: t.switches + " " + (t.switches === 1 ? t.name : plural[t.name] || t.name + "s") }));
    }
    box.append(el("span", { class: "chip", text: st.cas + " HCAs" }));
    if (st.pods.length) box.append(el("span", { class: "chip", text: st.pods.length + " pods" }));
  }
  const sm = smChip(state.sms);
  if (sm) box.append(sm);
  const f = state.findings;
  if (f && f.scope && !f.scope.reports_topology) {
    box.append(el("span", { class: "chip", text: "scope " + f.scope.kind + " " + f.scope.shard + "/" + f.scope.shards }));
  }
}

function smChip(sms) {
  if (!sms) return null;
  if (sms.master_count === 0) return el("span", { class: "chip crit", id: "sm-chip", text: "no master SM" });
  if (sms.master_count > 1) return el("span", { class: "chip crit", id: "sm-chip", text: sms.master_count + " master SMs" });
  const bad = sms.conditions.length > 0;
  return el("span", { class: "chip " + (bad ? "warn" : "good"), id: "sm-chip",
                      title: sms.conditions.map((c) => c.summary).join("\n"),
                      text: "SM " + sms.master.node + " + " + sms.standby_count + " standby" +
                            (bad ? " (" + sms.conditions.map((c) => c.condition.replace(/_/g, " ")).join(", ") + ")" : "") });
}

function problemRows(p) {
  const causes = [...new Set(p.alerts.map((a) => a.cause))];
  const worst = p.alerts.find((a) => a.severity === p.severity) || p.alerts[0];
  const ev = keyEvidence(worst);
  const where = p.a && p.b ? cableEnds(p.a, p.b)
    : (worst.ends || []).length ? el("span", {}, ...worst.ends.flatMap((e, i) => [i ? ", " : "", portLink(e.guid, e.port, e.node)]))
    : el("span", { class: "muted", text: "fabric" });
  const what = worst.cause === "subnet_manager" ? worst.condition.replace(/_/g, " ")
                                                 : causes.map((c) => CAUSE_LABEL[c] || c).join(" + ");
  const open = state.open.has(p.key);
  const row = el("tr", { class: "problem" + (open ? " open" : ""), "data-state": p.state, "data-cable": p.key,
                         "data-causes": causes.join(" "), "data-severity": p.severity,
                         onclick: (e) => { if (e.target.closest("a")) return; toggle(p.key); } },
    el("td", { class: "sev sev-" + p.severity, title: p.severity, text: p.severity === "critical" ? "critical" : "warning" }),
    el("td", { class: "what state-" + p.state, text: what }),
    el("td", { class: "where" }, where),
    el("td", { class: "value", text: worst.cause === "subnet_manager" ? worst.summary.split(":")[0] : ev ? evidenceGist(ev) : "" }),
    el("td", { class: "since" }, timeCell(worst.since, p.since)));
  if (!open) return [row];
  return [row, el("tr", { class: "evidence", "data-cable": p.key }, el("td", { colspan: 5 }, evidenceBox(p)))];
}

function evidenceBox(p) {
  const box = el("div", { class: "evidence-box" });
  for (const a of p.alerts) {
    box.append(el("p", {}, el("strong", { text: a.severity + " " + (CAUSE_LABEL[a.cause] || a.cause) + ": " }), a.summary));
    const rows = (a.evidence || []).map((e) => el("li", { text: evidenceText(e) +
      (e.end === 0 || e.end === 1 ? " at " + a.ends[e.end].node + "[" + a.ends[e.end].port + "]" : "") +
      (e.threshold !== undefined ? " (threshold " + fmtNum(e.threshold) + ")" : "") +
      (e.delta !== undefined ? ", +" + fmtNum(e.delta) + " over " + fmtNum(e.window_seconds) + " s" : "") }));
    if (rows.length) box.append(el("ul", { class: "evidence-list" }, ...rows));
    if (a.confidence && a.confidence.reduced) {
      box.append(el("p", { class: "muted", text: "Reduced confidence: MADs to " +
        a.confidence.failing_mads.map((m) => m.node + " (" + fmtPercent(m.mad_trouble_ratio) + " needed retries)").join(", ") }));
    }
    if (a.blast_radius) box.append(blastRadius(a.blast_radius));
    // What taking the cable out now would cost (api/v1/whatif).
    const w = state.whatif && state.whatif.get(a.id);
    if (w) {
      box.append(el("p", { class: "whatif", "data-verdict": w.verdict,
                           text: "Taking this cable out now: " + w.verdict + ", " + w.reason + "." }));
    }
    box.append(el("p", { class: "action", text: "What to do: " + a.action }));
  }
  const extra = p.findings.filter((f) => !p.alerts.some((a) => (a.evidence || []).some((e) => e.detail === f.detail)));
  for (const f of extra) box.append(el("p", { class: "muted", text: f.kind.replace(/_/g, " ") + ": " + f.detail }));
  return box;
}

// What the fault hurts: the routes between host ports that cross it and
// the hosts they join, most routes first (the forwarding tables' static
// routes where adaptive routing is on).
function blastRadius(b) {
  // The host where the port's own name does not start with it.
  const who = (x) => (x.host && !x.node.startsWith(x.host + " ") ? x.host + " " : "") + x.node + "[" + x.port + "]";
  const head = el("p", { class: "blast", "data-routes": String(b.routes), "data-ports": String(b.ports),
                         text: "Hurts " + b.routes + " route" + (b.routes === 1 ? "" : "s") + " between " + b.ports +
                               " host port" + (b.ports === 1 ? "" : "s") +
                               (b.routing === "adaptive" ? " (the tables' static routes: adaptive routing is on)" : "") +
                               (b.listed.length ? ":" : "") });
  if (!b.listed.length) return head;
  const shown = b.listed.slice(0, 20);
  return el("div", {}, head,
    el("ul", { class: "blast-list" }, ...shown.map((x) => el("li", { "data-port": endKey(x.guid, x.port),
      text: who(x) + ": sends " + x.sends + ", receives " + x.receives }))),
    b.ports > shown.length ? el("p", { class: "muted", text: "and " + (b.ports - shown.length) + " more (GET api/v1/alerts)" }) : "");
}

function toggle(key) {
  if (state.open.has(key)) state.open.delete(key); else state.open.add(key);
  problemTable();
}

function problemTable() {
  const body = document.querySelector("#problems tbody");
  const list = [...state.cables.values()].sort(problemOrder);
  const shown = state.showAll ? list : list.slice(0, FIRST_PROBLEMS);
  body.replaceChildren(...shown.flatMap(problemRows));
  if (!list.length) body.append(el("tr", {}, el("td", { colspan: 5, class: "muted", text: "Nothing is wrong that this exporter can see." })));
  const more = document.getElementById("problems-more");
  more.hidden = list.length <= FIRST_PROBLEMS;
  more.textContent = state.showAll ? "Show the first " + FIRST_PROBLEMS : "Show all " + list.length;
}

// --- Findings: by kind, each kind a line with its count; the list behind a click.

// Congestion trees: where congestion starts (the root) and the ports that
// only wait behind it (victims), one line per tree; the victims behind a click.
function congestionSection() {
  const section = document.getElementById("congestion-section");
  const box = document.getElementById("congestion");
  const trees = (state.alerts && state.alerts.congestion_trees) || [];
  section.hidden = trees.length === 0;
  const open = new Set([...box.querySelectorAll("details[open]")].map((d) => d.dataset.root));
  box.replaceChildren();
  for (const t of trees) {
    const r = t.root;
    const key = r.guid + ":" + r.port;
    const behind = r.behind;
    const wait = r.xmit_wait_fraction !== null ? "waiting " + fmtPercent(r.xmit_wait_fraction) : "";
    const summary = el("summary", {},
      el("span", { class: "sev sev-" + t.severity, text: t.loop ? "loop" : "root" }), " ",
      portLink(r.guid, r.port, r.node),
      behind ? el("span", {}, " → ", portLink(behind.guid, behind.port, behind.node),
                  behind.kind === "hca" ? el("span", { class: "muted", text: behind.host ? " (host " + behind.host + " not draining)"
                                                                                      : " (host not draining)" }) : "") : "",
      el("span", { class: "muted", text: " · " + [wait, t.victims.length + (t.victims.length === 1 ? " victim" : " victims"),
                                                  t.victims.length ? "depth " + t.depth : "",
                                                  t.hoq_discarding.length ? t.hoq_discarding.length + " discarding at head of queue" : ""]
                                                  .filter((x) => x).join(" · ") }));
    const details = el("details", { "data-root": key, class: "tree" }, summary);
    const ul = el("ul", { class: "finding-list" });
    for (const v of [...t.victims].sort((x, y) => x.hops - y.hops).slice(0, MAX_LIST)) {
      ul.append(el("li", {}, portLink(v.guid, v.port, v.node),
        el("span", { class: "muted", text: " " + v.hops + (v.hops === 1 ? " hop" : " hops") + " behind" +
          (v.xmit_wait_fraction !== null ? ", waiting " + fmtPercent(v.xmit_wait_fraction) : "") +
          (v.hoq_lifetime_discards ? ", " + fmtNum(v.hoq_lifetime_discards) + " head-of-queue discards" : "") })));
    }
    if (t.victims.length > MAX_LIST) ul.append(el("li", { class: "muted", text: "and " + (t.victims.length - MAX_LIST) + " more (api/v1/alerts)" }));
    if (!t.victims.length) ul.append(el("li", { class: "muted", text: "No congested port waits behind it." }));
    details.append(ul);
    if (open.has(key)) details.open = true;
    box.append(details);
  }
}

function findingsSection() {
  const box = document.getElementById("findings");
  const list = (state.findings && state.findings.findings) || [];
  const kinds = new Map();
  for (const f of list) {
    if (!kinds.has(f.kind)) kinds.set(f.kind, []);
    kinds.get(f.kind).push(f);
  }
  const open = new Set([...box.querySelectorAll("details[open]")].map((d) => d.dataset.kind));
  box.replaceChildren();
  if (!list.length) { box.append(el("p", { class: "muted", text: "No topology findings." })); return; }
  for (const [kind, fs] of [...kinds].sort((x, y) => y[1].length - x[1].length)) {
    const details = el("details", { "data-kind": kind }, el("summary", {},
      el("span", { class: "state-" + (FINDING_STATE[kind] || "ok"), text: kind.replace(/_/g, " ") }), " · " + fs.length));
    const fill = () => {
      if (details.dataset.filled) return;
      details.dataset.filled = "1";
      const ul = el("ul", { class: "finding-list" });
      for (const f of fs.slice(0, MAX_LIST)) {
        ul.append(el("li", {}, f.a && f.b ? cableEnds(f.a, f.b) : f.node ? nodeLink(f.node.guid, f.node.name) : "fabric",
                     el("span", { class: "muted", text: " " + f.detail })));
      }
      if (fs.length > MAX_LIST) ul.append(el("li", { class: "muted", text: "and " + (fs.length - MAX_LIST) + " more (api/v1/topology?view=findings)" }));
      details.append(ul);
    };
    details.addEventListener("toggle", () => { if (details.open) fill(); });
    if (open.has(kind)) { details.open = true; fill(); }
    box.append(details);
  }
}

// --- Structure: matrices of switches by tier and pod, coloured by the
// worst cable between them.

// Per pair of switches (indices into structure.switches) and per switch's
// HCA cables: the worst state of their cables, from the problems and the
// degraded counts.
function cellStates() {
  const st = state.structure;
  const index = new Map(st.switches.map((s, i) => [s.guid, i]));
  const pairs = new Map(), hosts = new Map();
  const raise = (map, k, s) => { if (!map.has(k) || RANK[s] > RANK[map.get(k)]) map.set(k, s); };
  for (const [i, j, , degraded] of st.links) raise(pairs, i + "|" + j, degraded ? "degraded" : "ok");
  const mark = (a, b, s) => {
    const i = index.get(a.guid), j = index.get(b.guid);
    if (i !== undefined && j !== undefined) raise(pairs, Math.min(i, j) + "|" + Math.max(i, j), s);
    else if (i !== undefined) raise(hosts, i, s);
    else if (j !== undefined) raise(hosts, j, s);
  };
  for (const p of state.cables.values()) if (p.a && p.b) mark(p.a, p.b, p.state);
  for (const f of (state.findings && state.findings.findings) || []) {
    const s = FINDING_STATE[f.kind];
    if (s && f.a && f.b) mark(f.a, f.b, s);
  }
  return { index, pairs, hosts };
}

// A matrix: `rows` and `cols` are switch indices or groups {label,
// members}; a cell's state is the worst cable between a row member and a
// column member, and clicking it lists those cables (or zooms, opts.zoom).
// Extra columns: "HCAs" (the row's HCA cables, opts.hosts), "inside"
// (cables between members of one row, opts.inside) and "other" (cables to
// switches in no column and not one tier below: within a tier, skipping
// one, to another pod).
function matrix(id, title, rows, cols, cells, opts) {
  const st = state.structure;
  const width = (document.getElementById("structure").clientWidth || 1000) - 190;
  const maxCols = Math.max(8, Math.floor(width / 15) - 3);
  const group = (list, max) => {
    const items = list.map((x) => (typeof x === "number" ? { label: st.switches[x].name, members: [x], guid: st.switches[x].guid } : x));
    if (items.length <= max) return items;
    const size = Math.ceil(items.length / max), out = [];
    for (let i = 0; i < items.length; i += size) {
      const part = items.slice(i, i + size);
      out.push({ label: part[0].label + " … " + part[part.length - 1].label, members: part.flatMap((p) => p.members) });
    }
    return out;
  };
  const R = group(rows, 256), C = group(cols, maxCols);
  const colOf = new Map();
  C.forEach((c, k) => c.members.forEach((m) => colOf.set(m, k)));
  const rowOf = new Map();
  R.forEach((r, k) => r.members.forEach((m) => rowOf.set(m, k)));
  const adj = new Map();  // row member -> [[neighbour, cables]]
  const push = (x, y, n) => { if (rowOf.has(x)) { if (!adj.has(x)) adj.set(x, []); adj.get(x).push([y, n]); } };
  for (const [i, j, n] of st.links) { push(i, j, n); push(j, i, n); }
  // Which of a member's neighbours each extra column takes.
  const kind = (m, o) => {
    if (colOf.has(o)) return "col";
    if (opts.inside && rowOf.get(o) === rowOf.get(m)) return "inside";
    if (st.switches[o].tier === st.switches[m].tier - 1 && st.switches[o].pod === st.switches[m].pod) return "below";
    return "other";
  };
  const head = el("tr", {}, el("th", { class: "corner", text: opts.corner || "" }));
  if (opts.hosts) head.append(el("th", { class: "col extra", text: "HCAs" }));
  if (opts.inside) head.append(el("th", { class: "col extra", text: "inside" }));
  for (const c of C) head.append(el("th", { class: "col", title: c.label }, el("span", { text: c.label })));
  head.append(el("th", { class: "col extra", text: "other" }));
  const body = el("tbody");
  R.forEach((r) => {
    const tally = C.map(() => ({ state: null, cables: 0 }));
    const extra = { hcas: { state: null, cables: 0 }, inside: { state: null, cables: 0 }, other: { state: null, cables: 0 } };
    const take = (t, s, n) => { t.cables += n; if (t.state === null || RANK[s] > RANK[t.state]) t.state = s; };
    for (const m of r.members) {
      if (opts.hosts && st.switches[m].cas) take(extra.hcas, cells.hosts.get(m) || "ok", st.switches[m].cas);
      for (const [o, n] of adj.get(m) || []) {
        const s = cells.pairs.get(Math.min(m, o) + "|" + Math.max(m, o)) || "ok";
        const k = kind(m, o);
        if (k === "col") take(tally[colOf.get(o)], s, n);
        else if (k !== "below") take(extra[k], s, n);
      }
    }
    const label = r.guid ? el("th", { class: "row" }, nodeLink(r.guid, r.label))
                         : el("th", { class: "row" }, r.href ? el("a", { href: r.href, class: "zoom", text: r.label }) : r.label);
    const tr = el("tr", { "data-row": r.label }, label);
    const cell = (t, col, onclick) => el("td", {
      class: "cell " + (t.state === null ? "none" : t.state), "data-state": t.state || "", "data-col": col,
      "data-cables": t.cables,
      title: r.label + " – " + col + ": " + (t.state === null ? "no cable" : t.cables + (t.cables === 1 ? " cable, " : " cables, ") + t.state),
      onclick: t.state === null ? undefined : onclick });
    const guids = (members) => new Set(members.map((m) => st.switches[m].guid));
    const kindOf = (memberGuid, remoteGuid) => {
      const m = cells.index.get(memberGuid), o = cells.index.get(remoteGuid);
      return o === undefined ? "hcas" : kind(m, o);
    };
    if (opts.hosts) tr.append(cell(extra.hcas, "HCAs", () => openCell(r, "HCAs", (m, o) => kindOf(m, o) === "hcas")));
    if (opts.inside) tr.append(cell(extra.inside, "inside", () => openCell(r, "inside", (m, o) => kindOf(m, o) === "inside")));
    C.forEach((c, k) => tr.append(cell(tally[k], c.label, () => {
      if (opts.zoom) return opts.zoom(r);
      const set = guids(c.members);
      return openCell(r, c.label, (m, o) => set.has(o));
    })));
    tr.append(cell(extra.other, "other", () => openCell(r, "other cables", (m, o) => kindOf(m, o) === "other")));
    body.append(tr);
  });
  return el("div", { class: "matrix-box" }, el("h3", { text: title }),
            el("table", { class: "matrix", id }, el("thead", {}, head), body));
}

function byTier(filter) {
  const st = state.structure, out = new Map();
  st.switches.forEach((s, i) => {
    if (!filter(s)) return;
    if (!out.has(s.tier)) out.set(s.tier, []);
    out.get(s.tier).push(i);
  });
  return out;
}

function structureSection() {
  const host = document.getElementById("structure");
  const st = state.structure;
  if (!st) { host.replaceChildren(el("p", { class: "muted", text: "Waiting for the first discovery…" })); return; }
  if (state.topology) { draw(state.topology); return; }
  const cells = cellStates();
  const parts = [];
  const crumbs = st.pods.length ? el("nav", { class: "crumbs", id: "crumbs" }, el("a", { href: "#", "data-zoom": "fabric", text: "Fabric" })) : "";
  if (st.pods.length && state.pod !== null && st.pods[state.pod]) {
    crumbs.append(" › ", el("strong", { text: st.pods[state.pod].name }));
    const tiers = byTier((s) => s.pod === state.pod);
    const top = byTier((s) => s.pod === null && s.tier >= 0);
    const ranks = [...tiers.keys()].filter((t) => t >= 0).sort((x, y) => x - y);
    for (const t of ranks) {
      const up = tiers.get(t + 1) || top.get(t + 1);
      if (!up) continue;
      const s0 = st.switches[tiers.get(t)[0]];
      parts.push(matrix("matrix-pod-" + t, st.pods[state.pod].name + ": " + tierName(t) + " × " + tierName(t + 1),
                        tiers.get(t), up, cells, { hosts: t === 0, corner: s0 ? tierName(t) + " \\ " + tierName(t + 1) : "" }));
    }
  } else if (st.pods.length) {
    // Pods × the top tier: a cell is every cable between the pod and those switches.
    const top = byTier((s) => s.pod === null && s.tier >= 0);
    const topTier = Math.max(...top.keys());
    const rows = st.pods.map((p, k) => ({
      label: p.name, href: "#pod=" + k, pod: k,
      members: st.switches.map((s, i) => [s, i]).filter(([s]) => s.pod === k).map(([, i]) => i),
    }));
    parts.push(matrix("matrix-pods", "Pods × " + tierName(topTier) + " (a pod's row: click it to zoom in)", rows,
                      top.get(topTier) || [], cells,
                      { hosts: true, inside: true, corner: "pod \\ " + tierName(topTier), zoom: (r) => { location.hash = "pod=" + r.pod; } }));
  } else {
    const tiers = byTier((s) => s.tier >= 0);
    const ranks = [...tiers.keys()].sort((x, y) => x - y);
    for (const t of ranks) {
      if (!tiers.has(t + 1)) continue;
      parts.push(matrix("matrix-" + tierName(t), tierName(t) + " × " + tierName(t + 1), tiers.get(t), tiers.get(t + 1), cells,
                        { hosts: t === 0, corner: tierName(t) + " \\ " + tierName(t + 1) }));
    }
  }
  const unranked = st.switches.map((s, i) => [s, i]).filter(([s]) => s.tier < 0);
  if (unranked.length) {
    parts.push(el("p", {}, "Unranked switches: ", ...unranked.slice(0, 50).flatMap(([s], k) => [k ? ", " : "", nodeLink(s.guid, s.name)])));
  }
  if (!parts.length) parts.push(el("p", { class: "muted", text: "No switch-to-switch cables." }));
  host.replaceChildren(crumbs, legend(true), ...parts);
}

function tierName(t) {
  const st = state.structure;
  const x = st && st.tiers.find((y) => y.tier === t);
  return x ? x.name : "tier" + t;
}

// A cell opened: the cables of a row's switches that `want` (member GUID,
// far GUID) takes, read from the node API.
async function openCell(row, what, want) {
  const st = state.structure;
  const members = row.members.slice(0, 64);
  const details = await Promise.all(members.map((m) => get("api/v1/node?guid=" + encodeURIComponent(st.switches[m].guid)).catch(() => null)));
  const rows = [];
  for (const d of details) {
    if (!d) continue;
    for (const p of d.ports) {
      const r = p.link && p.link.remote;
      if (!r || !want(p.end.guid, r.guid)) continue;
      const a = { guid: p.end.guid, port: p.end.port, node: p.end.node };
      const b = { guid: r.guid, port: r.port, node: r.name };
      const prob = state.cables.get(cableKey(a, b));
      const s = prob ? prob.state : p.degraded ? "degraded" : "ok";
      rows.push(el("tr", { "data-state": s }, el("td", { class: "state-" + s, text: s }), el("td", {}, cableEnds(a, b)),
                   el("td", { text: p.link.rate })));
    }
  }
  rows.sort((x, y) => RANK[y.dataset.state] - RANK[x.dataset.state]);
  drill(el("h3", { text: row.label + " – " + what }),
        el("table", { id: "cell-cables" }, el("thead", {}, el("tr", {}, ...["State", "Cable", "Rate"].map((h) => el("th", { text: h })))),
           el("tbody", {}, ...rows.slice(0, 400))),
        rows.length > 400 ? el("p", { class: "muted", text: (rows.length - 400) + " more" }) : null,
        row.members.length > 64 ? el("p", { class: "muted", text: "Showing the first 64 switches of " + row.members.length + "; zoom in." }) : null);
}

// Each cable's worst state and why, from the topology (degraded links,
// findings) and the alerts: the colours of the drawing.
function cableStates(topology) {
  const cables = new Map();
  const markCable = (a, b, st, why) => {
    const k = cableKey(a, b);
    const c = cables.get(k) || { state: "ok", why: [], a, b };
    if (RANK[st] > RANK[c.state]) c.state = st;
    if (why && !c.why.includes(why)) c.why.push(why);
    cables.set(k, c);
  };
  const actual = new Set((topology.links || []).map((l) => cableKey(l.a, l.b)));
  const remote = new Map();
  for (const n of topology.nodes || []) {
    for (const p of n.ports || []) if (p.remote) remote.set(endKey(n.guid, p.port), p.remote);
  }
  // A miswiring names the planned cable, which may not exist: then the
  // real cables at its two ports are the miswired ones.
  const mark = (a, b, st, why) => {
    if (st !== "down" && !actual.has(cableKey(a, b))) {
      let placed = false;
      for (const e of [a, b]) {
        const r = remote.get(endKey(e.guid, e.port));
        if (r) { markCable(e, r, st, why); placed = true; }
      }
      if (placed) return;
    }
    markCable(a, b, st, why);
  };
  for (const l of topology.links || []) if (l.degraded) mark(l.a, l.b, "degraded", l.degraded);
  for (const f of topology.findings || []) {
    const st = FINDING_STATE[f.kind];
    if (st && f.a && f.b) mark(f.a, f.b, st, f.kind.replace(/_/g, " "));
  }
  for (const p of state.cables.values()) if (p.a && p.b) mark(p.a, p.b, p.state, p.alerts.map((a) => CAUSE_LABEL[a.cause]).join(", "));
  return cables;
}

const BOX_W = 96, BOX_H = 28, ROW = 110, LEFT = 90;

// Where each node goes: switches in rows by tier (the top tier first,
// unranked last), each CA under the switch it hangs from. Also the rows'
// labels, as SVG text, into `svg`.
function placeNodes(topology, svg, width) {
  const switches = topology.nodes.filter((n) => n.type === "switch");
  const cas = topology.nodes.filter((n) => n.type !== "switch");
  const tiers = new Map();
  for (const s of switches) {
    const t = s.tier === undefined ? -1 : s.tier;
    if (!tiers.has(t)) tiers.set(t, []);
    tiers.get(t).push(s);
  }
  const order = [...tiers.keys()].sort((x, y) => (x === -1 ? 1e9 : x) < (y === -1 ? 1e9 : y) ? 1 : -1);
  const pos = new Map();
  order.forEach((t, row) => {
    const list = tiers.get(t).sort((a, b) => naturalCompare(a.name, b.name));
    const y = 30 + row * ROW;
    svg.append(el("svg:text", { x: 8, y: y + BOX_H / 2 + 4, class: "tier-label", text: t === -1 ? "unranked" : (list[0].tier_name || "tier " + t) }));
    const span = (width - LEFT - 20) / list.length;
    list.forEach((s, i) => pos.set(s.guid, { x: LEFT + span * i + span / 2, y: y + BOX_H / 2, node: s }));
  });
  const caY = 30 + order.length * ROW + 20;
  const under = new Map();
  for (const c of cas) {
    const p = (c.ports || []).find((x) => x.remote);
    const sw = p ? p.remote.guid : "";
    if (!under.has(sw)) under.set(sw, []);
    under.get(sw).push(c);
  }
  for (const [sw, list] of under) {
    const anchor = pos.get(sw) || { x: LEFT, y: caY };
    list.sort((a, b) => naturalCompare(a.name, b.name));
    list.forEach((c, i) => pos.set(c.guid, { x: anchor.x + (i - (list.length - 1) / 2) * 14, y: caY, node: c, ca: true }));
  }
  return pos;
}

// One line per pair of nodes, of the worst state of its cables, and one
// per planned cable that is down (missing).
function linkLines(topology, cables, pos) {
  const groups = new Map();
  for (const l of topology.links || []) {
    const pa = pos.get(l.a.guid), pb = pos.get(l.b.guid);
    if (!pa || !pb) continue;
    const c = cables.get(cableKey(l.a, l.b));
    const st = c ? c.state : "ok";
    const gk = [l.a.guid, l.b.guid].sort().join("|");
    const g = groups.get(gk) || { pa, pb, state: "ok", cables: [] };
    if (RANK[st] > RANK[g.state]) g.state = st;
    g.cables.push({ l, st, why: c ? c.why : [] });
    groups.set(gk, g);
  }
  for (const c of cables.values()) {
    if (c.state !== "down") continue;
    const pa = pos.get(c.a.guid), pb = pos.get(c.b.guid);
    if (pa && pb) groups.set("missing|" + cableKey(c.a, c.b), { pa, pb, state: "down", cables: [{ l: { a: c.a, b: c.b, rate: "" }, st: "down", why: c.why }] });
  }
  const linkLayer = el("svg:g", { id: "links" });
  for (const g of [...groups.values()].sort((x, y) => RANK[x.state] - RANK[y.state])) {
    const title = g.cables.map((c) => nameOf(c.l.a.guid) + "[" + c.l.a.port + "] ⇄ " + nameOf(c.l.b.guid) + "[" + c.l.b.port + "] " +
                                      c.l.rate + (c.why.length ? ": " + c.why.join("; ") : "")).join("\n");
    const first = g.cables.find((c) => c.st === g.state) || g.cables[0];
    linkLayer.append(el("svg:line", { x1: g.pa.x, y1: g.pa.y, x2: g.pb.x, y2: g.pb.y, class: "link " + g.state,
                                      "data-cable": cableKey(first.l.a, first.l.b), "data-count": g.cables.length,
                                      onclick: () => { location.hash = "port=" + endKey(first.l.a.guid, first.l.a.port); } },
                                   el("svg:title", { text: title })));
  }
  return linkLayer;
}

// The drawing of a small fabric: every switch by tier, the HCAs under their leaf.
function draw(topology) {
  const host = document.getElementById("structure");
  const cables = cableStates(topology);
  const rows = new Set(topology.nodes.filter((n) => n.type === "switch").map((s) => (s.tier === undefined ? -1 : s.tier))).size;
  const width = Math.max(600, (host.clientWidth || 1000) - 4);
  const height = 30 + rows * ROW + 60;
  const svg = el("svg:svg", { width, height, viewBox: "0 0 " + width + " " + height, id: "fabric-svg" });
  const pos = placeNodes(topology, svg, width);
  svg.append(linkLines(topology, cables, pos));
  const alerting = new Set();
  for (const c of cables.values()) if (c.state !== "ok") { alerting.add(c.a.guid); alerting.add(c.b.guid); }
  for (const [guid, p] of pos) {
    learn(guid, p.node.name);
    if (p.ca) {
      svg.append(el("svg:g", { class: "ca", "data-guid": guid, onclick: () => { location.hash = "node=" + guid; } },
                    el("svg:circle", { cx: p.x, cy: p.y, r: 5 }), el("svg:title", { text: p.node.name + " " + guid })));
      continue;
    }
    svg.append(el("svg:g", { class: "node" + (alerting.has(guid) ? " alerting" : ""), "data-guid": guid,
                             onclick: () => { location.hash = "node=" + guid; } },
                  el("svg:rect", { x: p.x - BOX_W / 2, y: p.y - BOX_H / 2, width: BOX_W, height: BOX_H, rx: 4 }),
                  el("svg:text", { x: p.x, y: p.y + 4, "text-anchor": "middle", text: p.node.name.slice(0, 14) }),
                  el("svg:title", { text: p.node.name + " " + guid + " LID " + p.node.lid })));
  }
  host.replaceChildren(legend(false), svg);
}

function legend(cells) {
  const keys = [["bad", "bad cable / flapping"], ["miswired", "miswired"], ["degraded", "degraded"], ["congested", "congested"],
                ["down", "down"], ["ok", "healthy"]];
  if (cells) keys.push(["none", "no cable"]);
  return el("div", { class: "legend" }, ...keys.map(([k, t]) => el("span", { class: "key " + k, text: t })));
}

// --- The side panel: a node page, a port page, a cell's cables, search results.

function drill(...children) {
  document.getElementById("drill-body").replaceChildren(...children);
  document.getElementById("drill").hidden = false;
}

function kv(rows) {
  return el("table", { class: "kv" }, el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", { text: k }),
    v instanceof Node ? el("td", {}, v) : el("td", { text: v === null || v === undefined ? "–" : String(v) })))));
}

function alertLines(alerts, id) {
  if (!alerts.length) return el("p", { class: "muted", id, text: "none" });
  return el("ul", { id }, ...alerts.map((a) => el("li", { class: "sev-" + a.severity, "data-cause": a.cause },
    el("strong", { text: (CAUSE_LABEL[a.cause] || a.cause) + " " }), cableEnds(a.ends[0], a.ends[1]),
    " · " + (keyEvidence(a) ? evidenceGist(keyEvidence(a)) : "") + " · raised ", timeCell(a.since, a.since_unix))));
}

// A port's health in one phrase per signal that moved.
function healthText(h) {
  if (!h) return "";
  const bits = [];
  const e = h.this_end;
  if (e.bit_error_rate) bits.push("BER " + fmtNum(e.bit_error_rate));
  if (e.xmit_wait_fraction) bits.push("waiting " + fmtPercent(e.xmit_wait_fraction));
  if (h.downs_in_window) bits.push(h.downs_in_window + " downs");
  for (const [s, v] of Object.entries(e.per_second)) {
    if (v && s !== "rcv_data" && s !== "rcv_packets" && s !== "xmit_wait") bits.push(evidenceText({ signal: s, value: v, unit: "per_second" }));
  }
  if (e.per_second.rcv_data) bits.push("in " + fmtBytes(e.per_second.rcv_data * 4) + "/s");
  return bits.join(", ");
}

async function openNode(guid) {
  let d;
  try {
    d = await get("api/v1/node?guid=" + encodeURIComponent(guid));
  } catch (e) {
    drill(el("h3", { text: nameOf(guid) }), el("p", { class: "muted", text: e.message }));
    return;
  }
  const n = d.node;
  learn(n.guid, n.name);
  // Ports with a cable (or up); the others only counted.
  const cabled = d.ports.filter((p) => p.link && (p.link.remote || p.link.state !== "down"));
  const idle = d.ports.length - cabled.length;
  const ports = cabled.map((p) => {
    const prob = p.link && p.link.remote ? state.cables.get(cableKey({ guid: n.guid, port: p.end.port }, p.link.remote)) : null;
    const st = prob ? prob.state : p.degraded ? "degraded" : p.link && p.link.state !== "active" ? "down" : "ok";
    return el("tr", { "data-port": endKey(n.guid, p.end.port), "data-state": st },
      el("td", {}, portLink(n.guid, p.end.port, n.name)),
      el("td", { class: "state-" + st, text: p.link ? p.link.state + (st !== "ok" && st !== "down" ? ", " + st : "") : "–" }),
      el("td", { text: p.link ? p.link.rate : "–" }),
      el("td", {}, p.link && p.link.remote ? portLink(p.link.remote.guid, p.link.remote.port, p.link.remote.name) : "–"),
      el("td", { class: "muted", text: healthText(p.health) }));
  });
  drill(el("h3", { id: "node-title", text: n.name }),
        kv([["type", TYPE_LABEL[n.type] || n.type], ["GUID", n.guid], ["LID", n.lid], ["tier", n.tier_name], ["pod", n.pod]]
           .filter(([, v]) => v !== undefined && v !== null)),
        el("h4", { text: "Alerts" }), alertLines(d.alerts, "node-alerts"),
        el("h4", { text: "Findings" }),
        d.findings.length ? el("ul", { id: "node-findings" }, ...d.findings.map((f) => el("li", { text: f.kind.replace(/_/g, " ") + ": " + f.detail })))
                          : el("p", { class: "muted", text: "none" }),
        el("h4", { text: "Ports (click one for its counters)" }),
        el("table", { id: "node-ports" }, el("thead", {}, el("tr", {}, ...["Port", "State", "Rate", "Cable to", "Now"].map((h) => el("th", { text: h })))),
           el("tbody", {}, ...ports)),
        idle ? el("p", { class: "muted", text: idle + (idle === 1 ? " port" : " ports") + " without a cable." }) : null,
        nodeCounters(n, cabled));
}

// Every cabled port's counter totals, the counters that moved on any of them.
function nodeCounters(n, ports) {
  const names = [...new Set(ports.flatMap((p) => Object.keys(p.counters || {}).filter((k) => p.counters[k])))];
  if (!names.length) return el("p", { class: "muted", text: "No counter has moved on these ports." });
  return el("details", { id: "node-counters" }, el("summary", { text: "Counters (totals) of these ports" }),
    el("div", { class: "wide" }, el("table", {},
      el("thead", {}, el("tr", {}, el("th", { text: "port" }), ...names.map((k) => el("th", { text: k.replace(/_/g, " ") })))),
      el("tbody", {}, ...ports.map((p) => el("tr", { "data-port": endKey(n.guid, p.end.port) }, el("td", { text: String(p.end.port) }),
        ...names.map((k) => {
          const v = (p.counters || {})[k];
          return el("td", { "data-counter": k, title: v === undefined ? "" : String(v),
                            text: v === undefined ? "–" : k.endsWith("bytes") ? fmtBytes(v) : fmtNum(v) });
        })))))));
}

async function openPort(guid, port) {
  let d;
  try {
    d = await get("api/v1/port?guid=" + encodeURIComponent(guid) + "&port=" + port);
  } catch (e) {
    drill(el("h3", { text: nameOf(guid) + "[" + port + "]" }), el("p", { class: "muted", text: e.message }));
    return;
  }
  learn(d.end.guid, d.end.node);
  const remote = d.link && d.link.remote;
  const parts = [el("h3", {}, el("span", { id: "port-title", text: d.end.node + "[" + d.end.port + "]" }),
                    remote ? el("span", { class: "muted", text: " ⇄ " }) : null,
                    remote ? el("span", { id: "port-remote" }, portLink(remote.guid, remote.port, remote.name)) : null),
                 el("p", {}, "Node: ", nodeLink(d.end.guid, d.end.node)),
                 kv([["GUID", d.end.guid], ["LID", d.end.lid], ["state", d.link ? d.link.state + " (" + d.link.phys_state.replace(/_/g, " ") + ")" : null],
                     ["rate", d.link ? d.link.rate : null], ["read", d.stale ? "stale: no answer in the last sweep" : d.last_update ? ago(unixOf(d.last_update)) : null]])];
  parts.push(el("h4", { text: "Alerts on this cable" }), alertLines(d.alerts, "port-alerts"));
  if (d.health) {
    const h = d.health;
    parts.push(el("h4", { text: "The cable over the last " + Math.round(h.this_end.window_seconds) + " s" }),
               kv([["up", h.up ? "yes" : "no"], ["rate (best seen)", h.rate + " (" + h.best_rate + ")"],
                   ["link downs (window / total)", h.downs_in_window + " / " + h.downs_total],
                   ["waiting to send", fmtPercent(h.this_end.xmit_wait_fraction) + " here, " + fmtPercent(h.far_end.xmit_wait_fraction) + " far end"],
                   ["bit error rate", fmtNum(h.this_end.bit_error_rate) + " here, " + fmtNum(h.far_end.bit_error_rate) + " far end"]]));
    // The signals that moved at either end, traffic first; the still ones named on one line.
    const signals = [...new Set([...Object.keys(h.this_end.per_second), ...Object.keys(h.far_end.per_second)])];
    const moved = (x) => h.this_end.per_second[x] || h.far_end.per_second[x];
    const traffic = (x) => x === "rcv_data" || x === "rcv_packets";
    const shown = signals.filter((x) => traffic(x) || moved(x)).sort((x, y) => traffic(y) - traffic(x));
    const still = signals.filter((x) => !shown.includes(x));
    const rate = (x, v) => (v === undefined ? "–" : x === "rcv_data" ? fmtBytes(v * 4) + "/s" : fmtNum(v) + "/s");
    parts.push(el("table", { id: "port-rates" },
      el("thead", {}, el("tr", {}, el("th", { text: "per second" }), el("th", { text: "this end" }), el("th", { text: "far end" }))),
      el("tbody", {}, ...shown.map((x) => el("tr", { "data-signal": x }, el("td", { text: SIGNAL_LABEL[x] || x }),
        el("td", { text: rate(x, h.this_end.per_second[x]) }), el("td", { text: rate(x, h.far_end.per_second[x]) }))))));
    if (still.length) parts.push(el("p", { class: "muted", text: "No " + still.map((x) => SIGNAL_LABEL[x] || x).join(", ") + " at either end." }));
  }
  parts.push(...fecParts(d.fec));
  parts.push(...moduleParts(d.module));
  parts.push(el("details", { id: "port-counters-box" }, el("summary", { text: "Counters (totals since the exporter started)" }),
             el("table", { id: "port-counters" }, el("tbody", {}, ...Object.entries(d.counters).map(([k, v]) =>
               el("tr", { "data-counter": k }, el("td", { text: k.replace(/_/g, " ") + (d.pinned.includes(k) ? " (pinned)" : "") }),
                  el("td", { "data-value": String(v), title: String(v), text: k.endsWith("bytes") ? fmtBytes(v) : fmtNum(v) })))))));
  drill(...parts);
}

const FEC_MODE = {
  none: "none", fire_code: "Fire-code", rs_fec: "RS-FEC (528,514)", low_latency_rs_fec: "low-latency RS-FEC (271,257)",
  rs_fec2: "RS-FEC (544,514)", mlnx_strong_rs_fec: "NVIDIA strong RS-FEC", mlnx_low_latency_rs_fec: "NVIDIA low-latency RS-FEC",
  mlnx_adaptive_rs_fec: "NVIDIA adaptive RS-FEC", mlnx_cod_fec: "NVIDIA correct-on-demand FEC",
  mlnx_zero_latency_fec: "NVIDIA zero-latency FEC", mlnx_rs_fec_544_514_plr: "RS-FEC (544,514) with PLR",
  mlnx_rs_fec_271_257_plr: "RS-FEC (271,257) with PLR",
};

// The cable's forward error correction, both ends as last read: the
// ratios over each end's FEC window and each lane's raw ratio, the bad
// lane first to see.
function fecParts(fec) {
  const counted = (x) => (x && x.source !== "none" ? x : null);
  const here = counted(fec && fec.this_end), there = counted(fec && fec.far_end);
  if (!here && !there) return [];
  const both = (k) => fmtNum(here ? here[k] : null) + " here, " + fmtNum(there ? there[k] : null) + " far end";
  const lanes = Math.max(here ? here.lanes.length : 0, there ? there.lanes.length : 0);
  // A lane's count: corrected symbols (the PMA's) or raw errors (PPCNT's).
  const cell = (x, i, k) => {
    const lane = x && x.lanes[i] && { ...x.lanes[i], errors: x.lanes[i].corrected_symbols ?? x.lanes[i].raw_errors };
    const worst = x && x.worst_lane === i && k === "raw_bit_error_ratio";
    return el("td", { class: worst ? "worst-lane" : "", "data-end": x === here ? "this" : "far",
                      text: lane ? fmtNum(lane[k]) : "–" });
  };
  const window = (here || there).window_seconds;
  return [el("h4", { text: "Forward error correction" + (window ? " over the last " + Math.round(window) + " s" : "") }),
          kv([["mode", FEC_MODE[(here || there).mode] || (here || there).mode],
              ["raw (pre-FEC) bit error ratio", both("raw_bit_error_ratio")],
              ["effective (post-FEC) bit error ratio", both("effective_bit_error_ratio")],
              ["symbol bit error ratio", both("symbol_bit_error_ratio")],
              ["lowest raw ratio of the trend period", both("raw_bit_error_ratio_baseline")],
              ["uncorrectable blocks", both("uncorrectable_blocks")],
              ["counters from", (here ? here.source : "–") + " here, " + (there ? there.source : "–") + " far end"]]),
          el("table", { id: "port-lanes" },
            el("thead", {}, el("tr", {}, ...["lane", "raw BER here", "errors here", "raw BER far end", "errors far end"]
              .map((h) => el("th", { text: h })))),
            el("tbody", {}, ...Array.from({ length: lanes }, (_, i) => el("tr", { "data-lane": String(i) },
              el("td", { text: String(i) }), cell(here, i, "raw_bit_error_ratio"), cell(here, i, "errors"),
              cell(there, i, "raw_bit_error_ratio"), cell(there, i, "errors")))))];
}

// The cable's modules, both ends as last read: what they are and how hot.
function moduleParts(module) {
  const here = module && module.this_end, there = module && module.far_end;
  if (!here && !there) return [];
  const both = (f) => (here ? f(here) : "–") + " here, " + (there ? f(there) : "–") + " far end";
  const temp = (m) => (m.temperature_celsius === null ? "–" : m.temperature_celsius + " C") +
    (m.temperature_high_threshold_celsius === null ? "" : " (alarm " + m.temperature_high_threshold_celsius + " C)");
  return [el("h4", { text: "Modules" }),
          el("div", { id: "port-modules" }, kv([["part", both((m) => m.vendor + " " + m.part_number)],
              ["serial number", both((m) => m.serial_number)],
              ["type", both((m) => m.type.replace(/_/g, " ") + ", " + m.identifier)],
              ["temperature", both(temp)]]))];
}

// A host: its HCAs by rail (a rail-optimized fabric's; else by device),
// each port's leaf, state and problems, its alerts and findings.
async function openHost(name) {
  let d;
  try {
    d = await get("api/v1/host?name=" + encodeURIComponent(name));
  } catch (e) {
    drill(el("h3", { text: name }), el("p", { class: "muted", text: e.message }));
    return;
  }
  const rows = [];
  for (const x of d.hcas) {
    learn(x.guid, x.name);
    for (const p of x.ports) {
      const prob = state.cables.get(cableKey({ guid: x.guid, port: p.port }, p.leaf));
      const st = prob ? prob.state : p.state !== "active" ? "down" : "ok";
      rows.push({ rail: p.rail_index, tr: el("tr", { "data-device": x.device, "data-rail": p.rail || "", "data-state": st },
        el("td", { text: p.rail || "–" }),
        el("td", {}, el("a", { class: "port", "data-port": endKey(x.guid, p.port), href: "#port=" + endKey(x.guid, p.port),
                               text: x.device + "[" + p.port + "]" })),
        el("td", {}, portLink(p.leaf.guid, p.leaf.port, p.leaf.node)),
        el("td", { text: p.unit || "–" }),
        el("td", { class: "state-" + st, text: p.state + ", " + p.rate + (st !== "ok" && st !== "down" ? ", " + st : "") })) });
    }
  }
  // Rail order; ports on no rail last.
  rows.sort((x, y) => (x.rail < 0 ? 1e9 : x.rail) - (y.rail < 0 ? 1e9 : y.rail));
  drill(el("h3", { id: "host-title", text: d.host }),
        kv([["layout", d.layout.replace(/_/g, " ")], ["unit", d.unit], ["HCAs", d.hcas.length]].filter(([, v]) => v !== null)),
        el("h4", { text: "Alerts" }), alertLines(d.alerts, "host-alerts"),
        el("h4", { text: "Findings" }),
        // A swapped pair is one finding per cable with one text: said once.
        d.findings.length ? el("ul", { id: "host-findings" }, ...[...new Map(d.findings.map((f) => [f.detail, f])).values()].map((f) =>
                              el("li", { "data-kind": f.kind, text: f.kind.replace(/_/g, " ") + ": " + f.detail })))
                          : el("p", { class: "muted", text: "none" }),
        el("h4", { text: d.layout === "rail_optimized" ? "HCAs by rail" : "HCAs" }),
        el("table", { id: "host-hcas" }, el("thead", {}, el("tr", {}, ...["Rail", "HCA port", "Leaf port", "Unit", "State"].map((h) => el("th", { text: h })))),
           el("tbody", {}, ...rows.map((r) => r.tr))),
        ...hostKernel(d.hcas.filter((x) => x.kernel)));
}

// What the host's own kernel says of its HCAs (an exporter in local scope
// on that host): firmware, the PCIe link against its maximum, NUMA node,
// the transport errors the host rules watch and the jobs holding them.
function hostKernel(hcas) {
  if (!hcas.length) return [];
  const gts = (v) => (v / 1e9).toFixed(1).replace(/\.0$/, "") + " GT/s";
  const rows = hcas.map((x) => {
    const k = x.kernel, p = k.pcie;
    const errors = k.ports.flatMap((port) => Object.entries(port.transport_errors).filter(([, v]) => v > 0)
      .map(([name, v]) => (k.ports.length > 1 ? "[" + port.port + "] " : "") + name + " " + v));
    const jobs = [...new Set(k.ports.flatMap((port) => port.jobs.map((j) =>
      j.source === "slurm" ? "job " + j.hpc_job : j.namespace + "/" + j.pod)))];
    return el("tr", { "data-device": k.device, "data-pcie": p ? (p.degraded ? "degraded" : "ok") : "" },
      el("td", { text: k.device }),
      el("td", { text: k.firmware_version || "–" }),
      el("td", p ? { class: p.degraded ? "state-degraded" : "",
                     text: gts(p.transfers_per_second) + " x" + p.width + (p.degraded ? " of " + gts(p.max_transfers_per_second) + " x" + p.max_width : "") }
                 : { text: "–" }),
      el("td", { text: k.numa_node === null ? "–" : String(k.numa_node) }),
      el("td", { class: errors.length ? "state-bad" : "", text: errors.length ? errors.join(", ") : "none" }),
      el("td", { text: jobs.length ? jobs.join(", ") : "–" }));
  });
  return [el("h4", { text: "On the host" }),
          el("table", { id: "host-kernel" }, el("thead", {}, el("tr", {}, ...["HCA", "Firmware", "PCIe", "NUMA", "Transport errors", "Jobs"].map((h) => el("th", { text: h })))),
             el("tbody", {}, ...rows))];
}

// --- Search.

let searchSeq = 0;
async function search(text, openFirst) {
  const box = document.getElementById("search-results");
  const q = text.trim();
  const seq = ++searchSeq;
  if (!q) { box.hidden = true; box.replaceChildren(); return; }
  let r;
  try {
    r = await get("api/v1/search?limit=20&q=" + encodeURIComponent(q));
  } catch (e) {
    if (seq !== searchSeq) return;
    box.replaceChildren(el("li", { class: "muted", text: e.message }));
    box.hidden = false;
    return;
  }
  if (seq !== searchSeq) return;
  const items = r.results.map((n) => {
    if (n.type === "host") {
      return el("li", { "data-host": n.name, "data-type": "host" }, hostLink(n.name),
                el("span", { class: "muted", text: " host · " + n.hcas + (n.hcas === 1 ? " HCA" : " HCAs") + (n.unit ? " · " + n.unit : "") }));
    }
    learn(n.guid, n.name);
    const cable = (n.ports || []).find((p) => p.remote);
    const li = el("li", { "data-guid": n.guid, "data-type": n.type },
      nodeLink(n.guid, n.name),
      el("span", { class: "muted", text: " " + (TYPE_LABEL[n.type] || n.tier_name || n.type) + (n.pod ? " · " + n.pod : "") +
                                         " · LID " + n.lid + (n.match === "guid" ? " · " + n.guid : "") }));
    if (cable) li.append(" · cable ", el("a", { class: "cable-open port", "data-port": endKey(n.guid, cable.port), href: "#port=" + endKey(n.guid, cable.port),
                                               text: "[" + cable.port + "] ⇄ " + cable.remote.name + "[" + cable.remote.port + "]" }));
    return li;
  });
  box.replaceChildren(...items);
  if (r.total > r.results.length) box.append(el("li", { class: "muted", text: (r.total - r.results.length) + " more: type more of the name" }));
  if (!items.length) box.append(el("li", { class: "muted", text: "nothing matches " + q }));
  box.hidden = false;
  if (openFirst && r.results.length) {
    const n = r.results[0];
    const cable = (n.ports || []).find((p) => p.remote);
    location.hash = n.type === "host" ? "host=" + encodeURIComponent(n.name)
                  : cable ? "port=" + endKey(n.guid, cable.port) : "node=" + n.guid;
    box.hidden = true;
  }
}

// --- Deep links: #node=GUID, #port=GUID:PORT, #host=NAME, #pod=N, #q=TEXT (and
// pod with node or port: "#pod=2&port=0x...:3").

function route() {
  const h = new URLSearchParams(location.hash.slice(1));
  const pod = h.has("pod") ? Number(h.get("pod")) : null;
  if (pod !== state.pod) { state.pod = Number.isInteger(pod) ? pod : null; structureSection(); }
  const port = /^(0x[0-9a-fA-F]+):(\d+)$/.exec(h.get("port") || "");
  if (port) openPort(port[1], Number(port[2]));
  else if (h.get("node")) openNode(h.get("node"));
  else if (h.get("host")) openHost(h.get("host"));
  else document.getElementById("drill").hidden = true;
  if (h.get("q") !== null && h.get("q") !== document.getElementById("search").value) {
    document.getElementById("search").value = h.get("q");
    search(h.get("q"), false);
  }
}

// --- Loading.

async function load(part, path) {
  try { return await get(path); } catch (e) { part.error = e.message; return null; }
}

// What this exporter runs (GET /api/v1/collectors: the registry as it has
// it): a collector's data is asked only where it is on, and each endpoint
// a collector answers is linked in the header by its title.
function on(name) {
  return !state.collectors || state.collectors.some((c) => c.name === name && c.enabled);
}

function collectorLinks() {
  const box = document.getElementById("collector-links");
  const links = [];
  for (const c of state.collectors || []) {
    if (!c.enabled) continue;
    for (const r of c.routes) {
      links.push(" · ", el("a", { href: ofFabric(r.path), "data-collector": c.name, text: r.title }));
    }
  }
  box.replaceChildren(...links);
}

async function refresh(withStructure) {
  const errors = {};
  if (withStructure || !state.collectors) {
    const c = await get("api/v1/collectors").catch(() => null);
    if (c) state.collectors = c.collectors;
    collectorLinks();
  }
  const [alerts, findings, sms, structure, whatif] = await Promise.all([
    load(errors, "api/v1/alerts?state=active"),
    load(errors, "api/v1/topology?view=findings"),
    // 404: another exporter watches them (its scope)
    on("subnet_managers") ? get("api/v1/subnet_managers").catch(() => null) : Promise.resolve(null),
    withStructure ? load(errors, "api/v1/structure") : Promise.resolve(state.structure),
    // Each alert's cable taken out: its verdict (404, 503: not here, not yet)
    on("blast_radius") ? get("api/v1/whatif?limit=0").catch(() => null) : Promise.resolve(null),
  ]);
  state.whatif = new Map(((whatif && whatif.alerts) || []).map((w) => [w.alert_id, w]));
  state.alerts = alerts;
  state.findings = findings;
  state.sms = sms;
  state.structure = structure;
  state.cables = problems();
  verdict();
  blindSpots();
  chips();
  problemTable();
  if (state.first) {
    // The first screen is up: what is wrong and where. Measured for the tests.
    requestAnimationFrame(() => { document.body.dataset.firstRender = String(Math.round(performance.now())); });
  }
  congestionSection();
  findingsSection();
  if (withStructure && structure && structure.switches.length <= DRAW_SWITCHES && structure.cas <= DRAW_CAS) {
    state.topology = await get("api/v1/topology").catch(() => null);
  } else if (withStructure) {
    state.topology = null;
  }
  structureSection();
  document.body.dataset.loaded = "true";
  const footer = document.getElementById("footer");
  footer.textContent = errors.error ? "Could not load: " + errors.error
    : "Updated " + ((alerts && alerts.generated) || "") + "; refreshes every 10 s.";
  if (state.first) { state.first = false; route(); }
}

document.getElementById("drill-close").addEventListener("click", () => {
  const h = new URLSearchParams(location.hash.slice(1));
  h.delete("node");
  h.delete("port");
  h.delete("host");
  location.hash = h.toString();
});
document.getElementById("problems-more").addEventListener("click", () => { state.showAll = !state.showAll; problemTable(); });
document.getElementById("structure").addEventListener("click", (e) => {
  const a = e.target.closest("a[data-zoom]");
  if (a) { e.preventDefault(); location.hash = ""; }
});
let searchTimer = 0;
const input = document.getElementById("search");
input.addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(() => search(input.value, false), 150); });
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter") { e.preventDefault(); clearTimeout(searchTimer); search(input.value, true); }
  if (e.key === "Escape") { input.value = ""; search("", false); }
});
document.getElementById("search-results").addEventListener("click", (e) => {
  if (e.target.closest("a")) document.getElementById("search-results").hidden = true;
});
// A fault of this page is said where people look, not only in the console.
const pageError = (what) => {
  document.body.dataset.error = what;
  document.getElementById("footer").textContent = "Page error: " + what;
};
window.addEventListener("error", (e) => pageError(e.message));
window.addEventListener("unhandledrejection", (e) => pageError(String(e.reason && e.reason.stack || e.reason)));
window.addEventListener("hashchange", route);
// The header's JSON links are of the fabric shown.
if (FABRIC) {
  for (const a of document.querySelectorAll("header nav a[href^='api/v1/']")) a.setAttribute("href", ofFabric(a.getAttribute("href")));
}
// Several fabrics: one link each under the title, this page's marked.
get("api/v1/fabrics").then((f) => {
  if (!f.fabrics || f.fabrics.length < 2) return;
  const nav = document.getElementById("fabrics");
  const shown = FABRIC || f.fabrics[0].name;
  nav.append("Fabrics: ");
  f.fabrics.forEach((x, i) => {
    const label = x.name + " (" + x.ca + " port " + x.port + ", " + x.nodes + " nodes)";
    if (i > 0) nav.append(" · ");
    nav.append(x.name === shown ? el("strong", { text: label })
      : el("a", { href: "?fabric=" + encodeURIComponent(x.name), text: label }));
  });
  nav.hidden = false;
}).catch(() => {});
let ticks = 0;
refresh(true);
setInterval(() => { ticks += 1; refresh(ticks % 6 === 0); }, 10000);
