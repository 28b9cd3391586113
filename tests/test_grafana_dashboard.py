"""The Grafana dashboard in deploy/grafana (issue 26, point 5) reads only what /metrics
exports: every metric its PromQL names is a series the running service serves, every label
it matches or groups by is on that series, rate() only reads counters and histograms, and
the panels an operator looks for are there. Renaming a metric or a label in the code fails
here until the dashboard follows."""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from calls import runner
from calls.runner import tool_run
from config.asgi import application
from rooms import errors
from tenants import budgets
from tenants import errors as tenant_errors
from tests import callers
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy" / "grafana" / "roomservice-dashboard.json"

# Panels an operator looks for (issue 26, point 5), by title.
PANELS = {
    "Calls per second by tool",
    "Calls per second by outcome",
    "Error ratio",
    "Tool latency p50 by tool",
    "Tool latency p95 by tool",
    "Tool latency p99 by tool",
    "Open SSE streams",
    "Waiters (long polls)",
    "Webhook queue depth",
    "Webhook failures",
    "Store round-trip latency",
    "Refusals (rate limits and quotas)",
}
# Labels Prometheus adds to every series it scrapes (deploy/prometheus.yml's job).
TARGET_LABELS = frozenset({"job", "instance"})
# calls.runner.tool_run's outcome for a failure that is no DomainError (a bug of ours).
OUTCOME_INTERNAL = "internal"

# --- A small PromQL reader: enough to find the metrics, matchers and groupings ----------

AGGREGATORS = frozenset(
    {"sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile"}
)
FUNCTIONS = AGGREGATORS | {
    "rate",
    "irate",
    "increase",
    "delta",
    "deriv",
    "histogram_quantile",
    "label_values",
    "abs",
    "clamp_min",
    "clamp_max",
    "max_over_time",
    "min_over_time",
    "avg_over_time",
    "vector",
    "scalar",
}
GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
OPERATORS = frozenset({"and", "or", "unless", "bool"})
RATES = frozenset({"rate", "irate", "increase"})
TOKEN = re.compile(
    r"""
    (?P<string>"(?:[^"\\]|\\.)*")
    |(?P<range>\[[^\]]*\])
    |(?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    |(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
    |(?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=,(){}])
    |(?P<space>\s+)
    """,
    re.VERBOSE,
)


@dataclass
class Selector:
    metric: str
    matchers: list[tuple[str, str, str]]
    inside: tuple[str, ...]  # the functions around it, outermost first


@dataclass
class Expr:
    text: str
    selectors: list[Selector] = field(default_factory=list)
    grouped_by: set[str] = field(default_factory=set)


def tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        m = TOKEN.match(text, at)
        assert m is not None, f"cannot read {text[at:]!r} in {text!r}"
        kind = m.lastgroup or ""
        if kind != "space":
            out.append((kind, m.group()))
        at = m.end()
    return out


