// The exporter's status page: the fabric drawn by tier with problem links
// highlighted, the active alerts, the topology findings, and a drill-down
// per node and port. Reads only this exporter's own JSON API (relative
// URLs); builds every element with textContent, never HTML from data.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const RANK = { bad: 5, miswired: 4, degraded: 3, congested: 2, down: 1, ok: 0 };
const CAUSE_STATE = { bad_cable: "bad", flapping_link: "bad", congestion: "congested", degraded_link: "degraded", miswiring: "miswired" };
const FINDING_STATE = {
  same_tier_link: "miswired", skip_tier_link: "miswired", ca_on_non_leaf: "miswired", ca_to_ca: "miswired",
  plan_wrong_remote_node: "miswired", plan_wrong_remote_port: "miswired", plan_extra_link: "miswired",
  plan_unknown_node: "miswired", below_enabled: "degraded", below_tier_majority: "degraded",
  plan_rate_mismatch: "degraded", plan_missing_link: "down",
};
const MAX_DRAWN_CAS = 96;

let state = { topology: null, alerts: null, sms: null, byGuid: new Map() };

function el(tag, attrs, ...children) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.setAttribute("class", v);
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

async function get(path) {
  const r = await fetch(path, { cache: "no-store", credentials: "same-origin" });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
  return body;
}

const endKey = (guid, port) => guid + ":" + port;
const cableKey = (a, b) => [endKey(a.guid, a.port), endKey(b.guid, b.port)].sort().join("|");
const nameOf = (guid) => (state.byGuid.get(guid) || {}).name || guid;

function portLink(guid, port, name) {
  return el("a", { class: "port", "data-port": endKey(guid, port), href: "#port=" + endKey(guid, port),
                   text: (name || nameOf(guid)) + "[" + port + "]" });
}

// cable key -> {state, why: [...], a, b}
// A miswiring names the planned cable, which may not exist: then the real
// cables at its two ports are the miswired ones.
function classify(topology, alerts) {
  const out = new Map();
  const actual = new Set((topology.links || []).map((l) => cableKey(l.a, l.b)));
  const remote = new Map();
  for (const n of topology.nodes || []) {
    for (const p of n.ports || []) if (p.remote) remote.set(endKey(n.guid, p.port), { guid: p.remote.guid, port: p.remote.port, name: p.remote.name });
  }
  const mark = (a, b, st, why) => {
    if (st !== "down" && !actual.has(cableKey(a, b))) {
      let placed = false;
      for (const e of [a, b]) {
        const r = remote.get(endKey(e.guid, e.port));
        if (r) {
          markCable(e, r, st, why);
          placed = true;
        }
      }
      if (placed) return;
    }
    markCable(a, b, st, why);
  };
  const markCable = (a, b, st, why) => {
    const k = cableKey(a, b);
    const c = out.get(k) || { state: "ok", why: [], a, b };
    if (RANK[st] > RANK[c.state]) c.state = st;
    if (why && !c.why.includes(why)) c.why.push(why);
    out.set(k, c);
  };
  for (const l of topology.links || []) {
    if (l.degraded) mark(l.a, l.b, "degraded", "running " + l.rate + ": " + l.degraded);
  }
  for (const f of topology.findings || []) {
    const st = FINDING_STATE[f.kind];
    if (st && f.a && f.b) mark(f.a, f.b, st, f.kind + ": " + f.detail);
  }
  for (const a of (alerts && alerts.active) || []) {
    const st = CAUSE_STATE[a.cause];
    if (st && a.ends && a.ends.length === 2) mark(a.ends[0], a.ends[1], st, a.severity + " " + a.cause + ": " + a.summary);
  }
  return out;
}

function smChip(sms) {
  if (!sms) return null;
  if (sms.master_count === 0) return el("span", { class: "chip crit", id: "sm-chip", text: "no master SM" });
  if (sms.master_count > 1) return el("span", { class: "chip crit", id: "sm-chip", text: sms.master_count + " master SMs" });
  const bad = sms.conditions.length > 0;
  return el("span", { class: "chip " + (bad ? "warn" : "good"), id: "sm-chip",
                      title: sms.conditions.map((c) => c.summary).join("\n"),
                      text: "SM " + sms.master.node + " + " + sms.standby_count + " standby" + (bad ? " (" + sms.conditions.map((c) => c.condition).join(", ") + ")" : "") });
}

