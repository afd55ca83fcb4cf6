// Checks each dashboard as Grafana's import makes it, where no Grafana runs:
// the import's template step (Grafana's pkg/services/dashboardimport: every
// "${NAME}" of a declared __inputs entry replaced by the value given for it,
// __inputs dropped, an input without a value refused) with DS_PROMETHEUS
// given as a data source of another name, then:
// - no "${DS_...}" is left, and every data source the panels, their
//   queries and the variables name is the dashboard's data source variable
//   (${datasource}), whose default is now the given one: no fixed name;
// - the result is valid against Grafana's own Dashboard type (the
//   @grafana/schema package, as JSON schema by ts-json-schema-generator),
//   but for __requires, the export's metadata that type does not list.
//
// usage: node check.js SCHEMA_JSON DASHBOARD.json...
"use strict";
const fs = require("fs");
const path = require("path");
const Ajv = require("ajv");

const [schemaFile, ...files] = process.argv.slice(2);
if (!schemaFile || !files.length) {
  console.error("usage: node check.js SCHEMA_JSON DASHBOARD.json...");
  process.exit(2);
}
const schema = JSON.parse(fs.readFileSync(schemaFile, "utf8"));
const validate = new Ajv({ allErrors: true, strict: false }).compile({ ...schema, $ref: "#/definitions/Dashboard" });
const GIVEN = { DS_PROMETHEUS: "another-prometheus-uid" };
const problems = [];

// The import's template step, as Grafana documents and does it.
function imported(template, where) {
  const values = {};
  for (const input of template.__inputs || []) {
    if (!(input.name in GIVEN)) {
      problems.push(where + ": input " + input.name + " has no value to import with");
      continue;
    }
    values["${" + input.name + "}"] = GIVEN[input.name];
  }
  const evaluate = (v) => {
    if (typeof v === "string") return v.replace(/\$\{.+?\}/g, (m) => (m in values ? values[m] : m));
    if (Array.isArray(v)) return v.map(evaluate);
    if (v && typeof v === "object") {
      const out = {};
      for (const [k, x] of Object.entries(v)) if (k !== "__inputs") out[k] = evaluate(x);
      return out;
    }
    return v;
  };
  return evaluate(template);
}

// Every {"datasource": ...} in `x`, with where it is.
function dataSources(x, at, out) {
  if (Array.isArray(x)) x.forEach((v, i) => dataSources(v, at + "/" + i, out));
  else if (x && typeof x === "object") {
    for (const [k, v] of Object.entries(x)) {
      if (k === "datasource") out.push([at + "/" + k, v]);
      else dataSources(v, at + "/" + k, out);
    }
  }
  return out;
}

for (const file of files) {
  const where = path.basename(file);
  const template = JSON.parse(fs.readFileSync(file, "utf8"));
  if (!(template.__inputs || []).some((i) => i.name === "DS_PROMETHEUS" && i.pluginId === "prometheus")) {
    problems.push(where + ": no DS_PROMETHEUS data source input");
  }
  const d = imported(template, where);
  const text = JSON.stringify(d);
  if (/\$\{DS_/.test(text)) problems.push(where + ": an input is left unreplaced after the import");
  const variable = ((d.templating || {}).list || []).find((v) => v.type === "datasource");
  if (!variable || variable.name !== "datasource" || variable.query !== "prometheus") {
    problems.push(where + ": no Prometheus data source variable named datasource");
  } else if ((variable.current || {}).value !== GIVEN.DS_PROMETHEUS) {
    problems.push(where + ": the data source variable does not default to the imported data source");
  }
  for (const [at, ds] of dataSources({ panels: d.panels, templating: d.templating }, "", [])) {
    if (!ds || ds.uid !== "${datasource}" || ds.type !== "prometheus") {
      problems.push(where + at + ": names data source " + JSON.stringify(ds) + ", not the variable");
    }
  }
  const checked = { ...d };
  delete checked.__requires;
  if (!validate(checked)) {
    for (const e of validate.errors.slice(0, 5)) {
      problems.push(where + (e.instancePath || "/") + ": " + e.message + " " + JSON.stringify(e.params));
    }
  }
}
if (problems.length) {
  for (const p of problems) console.error("FAIL " + p);
  process.exit(1);
}
console.log("ok: " + files.length + " dashboards import with DS_PROMETHEUS = " + GIVEN.DS_PROMETHEUS +
            " and are valid against Grafana's Dashboard schema");