def promql_read(text: str) -> Expr:
    """The selectors of one PromQL expression (with the functions around each) and the
    labels it groups by. Refuses what it does not know, so a typo cannot pass as a metric."""
    toks = tokens(text)
    expr = Expr(text)
    stack: list[str] = []
    pending = ""  # a function or aggregator whose "(" comes next
    i = 0

    def matchers_read(i: int) -> tuple[list[tuple[str, str, str]], int]:
        found: list[tuple[str, str, str]] = []
        assert toks[i] == ("op", "{")
        i += 1
        while toks[i] != ("op", "}"):
            (k1, label), (k2, op), (k3, value) = toks[i : i + 3]
            assert (k1, k2, k3) == ("ident", "op", "string"), f"odd matcher in {text!r}"
            assert op in ("=", "!=", "=~", "!~"), f"odd matcher {op!r} in {text!r}"
            found.append((label, op, json.loads(value)))
            i += 3
            if toks[i] == ("op", ","):
                i += 1
        return found, i + 1

    while i < len(toks):
        kind, value = toks[i]
        following = toks[i + 1] if i + 1 < len(toks) else ("", "")
        if kind == "ident" and value in GROUPING:
            if following == ("op", "("):
                i += 2
                while toks[i] != ("op", ")"):
                    if toks[i][0] == "ident":
                        expr.grouped_by.add(toks[i][1])
                    i += 1
            i += 1
        elif kind == "ident" and value in OPERATORS:
            i += 1
        elif kind == "ident" and (
            following == ("op", "(") or (value in AGGREGATORS and following[1] in GROUPING)
        ):
            assert value in FUNCTIONS, f"unknown function {value!r} in {text!r}"
            pending = value
            i += 1
        elif kind == "ident":
            assert value != "offset", f"offset is not read here: {text!r}"
            matchers: list[tuple[str, str, str]] = []
            i += 1
            if i < len(toks) and toks[i] == ("op", "{"):
                matchers, i = matchers_read(i)
            expr.selectors.append(Selector(value, matchers, tuple(stack)))
        elif (kind, value) == ("op", "{"):
            raise AssertionError(f"a selector without a metric name in {text!r}")
        elif (kind, value) == ("op", "("):
            stack.append(pending)
            pending = ""
            i += 1
        elif (kind, value) == ("op", ")"):
            stack.pop()
            i += 1
        else:
            i += 1
    assert not stack, f"unbalanced parentheses in {text!r}"
    return expr


def test_the_reader_finds_metrics_labels_and_functions() -> None:
    expr = promql_read(
        'histogram_quantile(0.95, sum by (tool, le) (rate(a_bucket{job=~"$job", '
        'tool!="x"}[$__rate_interval]))) / sum(b_total) and on (instance) c'
    )
    assert [s.metric for s in expr.selectors] == ["a_bucket", "b_total", "c"]
    assert expr.selectors[0].matchers == [("job", "=~", "$job"), ("tool", "!=", "x")]
    assert expr.selectors[0].inside == ("histogram_quantile", "sum", "rate")
    assert expr.grouped_by == {"tool", "le", "instance"}
    with pytest.raises(AssertionError):
        promql_read("sume(a_total)")


# --- The dashboard ----------------------------------------------------------------------


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels_all(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for panel in panels:
        out.append(panel)
        out.extend(panels_all(panel.get("panels", [])))  # a collapsed row holds its own
    return out


def queries() -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    board = dashboard()
    found = [
        (panel["title"], target["expr"])
        for panel in panels_all(board["panels"])
        for target in panel.get("targets", [])
    ]
    for variable in board["templating"]["list"]:
        if variable["type"] != "query":
            continue
        m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variable["definition"])
        assert m, f"variable {variable['name']}: only label_values(selector, label) is read here"
        query = variable["query"]
        assert (query["query"] if isinstance(query, dict) else query) == variable["definition"]
        # The label it lists must be on the selector's series: read it as a grouping.
        found.append((f"variable {variable['name']}", f"sum by ({m[2]}) ({m[1]})"))
    return found


