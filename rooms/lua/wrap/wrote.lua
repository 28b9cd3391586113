--- What "the step changed the room" means for each kind of answer (keyed records only such
--- answers; turn passes the turn on only after one). rooms/lua/__init__.py Wrote names them.
---

local function wrote_one(res) return type(res) == 'table' and res[1] == 1 end
local function wrote_always(res) return true end
local function wrote_unless_quota(res) return type(res) == 'table' and res[1] ~= -1 end
local function wrote_mark(res) return res == 1 end
local function wrote_granted(res) return type(res) == 'table' and (res[1] == 1 or res[1] == 2) end