function summary(topology, alerts) {
  const box = document.getElementById("summary");
  box.replaceChildren();
  const nodes = topology ? topology.nodes : [];
  const switches = nodes.filter((n) => n.type === "switch").length;
  const counts = (alerts && alerts.active_counts) || { critical: 0, warning: 0 };
  box.append(el("span", { class: "chip", text: switches + " switches" }),
             el("span", { class: "chip", text: (nodes.length - switches) + " HCAs" }),
             el("span", { class: "chip " + (counts.critical ? "crit" : "good"), id: "critical-count", text: counts.critical + " critical" }),
             el("span", { class: "chip " + (counts.warning ? "warn" : "good"), id: "warning-count", text: counts.warning + " warning" }),
             el("span", { class: "chip " + ((topology && topology.findings.length) ? "warn" : "good"),
                          text: (topology ? topology.findings.length : 0) + " findings" }));
  const chip = smChip(state.sms);
  if (chip) box.append(chip);
  if (topology && topology.scope && !topology.scope.reports_topology) {
    box.append(el("span", { class: "chip", text: "scope " + topology.scope.kind + " " + topology.scope.shard + "/" + topology.scope.shards }));
  }
}

function draw(topology, cables) {
  const host = document.getElementById("fabric");
  const switches = topology.nodes.filter((n) => n.type === "switch");
  const cas = topology.nodes.filter((n) => n.type !== "switch");
  const tiers = new Map();
  for (const s of switches) {
    const t = s.tier === undefined ? -1 : s.tier;
    if (!tiers.has(t)) tiers.set(t, []);
    tiers.get(t).push(s);
  }
  const order = [...tiers.keys()].sort((x, y) => (x === -1 ? 1e9 : x) < (y === -1 ? 1e9 : y) ? 1 : -1);
  const BOX_W = 96, BOX_H = 28, GAP = 14, ROW = 110, LEFT = 90;
  const widest = Math.max(1, ...order.map((t) => tiers.get(t).length));
  const width = Math.max(1000, LEFT + widest * (BOX_W + GAP) + 20);
  const drawCas = cas.length <= MAX_DRAWN_CAS;
  const height = 30 + order.length * ROW + 90;
  const svg = el("svg:svg", { width, height, viewBox: "0 0 " + width + " " + height, id: "fabric-svg" });
  const pos = new Map();  // guid -> {x, y}
  order.forEach((t, row) => {
    const list = tiers.get(t).sort((a, b) => a.name.localeCompare(b.name));
    const y = 30 + row * ROW;
    svg.append(el("svg:text", { x: 8, y: y + BOX_H / 2 + 4, class: "tier-label",
                                text: t === -1 ? "unranked" : (list[0].tier_name || "tier " + t) }));
    const span = (width - LEFT - 20) / list.length;
    list.forEach((s, i) => pos.set(s.guid, { x: LEFT + span * i + span / 2, y: y + BOX_H / 2, node: s }));
  });
  // HCAs under the switch they are cabled to.
  const caY = 30 + order.length * ROW + 30;
  const under = new Map();  // switch guid -> [ca]
  for (const c of cas) {
    const p = (c.ports || []).find((x) => x.remote);
    const sw = p ? p.remote.guid : "";
    if (!under.has(sw)) under.set(sw, []);
    under.get(sw).push(c);
  }
  const badges = new Map();
  for (const [sw, list] of under) {
    const anchor = pos.get(sw) || { x: LEFT, y: caY };
    if (drawCas) {
      list.forEach((c, i) => pos.set(c.guid, { x: anchor.x + (i - (list.length - 1) / 2) * 14, y: caY, node: c, ca: true }));
    } else {
      badges.set(sw, { x: anchor.x, y: caY, count: list.length });
      for (const c of list) pos.set(c.guid, { x: anchor.x, y: caY, node: c, ca: true, badge: true });
    }
  }
  // Links, parallel ones grouped, each group as bad as its worst cable.
  const groups = new Map();
  for (const l of topology.links || []) {
    const pa = pos.get(l.a.guid), pb = pos.get(l.b.guid);
    if (!pa || !pb) continue;
    const c = cables.get(cableKey(l.a, l.b));
    const st = c ? c.state : "ok";
    if ((pa.badge || pb.badge) && st === "ok") continue;
    const gk = [l.a.guid, l.b.guid].sort().join("|");
    const g = groups.get(gk) || { pa, pb, state: "ok", cables: [] };
    if (RANK[st] > RANK[g.state]) g.state = st;
    g.cables.push({ l, st, why: c ? c.why : [] });
    groups.set(gk, g);
  }
  // Planned cables that are missing: drawn down between their planned ends.
  for (const c of cables.values()) {
    if (c.state !== "down") continue;
    const pa = pos.get(c.a.guid), pb = pos.get(c.b.guid);
    if (!pa || !pb) continue;
    groups.set("missing|" + cableKey(c.a, c.b), { pa, pb, state: "down", cables: [{ l: { a: c.a, b: c.b, rate: "" }, st: "down", why: c.why }] });
  }
  const linkLayer = el("svg:g", { id: "links" });
  const sorted = [...groups.values()].sort((x, y) => RANK[x.state] - RANK[y.state]);
  for (const g of sorted) {
    const title = g.cables.map((c) => nameOf(c.l.a.guid) + "[" + c.l.a.port + "] - " + nameOf(c.l.b.guid) + "[" + c.l.b.port + "] " +
                                      c.l.rate + (c.why.length ? ": " + c.why.join("; ") : "")).join("\n");
    const first = g.cables.find((c) => c.st === g.state) || g.cables[0];
    const line = el("svg:line", { x1: g.pa.x, y1: g.pa.y, x2: g.pb.x, y2: g.pb.y, class: "link " + g.state,
                                  "data-cable": cableKey(first.l.a, first.l.b), "data-count": g.cables.length,
                                  onclick: () => openPort(first.l.a.guid, first.l.a.port) },
                    el("svg:title", { text: title }));
    linkLayer.append(line);
  }
  svg.append(linkLayer);
  const alerting = new Set();
  for (const c of cables.values()) if (c.state !== "ok") { alerting.add(c.a.guid); alerting.add(c.b.guid); }
  for (const [guid, p] of pos) {
    if (p.ca) continue;
    svg.append(el("svg:g", { class: "node" + (alerting.has(guid) ? " alerting" : ""), "data-guid": guid,
                             onclick: () => openNode(guid) },
                  el("svg:rect", { x: p.x - BOX_W / 2, y: p.y - BOX_H / 2, width: BOX_W, height: BOX_H, rx: 4 }),
                  el("svg:text", { x: p.x, y: p.y + 4, "text-anchor": "middle", text: p.node.name.slice(0, 14) }),
                  el("svg:title", { text: p.node.name + " " + guid + " LID " + p.node.lid })));
  }
  for (const [guid, p] of pos) {
    if (!p.ca || p.badge) continue;
    svg.append(el("svg:g", { class: "ca", "data-guid": guid, onclick: () => openNode(guid) },
                  el("svg:circle", { cx: p.x, cy: p.y, r: 5 }),
                  el("svg:title", { text: p.node.name + " " + guid })));
  }
  for (const b of badges.values()) {
    svg.append(el("svg:text", { x: b.x, y: b.y + 4, "text-anchor": "middle", class: "muted", text: b.count + " HCAs" }));
  }
  host.replaceChildren(svg);
}

