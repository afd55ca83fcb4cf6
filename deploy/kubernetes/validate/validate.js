// Validates every manifest in deploy/kubernetes/ against the Kubernetes API
// schemas (kubernetes-models) and the Prometheus Operator CRD schemas, then
// checks what the deployment promises: least privilege, probes, resources,
// the scope of each workload, and that every exporter's arguments parse.
//
// usage: node validate.js MANIFEST_DIR EXPORTER_BINARY
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const YAML = require("yaml");

const [dir, exporter] = process.argv.slice(2);
if (!dir || !exporter) {
  console.error("usage: node validate.js MANIFEST_DIR EXPORTER_BINARY");
  process.exit(2);
}

const MODELS = {
  "v1/Namespace": () => require("kubernetes-models/v1/Namespace").Namespace,
  "v1/Service": () => require("kubernetes-models/v1/Service").Service,
  "v1/ConfigMap": () => require("kubernetes-models/v1/ConfigMap").ConfigMap,
  "v1/Secret": () => require("kubernetes-models/v1/Secret").Secret,
  "v1/ServiceAccount": () => require("kubernetes-models/v1/ServiceAccount").ServiceAccount,
  "rbac.authorization.k8s.io/v1/ClusterRole": () =>
    require("kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole").ClusterRole,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": () =>
    require("kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding").ClusterRoleBinding,
  "apps/v1/DaemonSet": () => require("kubernetes-models/apps/v1/DaemonSet").DaemonSet,
  "apps/v1/StatefulSet": () => require("kubernetes-models/apps/v1/StatefulSet").StatefulSet,
  "apps/v1/Deployment": () => require("kubernetes-models/apps/v1/Deployment").Deployment,
  "monitoring.coreos.com/v1/ServiceMonitor": () =>
    require("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor").ServiceMonitor,
  "monitoring.coreos.com/v1/PrometheusRule": () =>
    require("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule").PrometheusRule,
};

const problems = [];
const objects = [];
const fail = (where, why) => problems.push(where + ": " + why);

for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(path.join(dir, file), "utf8"));
  for (const doc of docs) {
    if (doc.errors.length) { fail(file, "not YAML: " + doc.errors[0].message); continue; }
    const obj = doc.toJS();
    if (!obj) continue;
    const key = obj.apiVersion + "/" + obj.kind;
    const where = file + " " + key + " " + ((obj.metadata || {}).name || "?");
    const model = MODELS[key];
    if (!model) { fail(where, "no schema known for " + key); continue; }
    try {
      const Model = model();
      new Model(obj).validate();
    } catch (e) {
      fail(where, "schema: " + e.message.split("\n")[0]);
      continue;
    }
    objects.push({ where, obj });
  }
}

const workloads = objects.filter((o) => ["DaemonSet", "StatefulSet", "Deployment"].includes(o.obj.kind));
const services = objects.filter((o) => o.obj.kind === "Service");
const byKind = (k) => workloads.filter((o) => o.obj.kind === k);
if (byKind("DaemonSet").length !== 1) fail(dir, "expected one DaemonSet (the per-host exporter)");
if (byKind("StatefulSet").length !== 1) fail(dir, "expected one StatefulSet (the fabric-wide exporter)");
if (!objects.some((o) => o.obj.kind === "ServiceMonitor")) fail(dir, "expected a ServiceMonitor");

