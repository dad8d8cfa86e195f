"""The Grafana dashboard in deploy/grafana names only metrics (and labels) that /metrics exposes.

The metrics are those of a real run: a task with model calls (priced, one
tried again) and tool calls (one failing) ran while `recording`, so every
labelled family has samples.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ratchet import Runtime
from ratchet.observe import recording
from ratchet.observe.metrics import Metrics
from ratchet.store import StateStore

from .metrics_flows import flow, priced, unavailable_first
from .metrics_support import parse

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "ratchet.json"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}


def expressions(dashboard: dict[str, Any]) -> Iterator[str]:
    """Every PromQL expression of the dashboard: its panels' targets and its variables' queries."""
    for panel in dashboard["panels"]:
        for target in panel.get("targets", ()):
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield variable["query"]["query"]


def named(expr: str) -> tuple[set[str], set[str]]:
    """The metric names and the grouping labels an expression uses."""
    values = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", expr)
    if values:
        return {values[1]}, {values[2]}
    labels = {
        label.strip() for group in _GROUPING.findall(expr) for label in group.split(",") if label.strip()
    }
    bare = _GROUPING.sub(" ", _RANGE.sub(" ", _MATCHERS.sub(" ", _STRING.sub(" ", expr))))
    names = {
        found[0]
        for found in _NAME.finditer(bare)
        if found[0] not in _KEYWORDS and not bare[found.end() :].lstrip().startswith("(")
    }
    return names, labels


def test_the_parser_finds_names_and_labels() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, model) (rate(x_bucket{model=~"$m"}[$__rate_interval]))) / y'
    assert named(expr) == ({"x_bucket", "y"}, {"le", "model"})
    assert named("label_values(x_count, agent)") == ({"x_count"}, {"agent"})


async def test_every_expression_names_only_metrics_and_labels_the_endpoint_exposes(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    metrics = Metrics(store)
    with recording(metrics):
        await Runtime(store).run(
            flow("asks_then_shouts"), {"times": 1}, model=script(unavailable_first(priced(0.01, 1)))
        )
    exposed = parse((await metrics.exposition()).decode())
    labels_of: dict[str, set[str]] = {}
    for name, pairs in exposed:
        labels_of.setdefault(name, set()).update(label for label, _ in pairs)

    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    checked = 0
    for expr in expressions(dashboard):
        names, labels = named(expr)
        assert names, f"names no metric: {expr}"
        unknown = names - labels_of.keys()
        assert not unknown, f"{expr} names {sorted(unknown)}, which /metrics does not expose"
        offered = set().union(*(labels_of[name] for name in names))
        assert labels <= offered, f"{expr} groups by {sorted(labels - offered)}, which its metrics lack"
        checked += 1
    assert checked >= 20
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_every_expression_is_promql_that_prometheus_parses(tmp_path: Path) -> None:
    # Prometheus's own parser, through promtool: each expression as a recording rule, with
    # Grafana's variables given the values Grafana would put there.
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    given = {"$__rate_interval": "5m", "$__range": "6h", "$agent": ".*", "$model": ".*"}
    rules = []
    for number, expr in enumerate(expressions(dashboard)):
        if expr.startswith("label_values("):
            continue  # Grafana's own function, not PromQL
        for variable, value in given.items():
            expr = expr.replace(variable, value)
        rules.append({"record": f"ratchet:panel_{number}", "expr": expr})
    assert "$" not in json.dumps(rules)
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}), encoding="utf-8")  # YAML
    checked = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(rules)} rules found" in checked.stdout