function fillTable(id, rows) {
  const body = document.querySelector("#" + id + " tbody");
  body.replaceChildren(...rows);
  if (!rows.length) {
    const cols = document.querySelectorAll("#" + id + " thead th").length;
    body.append(el("tr", {}, el("td", { colspan: cols, class: "muted", text: "none" })));
  }
}

function cableCell(a, b) {
  return el("td", {}, portLink(a.guid, a.port, a.node || a.name), " – ", portLink(b.guid, b.port, b.node || b.name));
}

// A cable's two ends, or the ports a fabric-wide alert concerns (a subnet
// manager condition names its SM ports, or none).
function endsCell(ends) {
  if (ends.length === 2) return cableCell(ends[0], ends[1]);
  const cell = el("td", { text: ends.length ? "" : "fabric" });
  ends.forEach((e, i) => cell.append(...(i ? [", "] : []), portLink(e.guid, e.port, e.node)));
  return cell;
}

function tables(topology, alerts, cables) {
  fillTable("problems", [...cables.values()].filter((c) => c.state !== "ok")
    .sort((x, y) => RANK[y.state] - RANK[x.state])
    .map((c) => el("tr", { "data-state": c.state }, el("td", { class: "state-" + c.state, text: c.state }),
                   cableCell(c.a, c.b), el("td", { text: c.why.join("; ") }))));
  fillTable("alerts", ((alerts && alerts.active) || []).map((a) => el("tr", { "data-cause": a.cause },
    el("td", { class: "sev-" + a.severity, text: a.severity }), el("td", { text: a.cause }),
    endsCell(a.ends || []), el("td", { text: a.since }), el("td", { text: a.summary }),
    el("td", { text: a.action }))));
  fillTable("findings", ((topology && topology.findings) || []).map((f) => el("tr", { "data-kind": f.kind },
    el("td", { text: f.kind }), el("td", { text: f.detail }))));
}

function drill(...children) {
  const aside = document.getElementById("drill");
  document.getElementById("drill-body").replaceChildren(...children);
  aside.hidden = false;
}

function kv(rows) {
  return el("table", { class: "kv" }, el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", { text: k }),
    v instanceof Node ? el("td", {}, v) : el("td", { text: v === null || v === undefined ? "–" : String(v) })))));
}

