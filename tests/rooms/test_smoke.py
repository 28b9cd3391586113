import pytest

from rooms.refs import RoomRef
from rooms.selectors import plan as plan_selectors
from rooms.services import plan as plan_services

pytestmark = pytest.mark.anyio


async def test_added_task_is_in_the_plan(room: RoomRef) -> None:
    task = await plan_services.task_add(
        room, title="t", description="", depends_on=[], priority=None, agent_id="a"
    )
    plan = await plan_selectors.plan_get(room)
    assert [t["id"] for t in plan["tasks"]] == [task["id"]]
