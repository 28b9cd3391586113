--- What "the step changed the room" means for each kind of answer (keyed records only such
--- answers; turn passes the turn on only after one). rooms/lua/__init__.py Wrote names them.
--- And how a wrapper answers for the step it did not run: {'__call', its words as JSON}
--- (rooms/lua/__init__.py CALL_ANSWER; rooms/store/engine.py run_write reads them by name).
---

local function wrote_ok(res) return type(res) == 'table' and res[1] == 'ok' end
local function wrote_always(res) return true end
local function wrote_unless_quota(res) return type(res) == 'table' and res[1] ~= 'quota' end
local function wrote_granted(res)
  return type(res) == 'table' and (res[1] == 'granted' or res[1] == 'renewed')
end
local function answered(said) return {'__call', cjson.encode(said)} end
