#!/usr/bin/env python3
"""Writes prometheusrule.yaml: the shipped Prometheus rules
(deploy/prometheus/infiniband-rules.yml and infiniband-jobs-rules.yml) as
the Prometheus Operator's PrometheusRule objects, their groups as the files
have them, comments included. Run it after editing a rules file;
validate/validate.js fails when the objects' groups differ from the files'.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RULES = HERE.parent / "prometheus"

HEADER = """\
# The shipped Prometheus rules for the Prometheus Operator, written by
# prometheusrule.py from deploy/prometheus/*.yml (edit those, then run it).
# infiniband-rules: each exporter's own verdicts; evaluate it where the
# exporters are scraped (each shard of a sharded set). infiniband-jobs-rules
# joins what several exporters say: give it to one Prometheus that sees
# them all (docs/deployment.md, "Prometheus at scale"). Label them as your
# Prometheus objects' ruleSelector wants.
"""


def rule_object(name, file):
    text = (RULES / file).read_text()
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("groups:"))
    body = "\n".join(("  " + l if l.strip() else "") for l in lines[start:])
    return (f"apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n"
            f"  name: {name}\n  namespace: infiniband-monitoring\n"
            f"  labels:\n    app.kubernetes.io/name: ibfabric-exporter\n"
            f"spec:\n{body}\n")


def main():
    text = HEADER + "---\n" + rule_object("infiniband-rules", "infiniband-rules.yml") + "---\n" + \
        rule_object("infiniband-jobs-rules", "infiniband-jobs-rules.yml")
    path = HERE / "prometheusrule.yaml"
    if "--check" in sys.argv[1:]:
        if not path.exists() or path.read_text() != text:
            print("prometheusrule.yaml is out of date (run deploy/kubernetes/prometheusrule.py)", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
