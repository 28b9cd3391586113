"""Shared variables."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import vars as vars_selectors
from rooms.services import vars as vars_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, section="shared-variables", roomd=True)
async def set_shared_var(room: RoomRef, a: s.SetSharedVarInput) -> r.VarSet:
    """Call to share a small fact (a port, a staging URL) as a string. Emits shared_var_set."""
    return await vars_services.var_set(room, key=a.key, value=a.value, agent_id=a.agentId)


@room_tool(read_only=True, section="shared-variables", roomd=True)
async def get_shared_var(room: RoomRef, a: s.GetSharedVarInput) -> r.VarGot:
    """Call to read one shared variable: {key, value, found}; the value is the string that was
    set."""
    return await vars_selectors.var_get(room, key=a.key)


@room_tool(read_only=True, section="shared-variables", roomd=True)
async def list_shared_vars(room: RoomRef, a: s.ListSharedVarsInput) -> r.VarList:
    """Call to see every shared variable of the room."""
    return await vars_selectors.var_list(room)
