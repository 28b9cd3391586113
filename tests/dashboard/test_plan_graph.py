"""The plan's dependency graph: columns by dependency depth, every edge from a dependency's
right side to its dependent's left, no overlap, readable at 50 tasks, and a cycle or a
missing dependency never breaks it."""

from __future__ import annotations

import random
from typing import Any

from dashboard.plan_graph import (
    GRAPH_DEPENDENCIES_MAX,
    GRAPH_TASKS_MAX,
    NODE_HEIGHT,
    NODE_WIDTH,
    TITLE_CHARS,
    plan_layout,
    task_depths,
)


def _task(task_id: str, *deps: str, status: str = "pending", title: str = "") -> dict[str, Any]:
    return {
        "id": task_id,
        "title": title or f"Task {task_id}",
        "status": status,
        "owner": None,
        "depends_on": list(deps),
    }


def fifty_tasks(seed: int = 26) -> list[dict[str, Any]]:
    """A cycle-free plan of 50 tasks: each may wait for up to three earlier ones."""
    chosen = random.Random(seed)
    statuses = ["pending", "in_progress", "blocked", "done"]
    tasks = []
    for n in range(50):
        earlier = [f"t{i}" for i in range(n)]
        deps = chosen.sample(earlier, k=min(len(earlier), chosen.randint(0, 3)))
        tasks.append(_task(f"t{n}", *deps, status=chosen.choice(statuses)))
    return tasks


def test_depth_is_the_longest_chain_before_a_task() -> None:
    tasks = [_task("a"), _task("b", "a"), _task("c", "a", "b"), _task("d")]
    assert task_depths(tasks) == {"a": 0, "b": 1, "c": 2, "d": 0}


def test_a_task_waiting_for_nothing_sits_just_before_its_first_dependent() -> None:
    tasks = [_task("a"), _task("b", "a"), _task("c", "b"), _task("late"), _task("d", "c", "late")]
    columns = {n.id: n.column for n in plan_layout(tasks).nodes}
    assert columns == {"a": 0, "b": 1, "c": 2, "late": 2, "d": 3}


def test_fifty_tasks_lay_out_in_layers_without_overlap() -> None:
    tasks = fifty_tasks()
    graph = plan_layout(tasks)
    nodes = {n.id: n for n in graph.nodes}
    assert len(nodes) == 50
    assert len(graph.edges) == sum(len(t["depends_on"]) for t in tasks)
    for edge in graph.edges:  # every dependency is in an earlier column: edges run rightwards
        assert nodes[edge.source].column < nodes[edge.target].column
        assert edge.path.startswith(f"M{nodes[edge.source].x + NODE_WIDTH},")
        assert edge.open == (nodes[edge.source].status != "done")
    spots = {(n.x, n.y) for n in graph.nodes}
    assert len(spots) == 50  # no two nodes share a place
    for node in graph.nodes:
        assert node.x >= 0 and node.x + NODE_WIDTH <= graph.width
        assert node.y >= 0 and node.y + NODE_HEIGHT <= graph.height
    assert sum(len(c) for c in graph.columns) == 50
    for index, column in enumerate(graph.columns):
        assert [n.row for n in column] == list(range(len(column)))
        assert all(n.column == index for n in column)


def test_a_task_sits_near_what_it_waits_for() -> None:
    tasks = [_task("a"), _task("b"), _task("c"), _task("x", "c"), _task("y", "a")]
    rows = {n.id: n.row for n in plan_layout(tasks).nodes}
    assert rows["y"] < rows["x"]  # y waits for the first row, x for the third


def test_a_cycle_and_a_missing_dependency_never_loop_or_fail() -> None:
    tasks = [_task("a"), _task("b", "c"), _task("c", "b"), _task("d", "gone", "a")]
    depths = task_depths(tasks)
    assert depths["a"] == 0 and depths["d"] == 1
    assert depths["b"] == depths["c"] == 2  # after everything else
    graph = plan_layout(tasks)
    assert {(e.source, e.target) for e in graph.edges} == {("b", "c"), ("c", "b"), ("a", "d")}
    assert next(n for n in graph.nodes if n.id == "d").after == [("a", "Task a")]


def test_long_titles_are_cut_at_a_word_and_kept_whole_for_the_tooltip() -> None:
    long = "Wire the payment provider's webhooks into the ledger"
    node = plan_layout([_task("a", title=long, status="in_progress")]).nodes[0]
    assert node.title == long
    assert len(node.short) <= TITLE_CHARS and node.short == "Wire the payment…"
    assert node.status_words == "in progress" and node.line == "in progress"
    unbroken = plan_layout([_task("b", title="Supercalifragilisticexpialidocious")]).nodes[0]
    assert unbroken.short == "Supercalifragilisticexp…"


def test_an_empty_plan_is_an_empty_graph() -> None:
    graph = plan_layout([])
    assert graph.nodes == [] and graph.edges == [] and graph.columns == []


def test_a_plan_past_the_graphs_bounds_is_counted_not_drawn() -> None:
    """The worst a room may hold (2,000 tasks of 100 dependencies) costs one counting pass,
    not 38 MB of SVG on every live refresh; at the bounds it is still drawn."""
    worst = [_task(f"t{n}", *[f"t{i}" for i in range(max(0, n - 100), n)]) for n in range(2000)]
    graph = plan_layout(worst)
    assert graph.too_large == (2000, sum(len(t["depends_on"]) for t in worst))
    assert graph.nodes == [] and graph.edges == [] and graph.width == 0
    chain = [_task(f"t{n}", *([f"t{n - 1}"] if n else [])) for n in range(GRAPH_TASKS_MAX)]
    drawn = plan_layout(chain)
    assert drawn.too_large is None and len(drawn.nodes) == GRAPH_TASKS_MAX
    assert plan_layout([*chain, _task("one-more")]).too_large == (GRAPH_TASKS_MAX + 1, 149)
    dense = [_task(f"t{n}", *[f"t{i}" for i in range(n)]) for n in range(36)]  # 630 edges
    assert plan_layout(dense).too_large == (36, 630)
    assert GRAPH_DEPENDENCIES_MAX < 630
