"""A room's pages: the room list, the live page and its partial, a person's actions and
status changes, the event log, one task, one context entry, the export and the report."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from calls.runner import tool_run
from config import health
from dashboard import actions, charts, forms
from dashboard.plan_graph import plan_layout
from dashboard.search_hits import hit_rows
from dashboard.task_age import in_progress_ages
from dashboard.viewer import Viewer, team_view
from dashboard.views.common import room_of_viewer, room_ref_read
from rooms import clock
from rooms.errors import DomainError, TaskNotFoundError
from rooms.eventwords import WORDS as EVENT_TYPES
from rooms.eventwords import event_words
from rooms.refs import RoomRef
from rooms.report import room_report
from rooms.results import Event, RoomSnapshot
from rooms.selectors import context as context_selectors
from rooms.selectors import events as events_selectors
from rooms.selectors import plan as plan_selectors
from rooms.selectors import presence as presence_selectors
from rooms.selectors import room as room_selectors
from rooms.store import engine as engine_store
from tenants import access, acting, archives, selectors, services
from tenants.capabilities import Caller, Manage
from tenants.models import Room, WebhookDelivery


async def _room_cards(caller: Caller, rooms: list[Room]) -> list[dict[str, Any]]:
    return [
        {
            "room": room,
            **await room_selectors.room_overview(
                await access.room_access(caller, room.room_id, write=False)
            ),
        }
        for room in rooms
    ]


@team_view()
def rooms(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    form = forms.RoomForm(request.POST or None)
    if request.method == "POST":
        if not viewer.may(Manage.ROOMS):
            raise Http404("not found")
        if form.is_valid():
            try:
                room = services.room_create(
                    team=viewer.team,
                    room_id=form.cleaned_data["room_id"] or None,
                    name=form.cleaned_data["name"],
                    actor=viewer.actor,
                    project=form.cleaned_data["project"].strip(),
                )
            except DomainError as exc:
                form.add_error("room_id", exc.message)
            else:
                return redirect("room", room_id=room.room_id)
    listed = list(selectors.rooms_of_team(viewer.team.pk))
    cards = engine_store.run_sync(_room_cards, viewer.caller, listed)
    return render(
        request,
        "dashboard/rooms.html",
        {"viewer": viewer, "cards": cards, "form": form, "now": clock.now()},
    )


def _context_view(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for entry in entries:
        entry["payload_json"] = json.dumps(entry["payload"], indent=2, ensure_ascii=False)
    return entries


STATUS_LABELS = (
    ("pending", "Pending"),
    ("in_progress", "In progress"),
    ("blocked", "Blocked"),
    ("done", "Done"),
)


def _feed(events: list[Any], titles: dict[str, str]) -> list[dict[str, Any]]:
    """Events as the feed shows them: each in words (rooms.eventwords), with its thread."""
    rows: list[dict[str, Any]] = [dict(e) for e in events]
    by_id = {e["id"]: e for e in rows}
    for event in rows:
        parent = event.get("reply_to_id")
        event["parent"] = by_id.get(parent) if parent else None
        event["words"] = event_words(cast(Event, event), titles)
    return rows


def live_context(snapshot: RoomSnapshot) -> dict[str, Any]:
    tasks = snapshot["plan"]["tasks"]
    titles = {t["id"]: t["title"] for t in tasks}
    columns = [
        (status, label, [t for t in tasks if t["status"] == status])
        for status, label in STATUS_LABELS
    ]
    return {
        "snapshot": snapshot,
        "columns": columns,
        "titles": titles,
        "graph": plan_layout(tasks),
        "ages": in_progress_ages(tasks, snapshot["events"], now_ms=clock.now_ms()),
        "events": _feed(snapshot["events"], titles),
        "context": _context_view([dict(e) for e in snapshot["context"]]),
    }


def _acting(viewer: Viewer, found: Room) -> dict[str, Any]:
    """What the page lets this person do: act at all (a writer, in an active room), act for
    agents (tenants.acting), and under which name."""
    return {
        "can_act": viewer.can_write and found.status == "active",
        "acts_for_agents": acting.acting_for_allowed(viewer.caller, viewer.team),
        "me": acting.person_agent(viewer.caller, viewer.user),
    }


def _live(viewer: Viewer, found: Room) -> dict[str, Any]:
    live = engine_store.run_sync(room_selectors.room_live, room_ref_read(viewer.caller, found))
    titles = {t["id"]: t["title"] for t in live["snapshot"]["plan"]["tasks"]}
    agents = [
        {**a, "last": {**a["last"], "words": event_words(a["last"], titles)} if a["last"] else None}
        for a in live["agents"]
    ]
    return {
        **live_context(live["snapshot"]),
        "agents": agents,
        "waiting": live["waiting"],
        "hooks": live["hooks"],
        **_acting(viewer, found),
    }


ACTIVITY_DAYS = 14
ACTIVITY_HOURS = 24
HOURLY_EVENTS_READ = 2_000  # the per-hour chart reads at most this many of the newest events


async def _activity(room: RoomRef) -> dict[str, charts.BarChart]:
    """Events per day (the store's own counts) and per hour over the last day (the newest
    events the log holds, at most HOURLY_EVENTS_READ: hours before the oldest read are
    drawn as not counted)."""
    analytics = await room_selectors.room_analytics(room, days=ACTIVITY_DAYS)
    now = clock.now_ms()
    window_start = now - now % charts.HOUR_MS - (ACTIVITY_HOURS - 1) * charts.HOUR_MS
    recent = await events_selectors.event_list(
        room, since=clock.iso_from_ms(window_start - 1), limit=HOURLY_EVENTS_READ, order="desc"
    )
    times = [clock.ms_from_iso(e["timestamp"]) for e in recent]
    cut = min(times) if len(recent) >= HOURLY_EVENTS_READ else None
    return {
        "days": charts.bar_chart(
            charts.day_periods(analytics["events"]["byDate"]),
            title=f"Events per day, last {ACTIVITY_DAYS} days (UTC)",
            unit="day",
        ),
        "hours": charts.bar_chart(
            charts.hour_periods(times, now_ms=now, hours=ACTIVITY_HOURS, counted_since_ms=cut),
            title=f"Events per hour, last {ACTIVITY_HOURS} hours (UTC)",
            unit="hour",
        ),
    }


def _room_activity(viewer: Viewer, found: Room) -> dict[str, charts.BarChart] | None:
    """The activity charts, on the page and in each live refresh (they follow the feed)."""
    try:
        return engine_store.run_sync(_activity, room_ref_read(viewer.caller, found))
    except DomainError:  # an archived room has no live counts: the page shows none
        return None


@team_view()
def room(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    activity = _room_activity(viewer, found)
    return render(
        request,
        "dashboard/room.html",
        {
            "viewer": viewer,
            "room": found,
            "live_url": "live",
            "stream_url": f"/api/v1/rooms/{found.room_id}/events/stream",
            "archive": selectors.room_archive_info(found),
            "room_tab": "live",
            "activity": activity,
            "webhook_notes": webhook_notice(viewer, found),
            **_live(viewer, found),
        },
    )


# A delivery still waiting this long after it was made is late: the worker is not keeping up.
WEBHOOK_LATE_SECONDS = 120
WEBHOOK_PROCESS_NAMES = {"worker": "the Celery worker", "relay": "the webhook relay"}


def webhook_notice(viewer: Viewer, found: Room) -> list[str]:
    """For the team's operators, why this room's webhooks are not being delivered: a
    process that delivers them is down (its heartbeat, as /health reads it), deliveries
    are piling up or failing, or a webhook was disabled. Empty when all is well."""
    if not viewer.may(Manage.WEBHOOKS):
        return []
    hooks = list(selectors.webhooks_for_room(found))
    live = [h for h in hooks if h.active]
    notes = [
        f"A webhook to {h.url} was disabled: {h.disabled_reason}."
        for h in hooks
        if not h.active and h.disabled_reason
    ]
    if not live:
        return notes
    if not settings.CELERY_TASK_ALWAYS_EAGER and settings.HEALTH_PROCESSES:
        states = engine_store.run_sync(health.process_states, health.HEALTH_TIMEOUT)
        notes += [
            f"Webhooks are not being delivered: {WEBHOOK_PROCESS_NAMES[name]} is not running, "
            f"{said}. Deliveries wait until it runs again."
            for name, (said, down) in states.items()
            if down and name in WEBHOOK_PROCESS_NAMES
        ]
    late = WebhookDelivery.objects.filter(
        webhook__in=live,
        status=WebhookDelivery.Status.PENDING,
        created_at__lt=clock.now() - timedelta(seconds=WEBHOOK_LATE_SECONDS),
    ).count()
    if late:
        notes.append(
            f"{late} webhook deliver{'y' if late == 1 else 'ies'} waiting for over "
            f"{WEBHOOK_LATE_SECONDS // 60} minutes."
        )
    notes += [
        f"Deliveries to {h.url} are failing ({h.failed_attempts} attempts in a row)."
        for h in live
        if h.failed_attempts
    ]
    return notes


ROOM_STATUSES = ("active", "paused", "completed", "archived")


@team_view(requires=Manage.ROOMS)
def room_export(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    """The room as one signed JSON document, live or archived (the API's export)."""
    found = room_of_viewer(viewer, room_id)
    response = HttpResponse(archives.room_export(found.room_id), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{found.room_id}.room.json"'
    return response


@require_POST
@team_view(requires=Manage.ROOMS)
def room_status(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    """Pause, complete or reopen the room: the set_room_status tool, as this person (the
    same checks, the same event, the same audit row as an agent's call)."""
    found = room_of_viewer(viewer, room_id)
    status = request.POST.get("status", "")
    if status not in ROOM_STATUSES:
        return HttpResponse(
            f"status must be one of {', '.join(ROOM_STATUSES)}",
            status=400,
            content_type="text/plain",
        )
    try:
        engine_store.run_sync(
            tool_run,
            viewer.caller,
            "set_room_status",
            {"roomId": found.room_id, "status": status, "agentId": viewer.actor[:128]},
        )
    except DomainError as exc:  # a budget, a store outage: said, never a 500
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain")
    return redirect("room", room_id=found.room_id)


@team_view()
def room_live(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    return render(
        request,
        "dashboard/_live.html",
        {
            "viewer": viewer,
            "room": found,
            "oob": True,
            "activity": _room_activity(viewer, found),
            **_live(viewer, found),
        },
    )


def _back(request: HttpRequest, found: Room) -> str:
    """Where an action returns to: the page it was posted from, within this room."""
    back = request.POST.get("next", "")
    base = f"/rooms/{found.room_id}/"
    return back if back.startswith(base) and "//" not in back[1:] else base


@require_POST
@team_view()
def room_act(request: HttpRequest, viewer: Viewer, room_id: str, action: str) -> HttpResponse:
    """A person acts in the room (dashboard.actions): the outcome, or what was wrong, is
    shown on the page it came from. A credential that may not write is refused by the
    tool's own access check, like an agent's."""
    found = room_of_viewer(viewer, room_id)
    actor = actions.Actor(caller=viewer.caller, user=viewer.user, team=viewer.team, room=found)
    form = {k: v for k, v in request.POST.items() if isinstance(v, str)}
    try:
        messages.success(request, actions.person_act(actor, action, form))
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect(_back(request, found))


@team_view()
def task_detail(request: HttpRequest, viewer: Viewer, room_id: str, task_id: str) -> HttpResponse:
    """One task opened: description, notes, history, leases, evidence, related context and
    events, and what a person can do with it."""
    found = room_of_viewer(viewer, room_id)
    try:
        detail = engine_store.run_sync(
            plan_selectors.task_detail, room_ref_read(viewer.caller, found), task_id=task_id
        )
    except TaskNotFoundError:
        raise Http404("not found") from None
    plan = engine_store.run_sync(plan_selectors.plan_get, room_ref_read(viewer.caller, found))
    plan_titles = {t["id"]: t["title"] for t in plan["tasks"]}
    plan_titles[detail["task"]["id"]] = detail["task"]["title"]
    ages = in_progress_ages([detail["task"]], detail["events"], now_ms=clock.now_ms())
    offered = [h for h in detail["handoffs"] if h["status"] == "offered"]
    return render(
        request,
        "dashboard/task.html",
        {
            "viewer": viewer,
            "room": found,
            "room_tab": "live",
            "t": detail["task"],
            "detail": detail,
            "offered": offered,
            "events": _feed(detail["events"], plan_titles),
            "titles": plan_titles,
            "age": ages.get(detail["task"]["id"]),
            "statuses": STATUS_LABELS,
            **_acting(viewer, found),
        },
    )


EVENTS_PER_PAGE = 50


async def _hit_sources(room: RoomRef, hits: list[Any]) -> tuple[dict[str, Event], dict[str, str]]:
    """What search hits name, to say them in words: the events, and each context entry's
    summary (or its type when it has none). A deleted one is simply absent."""
    events = await events_selectors.event_get_many(
        room, [h["id"] for h in hits if h["kind"] == "event"]
    )
    summaries: dict[str, str] = {}
    for hit in hits:
        if hit["kind"] == "context" and hit["id"] not in summaries:
            try:
                entry = await context_selectors.context_get(room, entry_id=hit["id"])
            except DomainError:
                continue
            summaries[hit["id"]] = entry["summary"] or entry["type"].replace("_", " ")
    return events, summaries


@team_view()
def room_events(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    """The whole log, page by page (older), filtered by agent and type, or searched (the
    search tool)."""
    found = room_of_viewer(viewer, room_id)
    agent = request.GET.get("agent", "").strip()[:128] or None
    kind = request.GET.get("type", "").strip()[:64] or None
    before = request.GET.get("before", "").strip()[:64] or None
    q = request.GET.get("q", "").strip()[:200]
    ref = room_ref_read(viewer.caller, found)
    hits: list[Any] = []
    error = ""
    if q:
        try:
            hits = engine_store.run_sync(
                tool_run, viewer.caller, "search", {"roomId": found.room_id, "q": q, "limit": 50}
            )["hits"]
        except DomainError as exc:
            error = exc.message
    agents = [
        row["agentId"] for row in engine_store.run_sync(presence_selectors.presence_list, ref)
    ]
    page = engine_store.run_sync(
        events_selectors.event_page,
        ref,
        before=before,
        limit=EVENTS_PER_PAGE,
        agent=agent,
        type_=kind,
    )
    plan = engine_store.run_sync(plan_selectors.plan_get, ref)
    titles = {t["id"]: t["title"] for t in plan["tasks"]}
    hit_events, summaries = engine_store.run_sync(_hit_sources, ref, hits) if hits else ({}, {})
    query = {k: v for k, v in (("agent", agent), ("type", kind)) if v}
    return render(
        request,
        "dashboard/events.html",
        {
            "viewer": viewer,
            "room": found,
            "room_tab": "events",
            "events": _feed(page["events"], titles),
            "older": page["older"],
            "scanned": page["scanned"],
            "agent": agent or "",
            "type": kind or "",
            "q": q,
            "hits": hit_rows(hits, titles=titles, summaries=summaries, events=hit_events),
            "error": error,
            "filtered": bool(query),
            "query": query,
            "before": before,
            "titles": titles,
            "agent_options": filter_options(sorted(agents), agent),
            "type_options": filter_options(sorted(EVENT_TYPES), kind),
            "per_page": EVENTS_PER_PAGE,
        },
    )


FILTER_OPTIONS_MAX = 200  # a room's agents can be many: the select lists this many at most


def filter_options(known: list[str], chosen: str | None) -> list[str]:
    """A filter select's values: the known ones (at most FILTER_OPTIONS_MAX), and the one in
    the URL first when it is not among them, so a link with any value still filters."""
    shown = known[:FILTER_OPTIONS_MAX]
    return [chosen, *shown] if chosen and chosen not in shown else shown


@team_view()
def context_entry(
    request: HttpRequest, viewer: Viewer, room_id: str, entry_id: str
) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    try:
        history = engine_store.run_sync(
            context_selectors.context_history,
            room_ref_read(viewer.caller, found),
            entry_id=entry_id,
        )
    except DomainError:
        raise Http404("not found") from None
    return render(
        request,
        "dashboard/context.html",
        {
            "viewer": viewer,
            "room": found,
            "history": _context_view([dict(e) for e in reversed(history)]),
            "current": history[-1],
            **_acting(viewer, found),
        },
    )


def _report(caller: Caller, found: Room) -> str:
    async def build() -> str:
        return await room_report(await access.room_access(caller, found.room_id, write=False))

    return engine_store.run_sync(build)


@team_view()
def report(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    return render(
        request,
        "dashboard/report.html",
        {"viewer": viewer, "room": found, "markdown": _report(viewer.caller, found)},
    )


@team_view()
def report_download(request: HttpRequest, viewer: Viewer, room_id: str) -> HttpResponse:
    found = room_of_viewer(viewer, room_id)
    response = HttpResponse(
        _report(viewer.caller, found), content_type="text/markdown; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{found.room_id}-report.md"'
    return response