def test_the_dashboard_imports_anywhere() -> None:
    board = dashboard()
    assert board["title"] == "Roomservice" and board["uid"] == "roomservice"
    assert board["schemaVersion"] >= 39
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    everything = panels_all(board["panels"])
    ids = [p["id"] for p in everything]
    assert len(ids) == len(set(ids))
    for panel in everything:
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        for target in [panel, *panel["targets"]]:
            assert target["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
    titles = [p["title"] for p in everything]
    assert len(titles) == len(set(titles))
    assert set(titles) >= PANELS, PANELS - set(titles)


def test_the_prometheus_snippet_scrapes_metrics_with_the_token() -> None:
    config = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["authorization"]["type"] == "Bearer"  # METRICS_ACCESS=token
    assert job["authorization"]["credentials_file"]


# --- What the service really exports ----------------------------------------------------


@dataclass
class Series:
    family_type: str
    labels: set[str]
    values: dict[str, set[str]]


async def exported(settings: Any) -> dict[str, Series]:
    """Every sample name on the app's /metrics, scraped after calls that give the labelled
    series samples: a tool call that works, one that fails, a refusal, a stream and a waiter
    held while it scrapes."""
    settings.METRICS_ACCESS = "local"
    # Webhook failures are counted where deliveries run: the Celery worker and the relay,
    # which load mcp_gateway.tasks at start (a web process alone never does; they reach
    # its /metrics through a shared PROMETHEUS_MULTIPROC_DIR). Load it as they do.
    importlib.import_module("mcp_gateway.tasks")
    team = await callers.team("grafana-a")
    room = new_room_id("grafana")
    await tool_run(team, "add_task", {"roomId": room, "title": "counted"})
    with pytest.raises(errors.DomainError):
        await tool_run(team, "get_task", {"roomId": room, "taskId": "t_nosuchtask00"})
    runner.tool_observed("add_task", "rate_limited", 0.001)
    transport = httpx.ASGITransport(app=application, client=("127.0.0.1", 5000))
    async with (
        budgets.slot_hold(team, "streams"),
        budgets.slot_hold(team, "waiters"),
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as http,
    ):
        page = await http.get("/metrics")
    assert page.status_code == 200
    series: dict[str, Series] = {}
    for family in text_string_to_metric_families(page.text):
        for sample in family.samples:
            one = series.setdefault(sample.name, Series(family.type, set(), {}))
            one.labels |= set(sample.labels)
            for label, value in sample.labels.items():
                one.values.setdefault(label, set()).add(value)
    return series


def outcomes_possible() -> set[str]:
    """Every outcome calls.runner.tool_run can count: ok, internal, or a DomainError's code."""
    assert tenant_errors.TooManyError.code == "too_many"  # tenants' errors are loaded
    codes = {"ok", OUTCOME_INTERNAL}
    todo: list[type[errors.DomainError]] = [errors.DomainError]
    while todo:
        cls = todo.pop()
        codes.add(cls.code)
        todo.extend(cls.__subclasses__())
    return codes


def values_named(op: str, value: str) -> list[str] | None:
    """The plain values a matcher names (None: a Grafana variable or a real regex)."""
    if "$" in value:
        return None
    if op in ("=", "!="):
        return [value]
    if re.fullmatch(r"[A-Za-z0-9_]+(\|[A-Za-z0-9_]+)*", value):
        return value.split("|")
    return None


async def test_every_series_and_label_the_dashboard_reads_is_exported(
    transactional_db: None, redis_client_closed: None, settings: Any
) -> None:
    series = await exported(settings)
    assert {"roomservice_tool_calls_total", "roomservice_open"} <= set(series)
    used: set[str] = set()
    for where, text in queries():
        expr = promql_read(text)
        assert expr.selectors, f"{where}: no metric in {text!r}"
        for selector in expr.selectors:
            name = selector.metric
            used.add(name)
            assert name in series, f"{where}: {name} is not on /metrics ({text!r})"
            exists = series[name].labels | TARGET_LABELS
            for label, op, value in selector.matchers:
                assert label in exists, f"{where}: {name} has no label {label!r}"
                named = values_named(op, value)
                if named is None or label in TARGET_LABELS:
                    continue
                known = series[name].values.get(label, set())
                if label == "outcome":
                    known = known | outcomes_possible()
                assert set(named) <= known, f"{where}: {name}{{{label}}} is never {named}"
            for label in expr.grouped_by:
                assert label in exists, f"{where}: {name} has no label {label!r} to group by"
            if RATES & set(selector.inside):
                assert series[name].family_type in ("counter", "histogram"), (
                    f"{where}: rate() of {name}, a {series[name].family_type}"
                )
                assert not name.endswith("_created"), f"{where}: rate() of {name}"
            if "histogram_quantile" in selector.inside:
                assert name.endswith("_bucket") and series[name].family_type == "histogram"
                assert "le" in expr.grouped_by, f"{where}: histogram_quantile without le"
    # Every roomservice series an operator watches is on the dashboard.
    ours = {
        name
        for name, one in series.items()
        if name.startswith("roomservice_") and not name.endswith(("_created", "_sum"))
    }
    assert ours - used == set(), f"on /metrics but on no panel: {sorted(ours - used)}"
