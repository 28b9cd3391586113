import pytest

from rooms import selectors, services
from rooms.refs import RoomRef

pytestmark = pytest.mark.anyio


async def test_added_task_is_in_the_plan(room: RoomRef) -> None:
    task = await services.task_add(
        room, title="t", description="", depends_on=[], priority=None, agent_id="a"
    )
    plan = await selectors.plan_get(room)
    assert [t["id"] for t in plan["tasks"]] == [task["id"]]
