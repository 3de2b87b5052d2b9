"""deploy/grafana/leasekeeper.json names only what leasekeeperd exports:
every metric in every PromQL expression (panels and template variables)
is a series a real daemon (with a data dir, so the storage series exist)
serves at /metrics, with the labels the expression selects or groups by;
counters are only graphed through rate/irate/increase, rate is never
taken of a gauge, and histogram_quantile reads _bucket series grouped by
le. The checker is itself checked on expressions that break each rule.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from deploy_support import DEPLOY, Daemon, scrape

DASHBOARD = DEPLOY / "grafana" / "leasekeeper.json"

AGGREGATORS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar",
               "count", "count_values", "bottomk", "topk", "quantile"}
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "ceil", "changes", "clamp",
    "clamp_max", "clamp_min", "day_of_month", "day_of_week", "day_of_year",
    "days_in_month", "delta", "deriv", "exp", "floor", "histogram_quantile",
    "holt_winters", "hour", "idelta", "increase", "irate", "label_join",
    "label_replace", "ln", "log2", "log10", "minute", "month",
    "predict_linear", "rate", "resets", "round", "scalar", "sgn", "sort",
    "sort_desc", "sqrt", "time", "timestamp", "vector", "year",
    "avg_over_time", "min_over_time", "max_over_time", "sum_over_time",
    "count_over_time", "quantile_over_time", "stddev_over_time",
    "stdvar_over_time", "last_over_time", "present_over_time"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
OPERATOR_WORDS = {"and", "or", "unless", "bool", "atan2"}
COUNTER_FUNCTIONS = {"rate", "irate", "increase", "resets"}
# Added by Prometheus to every series it scrapes.
TARGET_LABELS = {"instance", "job"}

TOKEN = re.compile(r"""
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|!=|==|>=|<=|[-+*/%^<>=,(){}])
  | (?P<space>\s+)
""", re.VERBOSE)


@dataclass
class Exported:
    """What /metrics serves: each sample name with its label names, and
    each family's TYPE."""
    labels: dict[str, set[str]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def parse(text: str) -> "Exported":
        exported = Exported()
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split()
                exported.types[name] = kind
            elif line and not line.startswith("#"):
                match = re.match(
                    r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s", line)
                assert match, f"not a sample line: {line!r}"
                names = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="',
                                       match.group(2) or ""))
                exported.labels.setdefault(match.group(1), set()).update(names)
        return exported

    def kind(self, sample: str) -> str:
        """"counter", "gauge", "histogram_bucket", "summary_sum", ..."""
        if sample in self.types:
            return self.types[sample]
        for suffix in ("_bucket", "_sum", "_count"):
            base = sample[: -len(suffix)]
            if sample.endswith(suffix) and base in self.types:
                return self.types[base] + suffix
        return "untyped"


@dataclass
class Use:
    metric: str
    selected: set[str]    # label names in its {...}
    functions: list[str]  # enclosing functions and aggregations, outermost first


def uses(expr: str) -> tuple[list[Use], set[str]]:
    """The metrics an expression reads, and the label names it groups or
    matches on (by, without, on, ignoring, group_left/right)."""
    tokens = []
    position = 0
    while position < len(expr):
        match = TOKEN.match(expr, position)
        if match is None:
            raise ValueError(f"cannot read {expr[position:]!r} in {expr!r}")
        position = match.end()
        if match.lastgroup != "space":
            tokens.append((match.lastgroup, match.group()))
    found: list[Use] = []
    grouped: set[str] = set()
    parens: list[str] = []  # the function each open parenthesis belongs to
    pending = ""            # an aggregation waiting for its parenthesis

    def label_names(i: int, closer: str) -> tuple[set[str], int]:
        """The label names from tokens[i], an opening "(" or "{", to its
        `closer` ("( a, b )" or "{ a="x", b=~"y" }": strings are tokens of
        their own); the index after the closer."""
        names, i = set(), i + 1
        while tokens[i] != ("op", closer):
            if tokens[i][0] == "ident":
                names.add(tokens[i][1])
            i += 1
        return names, i + 1

    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if kind == "ident" and text in GROUPING:
            if following == ("op", "("):
                names, i = label_names(i + 1, ")")
                grouped |= names
            else:
                i += 1
            continue
        if kind == "ident" and text in OPERATOR_WORDS:
            i += 1
            continue
        if kind == "ident" and text == "offset":
            i += 3 if tokens[i + 2][0] == "ident" else 2  # "5m" lexes as 5, m
            continue
        if kind == "ident" and text in AGGREGATORS:
            pending = text
            i += 1
            continue
        if kind == "ident" and following == ("op", "("):
            if text not in FUNCTIONS:
                raise ValueError(f"unknown function {text} in {expr!r}")
            parens.append(text)
            i += 2
            continue
        if kind == "ident":
            selected: set[str] = set()
            i += 1
            if i < len(tokens) and tokens[i] == ("op", "{"):
                selected, i = label_names(i, "}")
            found.append(Use(text, selected, [p for p in parens if p]))
            continue
        if (kind, text) == ("op", "{"):
            raise ValueError(f"a selector without a metric name in {expr!r}")
        if (kind, text) == ("op", "("):
            parens.append(pending)
            pending = ""
        elif (kind, text) == ("op", ")"):
            parens.pop()
        i += 1
    return found, grouped