for (const { where, obj } of workloads) {
  const spec = obj.spec.template.spec;
  const labels = obj.spec.template.metadata.labels || {};
  if (!services.some((s) => Object.entries(s.obj.spec.selector || {}).every(([k, v]) => labels[k] === v))) {
    fail(where, "no Service selects its pods");
  }
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) fail(where, "must not share the host's namespaces");
  // One hostPath at most: the kubelet's pod-resources socket, read-only,
  // on the per-host exporter (job attribution); devices come from the
  // RDMA device plugin.
  for (const v of spec.volumes || []) {
    if (!v.hostPath) continue;
    if (obj.kind !== "DaemonSet" || v.hostPath.path !== "/var/lib/kubelet/pod-resources") {
      fail(where, "hostPath volume " + v.name + ": only the DaemonSet's /var/lib/kubelet/pod-resources; use the RDMA device plugin");
    }
    for (const c of spec.containers) {
      for (const m of c.volumeMounts || []) {
        if (m.name === v.name && m.readOnly !== true) fail(where + " container " + c.name, "mounts " + v.name + " writable");
      }
    }
  }
  for (const c of spec.containers) {
    const w = where + " container " + c.name;
    const sc = c.securityContext || {};
    if (sc.privileged) fail(w, "must not be privileged");
    if (sc.allowPrivilegeEscalation !== false) fail(w, "allowPrivilegeEscalation must be false");
    if (sc.readOnlyRootFilesystem !== true) fail(w, "readOnlyRootFilesystem must be true");
    if (!(sc.capabilities && (sc.capabilities.drop || []).includes("ALL")) || (sc.capabilities.add || []).length) {
      fail(w, "must drop ALL capabilities and add none");
    }
    if (!c.livenessProbe || c.livenessProbe.httpGet.path !== "/healthz") fail(w, "liveness probe on /healthz");
    if (!c.readinessProbe || c.readinessProbe.httpGet.path !== "/readyz") fail(w, "readiness probe on /readyz");
    const limits = (c.resources || {}).limits || {};
    if (!limits.memory || !((c.resources || {}).requests || {}).cpu) fail(w, "needs a memory limit and a CPU request");
    if (!Object.keys(limits).some((k) => k.startsWith("rdma/"))) fail(w, "needs an RDMA device resource for /dev/infiniband");
    // $(VAR) references resolve as Kubernetes would, with the first pod's values.
    const env = { SHARD: "0", NODE_NAME: "node-1" };
    const args = (c.args || []).map((a) => a.replace(/\$\(([A-Z_]+)\)/g, (_, v) => env[v] ?? "$(" + v + ")"));
    const scope = (args.find((a) => a.startsWith("--scope=")) || "--scope=fabric").slice(8);
    const want = obj.kind === "DaemonSet" ? "local" : "inter-switch";
    if (scope !== want) fail(w, "scope " + scope + ", expected " + want);
    if (obj.kind === "StatefulSet") {
      const shard = args.find((a) => a.startsWith("--shard="));
      const n = shard ? Number(shard.split("/")[1]) : NaN;
      if (n !== obj.spec.replicas) fail(w, "--shard's N (" + n + ") must equal replicas (" + obj.spec.replicas + ")");
    }
    try {
      execFileSync(exporter, [...args, "--help"], { stdio: ["ignore", "ignore", "pipe"] });
    } catch (e) {
      fail(w, "the exporter refuses its arguments: " + String(e.stderr).trim());
    }
  }
  // The preflight init container: as unprivileged as the exporter, its
  // --doctor run with the workload's scope and accepted, never failing the pod.
  for (const c of spec.initContainers || []) {
    const w = where + " init container " + c.name;
    const sc = c.securityContext || {};
    if (sc.privileged || sc.allowPrivilegeEscalation !== false || sc.readOnlyRootFilesystem !== true ||
        !(sc.capabilities && (sc.capabilities.drop || []).includes("ALL"))) {
      fail(w, "must be as unprivileged as the exporter");
    }
    const line = (c.command || []).join(" ");
    if (!/^\/bin\/sh -c timeout \d+ /.test(line)) fail(w, "the preflight needs a deadline: 'timeout N ...'");
    const flags = line.match(/ibfabric_exporter ([^;]*);/);
    if (!flags || !flags[1].includes("--doctor")) { fail(w, "expected 'ibfabric_exporter --doctor ...;'"); continue; }
    const want = obj.kind === "DaemonSet" ? "--scope=local" : "--scope=inter-switch";
    if (!flags[1].split(/\s+/).includes(want)) fail(w, "the preflight needs the workload's " + want);
    if (!/; echo /.test(line)) fail(w, "must not fail the pod (end with '; echo ...')");
    try {
      execFileSync(exporter, [...flags[1].trim().split(/\s+/), "--help"], { stdio: ["ignore", "ignore", "pipe"] });
    } catch (e) {
      fail(w, "the exporter refuses its arguments: " + String(e.stderr).trim());
    }
  }
}

