"""`python -m bench.walk`: one warm update_task followed from the door to Redis (issue 32,
point 7), on a throwaway SQLite database and an embedded Redis of its own.

At the moment the step's script leaves for Redis, the product frames on the stack (the
REST door down to the store; the packages rooms, tenants, calls, mcp_gateway,
dashboard, config):
- frames: how many;
- files: the distinct Python files among them, plus the Lua files the step is made of
  (its own, the libraries it uses, the wrappers around a write step);
- returns: how often the walk comes back to a file it had already left (A, B, A counts one).

And the whole call, door to answer: every product function entered (a frame counted once,
however often its coroutine resumes), in order; the distinct files they are in; and how
often the walk enters a function of a file it had already left.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("rooms", "tenants", "calls", "mcp_gateway", "dashboard", "config")
STEP = "plan/update_task"


def lua_files(step: str) -> set[str]:
    """The Lua files a write step is assembled from: the step, its libraries (transitively,
    from the `--- uses:` headers) and every wrapper."""
    lua = ROOT / "rooms" / "lua"
    found: set[str] = set()
    todo = [step]
    while todo:
        name = todo.pop()
        path = lua / f"{name}.lua"
        if name in found or not path.exists():
            continue
        found.add(name)
        for line in path.read_text().splitlines():
            if line.startswith("--- uses:"):
                todo += [f"lib/{u}" for u in line.split(":", 1)[1].split() if u != "room"]
    found |= {f"wrap/{p.stem}" for p in (lua / "wrap").glob("*.lua")}
    return found


def product_file(filename: str) -> str | None:
    path = Path(filename).resolve()
    if path.is_relative_to(ROOT) and path.relative_to(ROOT).parts[0] in PRODUCT:
        return str(path.relative_to(ROOT))
    return None


def returns_in(files: list[str]) -> int:
    return sum(
        1 for i, name in enumerate(files) if i > 0 and name != files[i - 1] and name in files[:i]
    )


def walk_of(stack: list[traceback.FrameSummary]) -> dict[str, int]:
    files = [name for f in stack if (name := product_file(f.filename))]
    returns = returns_in(files)
    return {
        "frames": len(files),
        "python files": len(set(files)),
        "lua files": len(lua_files(STEP)),
        "returns": returns,
    }


async def traced_update(
    room_id: str, secret: str
) -> tuple[list[traceback.FrameSummary], dict[str, int]]:
    import httpx
    import redis.asyncio.connection

    from config.asgi import application

    seen: list[list[traceback.FrameSummary]] = []
    send = redis.asyncio.connection.AbstractConnection.send_packed_command

    async def watched(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        packed = command if isinstance(command, bytes) else b"".join(bytes(c) for c in command)
        if b"EVALSHA" in packed.upper()[:64]:
            seen.append(traceback.extract_stack())
        return await send(self, command, *args, **kwargs)

    headers = {"authorization": f"Bearer {secret}", "content-type": "application/json"}
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:

        async def call(tool: str, **args: Any) -> Any:
            url = f"/api/v1/rooms/{room_id}/tools/{tool}"
            answer = await client.post(url, headers=headers, content=json.dumps(args))
            assert answer.status_code == 200, answer.text
            return answer.json()

        task = await call("add_task", title="walk", agentId="bench")
        task_id = task.get("id") or task.get("task", {}).get("id")
        await call("update_task", taskId=task_id, status="in_progress", agentId="bench")
        redis.asyncio.connection.AbstractConnection.send_packed_command = watched  # type: ignore[method-assign]
        seen.clear()
        entered: dict[Any, str] = {}  # frame -> file (held, so no id is reused)

        def profile(frame: Any, event: str, arg: Any) -> None:
            if (
                event == "call"
                and frame not in entered
                and (name := product_file(frame.f_code.co_filename))
            ):
                entered[frame] = name

        sys.setprofile(profile)
        threading.setprofile(profile)
        try:
            await call("update_task", taskId=task_id, status="done", agentId="bench")
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
            redis.asyncio.connection.AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
    assert seen, "update_task sent no script"
    files = list(entered.values())
    whole = {"functions": len(files), "files": len(set(files)), "returns": returns_in(files)}
    return max(seen, key=lambda stack: walk_of(stack)["frames"]), whole


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="rs-walk-"))
    os.environ.update(
        {
            "ROOMSERVICE_VAR_DIR": str(folder),
            "DATABASE_URL": f"sqlite:///{folder / 'walk.sqlite3'}",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    os.environ.pop("REDIS_URL", None)
    from config.embedded_redis import ensure_redis_url

    embedded = ensure_redis_url(folder / "redis", persistent=False)
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        from tenants import services

        team = services.team_ensure("walk")
        room = services.room_create(team=team, room_id="walk-room", actor="bench")
        secret = services.api_key_create(team=team, name="walk").secret
        stack, whole = asyncio.run(traced_update(room.room_id, secret))
        print("one warm update_task, REST door to the script's send:")
        for name, value in walk_of(stack).items():
            print(f"  {name:>12}: {value}")
        print("the whole call, door to answer:")
        for name, value in whole.items():
            print(f"  {name:>12}: {value}")
        if "-v" in sys.argv:
            for f in stack:
                print(f"    {f.filename}:{f.lineno} {f.name}")
    finally:
        if embedded is not None:
            embedded.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