function openNode(guid) {
  const n = state.byGuid.get(guid);
  if (!n) return;
  const rows = (n.ports || []).map((p) => el("tr", {},
    el("td", {}, portLink(guid, p.port, n.name)), el("td", { text: p.state }), el("td", { text: p.rate }),
    el("td", {}, p.remote ? portLink(p.remote.guid, p.remote.port, p.remote.name) : "–")));
  drill(el("h3", { text: n.name }),
        kv([["GUID", guid], ["type", n.type], ["LID", n.lid], ["tier", n.tier_name || "–"]]),
        el("table", { id: "node-ports" }, el("thead", {}, el("tr", {}, ...["Port", "State", "Rate", "Remote"].map((h) => el("th", { text: h })))),
           el("tbody", {}, ...rows)));
}

async function openPort(guid, port) {
  let d;
  try {
    d = await get("api/v1/port?guid=" + encodeURIComponent(guid) + "&port=" + port);
  } catch (e) {
    drill(el("h3", { text: nameOf(guid) + "[" + port + "]" }), el("p", { class: "muted", text: e.message }));
    return;
  }
  const parts = [el("h3", { id: "port-title", text: d.end.node + "[" + d.end.port + "]" }),
                 kv([["GUID", d.end.guid], ["LID", d.end.lid], ["state", d.link ? d.link.state : null],
                     ["rate", d.link ? d.link.rate : null],
                     ["remote", d.link && d.link.remote ? portLink(d.link.remote.guid, d.link.remote.port, d.link.remote.name) : null],
                     ["stale", d.stale], ["last read", d.last_update]])];
  if (d.health) {
    const h = d.health;
    parts.push(el("h4", { text: "Link health over " + Math.round(h.this_end.window_seconds) + " s" }),
               kv([["up", h.up], ["rate / best", h.rate + " / " + h.best_rate], ["link downs (window / total)", h.downs_in_window + " / " + h.downs_total],
                   ["XmitWait fraction", h.this_end.xmit_wait_fraction], ["bit error rate", h.this_end.bit_error_rate]]));
    const signals = [...new Set([...Object.keys(h.this_end.per_second), ...Object.keys(h.far_end.per_second)])];
    parts.push(el("table", { id: "port-rates" },
      el("thead", {}, el("tr", {}, el("th", { text: "per second" }), el("th", { text: "this end" }), el("th", { text: "far end" }))),
      el("tbody", {}, ...signals.map((s) => el("tr", {}, el("td", { text: s }),
        el("td", { text: fmt(h.this_end.per_second[s]) }), el("td", { text: fmt(h.far_end.per_second[s]) }))))));
  }
  parts.push(el("h4", { text: "Counters (totals)" }),
             el("table", { id: "port-counters" }, el("tbody", {}, ...Object.entries(d.counters).map(([k, v]) =>
               el("tr", { "data-counter": k }, el("td", { text: k + (d.pinned.includes(k) ? " (pinned)" : "") }), el("td", { text: String(v) }))))));
  parts.push(el("h4", { text: "Alerts on this cable" }));
  parts.push(d.alerts.length ? el("ul", { id: "port-alerts" }, ...d.alerts.map((a) => el("li", { text: a.severity + " " + a.cause + ": " + a.summary })))
                             : el("p", { class: "muted", text: "none" }));
  drill(...parts);
}

function fmt(v) {
  if (v === undefined || v === null) return "–";
  return Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3);
}

function fromHash() {
  const m = /^#(port|node)=([^:]+)(?::(\d+))?$/.exec(location.hash);
  if (!m) return;
  if (m[1] === "port" && m[3] !== undefined) openPort(m[2], Number(m[3]));
  if (m[1] === "node") openNode(m[2]);
}

async function refresh() {
  const footer = document.getElementById("footer");
  let topology = null, alerts = null;
  try { alerts = await get("api/v1/alerts?state=active"); } catch (e) { footer.textContent = "alerts: " + e.message; }
  try { topology = await get("api/v1/topology"); } catch (e) { footer.textContent = "topology: " + e.message; }
  try { state.sms = await get("api/v1/subnet_managers"); } catch (e) { state.sms = null; }  // 404: not watched here
  state.topology = topology;
  state.alerts = alerts;
  state.byGuid = new Map(((topology && topology.nodes) || []).map((n) => [n.guid, n]));
  summary(topology, alerts);
  const cables = topology ? classify(topology, alerts) : new Map();
  if (topology) draw(topology, cables);
  tables(topology, alerts, cables);
  document.body.dataset.loaded = "true";
  if (topology && alerts) footer.textContent = "Updated " + (alerts.generated || "") + "; refreshes every 10 s.";
}

document.getElementById("drill-close").addEventListener("click", () => {
  document.getElementById("drill").hidden = true;
  history.replaceState(null, "", location.pathname);
});
window.addEventListener("hashchange", fromHash);
refresh().then(fromHash);
setInterval(refresh, 10000);