// Least privilege toward the API server: only the DaemonSet's pods have an
// identity, bound to a role that grants exactly what its kubernetes_node
// collector calls (PATCH nodes and nodes/status; tests/integration/
// kubernetes_test.cc checks the calls made against this file), and only
// its exporter container mounts the token.
const NODE_GRANTS = ["/nodes/patch", "/nodes/status/patch"];
const roles = objects.filter((o) => o.obj.kind === "ClusterRole");
const bindings = objects.filter((o) => o.obj.kind === "ClusterRoleBinding");
const accounts = objects.filter((o) => o.obj.kind === "ServiceAccount");
for (const { where, obj } of workloads) {
  const spec = obj.spec.template.spec;
  if (spec.automountServiceAccountToken !== false) fail(where, "automountServiceAccountToken must be false");
  const tokenVolumes = (spec.volumes || []).filter((v) =>
    ((v.projected || {}).sources || []).some((src) => src.serviceAccountToken)).map((v) => v.name);
  const account = spec.serviceAccountName;
  if (obj.kind !== "DaemonSet") {
    if (account || tokenVolumes.length) fail(where, "needs no API access: no service account, no token");
    continue;
  }
  const sa = accounts.find((a) => a.obj.metadata.name === account && a.obj.metadata.namespace === obj.metadata.namespace);
  if (!sa) { fail(where, "serviceAccountName " + account + " is not defined here"); continue; }
  const grants = new Set();
  for (const b of bindings) {
    if (!(b.obj.subjects || []).some((x) => x.kind === "ServiceAccount" && x.name === account &&
                                            x.namespace === obj.metadata.namespace)) continue;
    const role = roles.find((r) => r.obj.metadata.name === b.obj.roleRef.name && b.obj.roleRef.kind === "ClusterRole");
    if (!role) { fail(b.where, "binds " + b.obj.roleRef.kind + " " + b.obj.roleRef.name + ", not defined here"); continue; }
    for (const rule of role.obj.rules || []) {
      if ((rule.resourceNames || []).length || (rule.nonResourceURLs || []).length) fail(role.where, "unexpected rule form");
      for (const g of rule.apiGroups || []) for (const r of rule.resources || []) for (const v of rule.verbs || []) {
        grants.add(g + "/" + r + "/" + v);
      }
    }
  }
  const got = [...grants].sort();
  if (JSON.stringify(got) !== JSON.stringify(NODE_GRANTS)) {
    fail(where, "its service account may " + JSON.stringify(got) + ", exactly " + JSON.stringify(NODE_GRANTS) + " expected");
  }
  for (const c of [...spec.containers, ...(spec.initContainers || [])]) {
    const mounts = (c.volumeMounts || []).filter((m) => tokenVolumes.includes(m.name));
    if (c.name === "exporter" ? mounts.length !== 1 : mounts.length) {
      fail(where + " container " + c.name, "the API token is the exporter container's alone");
    }
  }
}

// The Prometheus job every shipped deployment gives the exporters is the
// one the shipped rules and dashboards match: the ServiceMonitor takes it
// from a label of each Service it selects (jobLabel; without one the
// Operator names the job after each Service).
const JOB = "infiniband";
for (const { where, obj } of objects.filter((o) => o.obj.kind === "ServiceMonitor")) {
  const jobLabel = obj.spec.jobLabel;
  if (!jobLabel) {
    fail(where, "needs jobLabel, or the job is each Service's name, not " + JOB);
    continue;
  }
  const selected = services.filter((s) =>
    Object.entries(obj.spec.selector.matchLabels || {}).every(([k, v]) => (s.obj.metadata.labels || {})[k] === v));
  if (!selected.length) fail(where, "selects no Service");
  for (const s of selected) {
    const job = (s.obj.metadata.labels || {})[jobLabel];
    if (job !== JOB) fail(s.where, "label " + jobLabel + " is " + job + ": the Prometheus job must be " + JOB);
  }
}
const promDir = path.join(dir, "..", "prometheus");
const scrape = fs.readFileSync(path.join(promDir, "scrape-kubernetes.yml"), "utf8");
if (!new RegExp("job_name:\\s*" + JOB + "\\b").test(scrape)) fail("scrape-kubernetes.yml", "job_name must be " + JOB);
const rules = fs.readFileSync(path.join(promDir, "infiniband-rules.yml"), "utf8");
for (const m of rules.matchAll(/job=~?"([^"]*)"/g)) {
  if (!new RegExp("^(?:" + m[1] + ")$").test(JOB)) fail("infiniband-rules.yml", "matcher job " + m[1] + " misses " + JOB);
}

// The PrometheusRule objects hold the shipped rule files' groups as the
// files have them (prometheusrule.py writes them): one object a file.
const ruleFiles = { "infiniband-rules": "infiniband-rules.yml", "infiniband-jobs-rules": "infiniband-jobs-rules.yml" };
const promRules = objects.filter((o) => o.obj.kind === "PrometheusRule");
for (const [name, file] of Object.entries(ruleFiles)) {
  const o = promRules.find((r) => r.obj.metadata.name === name);
  if (!o) { fail(dir, "expected a PrometheusRule " + name + " (deploy/kubernetes/prometheusrule.py)"); continue; }
  const want = YAML.parse(fs.readFileSync(path.join(promDir, file), "utf8")).groups;
  if (JSON.stringify(o.obj.spec.groups) !== JSON.stringify(want)) {
    fail(o.where, "its groups differ from " + file + ": run deploy/kubernetes/prometheusrule.py");
  }
}

if (problems.length) {
  for (const p of problems) console.error("FAIL " + p);
  process.exit(1);
}
console.log("ok: " + objects.length + " objects valid (" + objects.map((o) => o.obj.kind).join(", ") + ")");