def problems(expr: str, exported: Exported) -> list[str]:
    """Why `expr` does not fit what the daemon exports; empty when it does."""
    try:
        found, grouped = uses(expr)
    except (ValueError, IndexError) as error:
        return [f"unparsable: {error}"]
    out = []
    available = set(TARGET_LABELS)
    for use in found:
        if use.metric not in exported.labels:
            out.append(f"{use.metric} is not exported")
            continue
        labels = exported.labels[use.metric] | TARGET_LABELS
        available |= labels
        if use.selected - labels:
            out.append(f"{use.metric} has no label {sorted(use.selected - labels)}")
        kind = exported.kind(use.metric)
        in_rate = bool(COUNTER_FUNCTIONS & set(use.functions))
        if in_rate and kind in ("gauge", "untyped"):
            out.append(f"rate-like function of the gauge {use.metric}")
        if kind == "counter" and not in_rate:
            out.append(f"the counter {use.metric} outside rate/increase")
        if "histogram_quantile" in use.functions:
            if kind != "histogram_bucket":
                out.append(f"histogram_quantile of {use.metric}, not a "
                           "histogram's _bucket series")
            elif "le" not in grouped:
                out.append(f"histogram_quantile of {use.metric} without "
                           "grouping by le")
    if grouped - available:
        out.append(f"groups by labels no series has: {sorted(grouped - available)}")
    if not found:
        out.append("reads no metric")
    return out


def expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and query variable; a
    variable's label_values(METRIC, LABEL) is checked as METRIC{LABEL=""}."""
    def walk(panels: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        for panel in panels:
            yield from walk(panel.get("panels", []))
            for target in panel.get("targets", []):
                yield f"panel {panel['title']!r} {target['refId']}", target["expr"]
    yield from walk(dashboard["panels"])
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = variable["query"]
        query = query["query"] if isinstance(query, dict) else query
        match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", query)
        assert match, f"variable {variable['name']}: {query}"
        yield (f"variable {variable['name']}",
               f'{match.group(1)}{{{match.group(2)}=""}}')


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    data = tmp_path_factory.mktemp("grafana") / "data"
    with Daemon({"--metrics-listen": "", "--data-dir": str(data)}) as daemon:
        return Exported.parse(scrape(daemon.metrics_address))


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def test_every_expression_names_only_exported_series_and_labels(
        dashboard: dict[str, Any], exported: Exported) -> None:
    bad = {where: problems(expr, exported)
           for where, expr in expressions(dashboard)}
    bad = {where: why for where, why in bad.items() if why}
    assert not bad, json.dumps(bad, indent=2)


def test_dashboard_shows_grants_endings_waiters_sessions_latency_and_fsync(
        dashboard: dict[str, Any]) -> None:
    read = {use.metric for _, expr in expressions(dashboard)
            for use in uses(expr)[0]}
    for metric in ("leasekeeper_acquisitions_total",
                   "leasekeeper_queue_grants_total",
                   "leasekeeper_releases_total",
                   "leasekeeper_lease_lapses_total",
                   "leasekeeper_waiters", "leasekeeper_leases_held",
                   "leasekeeper_sessions_open",
                   "leasekeeper_sessions_lost_total",
                   "leasekeeper_rpcs_total",
                   "leasekeeper_rpc_duration_seconds_bucket",
                   "leasekeeper_acquire_wait_seconds_bucket",
                   "leasekeeper_fsync_duration_seconds_bucket",
                   "leasekeeper_storage_healthy"):
        assert metric in read, metric


def test_panels_have_unique_ids_fit_the_grid_and_use_the_datasource_variable(
        dashboard: dict[str, Any]) -> None:
    panels = dashboard["panels"]
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        cover = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"])
                 for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not cover & cells, f"{panel['title']} overlaps another panel"
        cells |= cover
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        for source in [panel["datasource"]] + [t["datasource"]
                                               for t in panel["targets"]]:
            assert source == {"type": "prometheus", "uid": "${datasource}"}
    [variable] = [v for v in dashboard["templating"]["list"]
                  if v["name"] == "datasource"]
    assert variable["type"] == "datasource" and variable["query"] == "prometheus"


@pytest.mark.parametrize("expr, why", [
    ("rate(leasekeeper_no_such_series_total[5m])", "is not exported"),
    ("rate(leasekeeper_waiters[5m])", "rate-like function of the gauge"),
    ("leasekeeper_releases_total", "outside rate/increase"),
    ("histogram_quantile(0.9, sum by (le) "
     "(rate(leasekeeper_rpc_duration_seconds[5m])))", "is not exported"),
    ("histogram_quantile(0.9, sum by (le) "
     "(rate(leasekeeper_rpc_duration_seconds_count[5m])))",
     "not a histogram's _bucket"),
    ("histogram_quantile(0.9, sum by (method) "
     "(rate(leasekeeper_rpc_duration_seconds_bucket[5m])))",
     "without grouping by le"),
    ('sum(leasekeeper_leases_held{lock="a"})', "has no label ['lock']"),
    ("sum by (client) (leasekeeper_leases_held)", "groups by labels"),
    ("rate_of(leasekeeper_releases_total[5m])", "unknown function"),
])
def test_checker_refuses_expressions_that_break_a_rule(
        expr: str, why: str, exported: Exported) -> None:
    found = problems(expr, exported)
    assert any(why in problem for problem in found), found
