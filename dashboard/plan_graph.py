"""The plan as a dependency graph: tasks in columns by how deep their dependencies go, a
line from each dependency to the task that waits for it. The page draws it as SVG from
the positions here, so the layout is a plain function a test can check at any size.

Layered ("Sugiyama-style") and kept simple: a task's column is the longest chain of
dependencies before it (a task that waits for nothing sits just before the first task
that waits for it); inside a column, tasks sit near the tasks they wait for (the
mean row of their dependencies), then in plan order. A dependency cycle, which the plan
refuses but an old room might hold, never loops: its tasks go after everything else.

Bounded: a plan of more than GRAPH_TASKS_MAX tasks or GRAPH_DEPENDENCIES_MAX dependencies
is not laid out (a room may hold 2,000 tasks of 100 dependencies each: 38 MB of SVG on
every live refresh, for every viewer, share links included); the page says so and the
board and task pages show the plan instead. Counting costs one pass over the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NODE_WIDTH = 200
NODE_HEIGHT = 48
COLUMN_GAP = 56
ROW_GAP = 14
MARGIN = 10
TITLE_CHARS = 24  # of a title drawn in a node; the whole title is its tooltip and name
OWNER_CHARS = 16
GRAPH_TASKS_MAX = 150
GRAPH_DEPENDENCIES_MAX = 600

STATUS_WORDS = {
    "pending": "pending",
    "in_progress": "in progress",
    "blocked": "blocked",
    "done": "done",
}


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    title: str
    short: str  # the title as drawn, cut to TITLE_CHARS
    status: str
    status_words: str
    line: str  # the node's second line: status and owner
    column: int
    row: int
    x: int
    y: int
    after: list[tuple[str, str]] = field(default_factory=list)  # (id, title) it waits for

    @property
    def text_x(self) -> int:
        return self.x + 14

    @property
    def title_y(self) -> int:
        return self.y + 20

    @property
    def line_y(self) -> int:
        return self.y + 38


@dataclass(frozen=True, slots=True)
class Edge:
    source: str  # the dependency
    target: str  # the task that waits for it
    path: str  # SVG path data
    open: bool  # the dependency is not done yet


@dataclass(frozen=True, slots=True)
class PlanGraph:
    nodes: list[Node]
    edges: list[Edge]
    columns: list[list[Node]]
    width: int
    height: int
    node_width: int = NODE_WIDTH
    node_height: int = NODE_HEIGHT
    # Set instead of a layout when the plan is past the graph's bounds: (tasks, dependencies).
    too_large: tuple[int, int] | None = None
    tasks_max: int = GRAPH_TASKS_MAX
    dependencies_max: int = GRAPH_DEPENDENCIES_MAX


def _cut(text: str, most: int) -> str:
    """`text` in at most `most` characters: cut at a word's end when one is near."""
    text = " ".join(text.split())
    if len(text) <= most:
        return text
    head = text[: most - 1]
    space = head.rfind(" ")
    return (head[:space] if space > most // 2 else head).rstrip(" ,.;:-") + "…"


def task_depths(tasks: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Each task's column: 0 with no dependency in the plan, else one more than its deepest
    dependency. Tasks in a cycle (or waiting on one) come after all the others."""
    ids = {str(t["id"]) for t in tasks}
    deps = {str(t["id"]): [d for d in t.get("depends_on") or [] if d in ids] for t in tasks}
    waiting: dict[str, list[str]] = {i: [] for i in ids}
    unmet = {i: len(set(d)) for i, d in deps.items()}
    for task_id, needs in deps.items():
        for dep in set(needs):
            waiting[dep].append(task_id)
    depth: dict[str, int] = {}
    ready = [str(t["id"]) for t in tasks if unmet[str(t["id"])] == 0]
    while ready:
        task_id = ready.pop()
        depth[task_id] = max((depth[d] + 1 for d in deps[task_id]), default=0)
        for later in waiting[task_id]:
            unmet[later] -= 1
            if unmet[later] == 0:
                ready.append(later)
    after_all = max(depth.values(), default=-1) + 1
    for task in tasks:
        depth.setdefault(str(task["id"]), after_all)
    return depth


def depths_for_drawing(tasks: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """task_depths, with each task that waits for nothing moved right to just before the
    first task that waits for it: its lines stay short instead of crossing the graph."""
    depths = task_depths(tasks)
    ids = set(depths)
    waiting: dict[str, list[str]] = {}
    for task in tasks:
        for dep in task.get("depends_on") or []:
            if dep in ids:
                waiting.setdefault(dep, []).append(str(task["id"]))
    for task in tasks:
        task_id = str(task["id"])
        has_deps = any(d in ids for d in task.get("depends_on") or [])
        if not has_deps and task_id in waiting:
            depths[task_id] = max(min(depths[w] for w in waiting[task_id]) - 1, 0)
    return depths


def _edge_path(x1: float, y1: float, x2: float, y2: float) -> str:
    if x2 <= x1:  # the same column (a cycle's leftovers): a plain line
        return f"M{x1:g},{y1:g} L{x2:g},{y2:g}"
    middle = (x1 + x2) / 2
    return f"M{x1:g},{y1:g} C{middle:g},{y1:g} {middle:g},{y2:g} {x2:g},{y2:g}"


def plan_layout(tasks: Sequence[Mapping[str, Any]]) -> PlanGraph:
    """Positions for every task of the plan (in plan order) and a path for each dependency;
    no layout, only the counts, past GRAPH_TASKS_MAX or GRAPH_DEPENDENCIES_MAX."""
    ids = {str(t["id"]) for t in tasks}
    dependencies = sum(sum(1 for d in t.get("depends_on") or [] if d in ids) for t in tasks)
    if len(tasks) > GRAPH_TASKS_MAX or dependencies > GRAPH_DEPENDENCIES_MAX:
        return PlanGraph(
            nodes=[],
            edges=[],
            columns=[],
            width=0,
            height=0,
            too_large=(len(tasks), dependencies),
            tasks_max=GRAPH_TASKS_MAX,
            dependencies_max=GRAPH_DEPENDENCIES_MAX,
        )
    depths = depths_for_drawing(tasks)
    order = {str(t["id"]): index for index, t in enumerate(tasks)}
    titles = {str(t["id"]): str(t.get("title") or t["id"]) for t in tasks}
    by_id = {str(t["id"]): t for t in tasks}
    column_count = max(depths.values(), default=-1) + 1
    rows: dict[str, int] = {}
    placed: list[list[str]] = []
    for column in range(column_count):
        members = [i for i in order if depths[i] == column]

        def near(task_id: str) -> tuple[float, int]:
            above = [rows[d] for d in by_id[task_id].get("depends_on") or [] if d in rows]
            return (sum(above) / len(above) if above else -1.0, order[task_id])

        members.sort(key=near)
        for row, task_id in enumerate(members):
            rows[task_id] = row
        placed.append(members)

    def position(task_id: str) -> tuple[int, int]:
        return (
            MARGIN + depths[task_id] * (NODE_WIDTH + COLUMN_GAP),
            MARGIN + rows[task_id] * (NODE_HEIGHT + ROW_GAP),
        )

    nodes: dict[str, Node] = {}
    for task_id in order:
        task = by_id[task_id]
        status = str(task.get("status") or "pending")
        words = STATUS_WORDS.get(status, status.replace("_", " "))
        owner = task.get("owner")
        x, y = position(task_id)
        nodes[task_id] = Node(
            id=task_id,
            title=titles[task_id],
            short=_cut(titles[task_id], TITLE_CHARS),
            status=status,
            status_words=words,
            line=f"{words} · {_cut(str(owner), OWNER_CHARS)}" if owner else words,
            column=depths[task_id],
            row=rows[task_id],
            x=x,
            y=y,
            after=[(d, titles[d]) for d in task.get("depends_on") or [] if d in titles],
        )
    edges = []
    for node in nodes.values():
        for dep, _ in node.after:
            source = nodes[dep]
            edges.append(
                Edge(
                    source=dep,
                    target=node.id,
                    path=_edge_path(
                        source.x + NODE_WIDTH,
                        source.y + NODE_HEIGHT / 2,
                        node.x,
                        node.y + NODE_HEIGHT / 2,
                    ),
                    open=source.status != "done",
                )
            )
    tallest = max((len(members) for members in placed), default=0)
    return PlanGraph(
        nodes=list(nodes.values()),
        edges=edges,
        columns=[[nodes[i] for i in members] for members in placed],
        width=2 * MARGIN + column_count * NODE_WIDTH + max(column_count - 1, 0) * COLUMN_GAP,
        height=2 * MARGIN + tallest * NODE_HEIGHT + max(tallest - 1, 0) * ROW_GAP,
    )
