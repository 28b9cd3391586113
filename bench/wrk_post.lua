-- wrk script for `make bench`: POST MCP tools/call requests to /mcp, keep-alive.
--
--   wrk -t2 -c32 -d5s -s bench/wrk_post.lua http://127.0.0.1:PORT/mcp -- SCENARIO TOKEN ROOM TASKS
--
-- SCENARIO: mix (read_plan, update_task, post_event, get_unread_events, heartbeat in turn),
--           or one tool name (read_plan, heartbeat, update_task, post_event, get_unread_events,
--           wait_for_events with timeoutMs 0).
-- TASKS: task ids of ROOM, comma-separated (update_task cycles over them).
-- Requests are formatted once per thread in init(); response() counts non-200 answers,
-- JSON-RPC errors and tool errors; done() prints one "BENCH key=value ..." line.

local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local function split(s)
  local out = {}
  for part in string.gmatch(s or "", "[^,]+") do table.insert(out, part) end
  return out
end

local function call(id, name, args)
  return wrk.format(nil, nil, nil,
    '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"' .. name ..
    '","arguments":' .. args .. '}}')
end

function init(args)
  local scenario, token, room, tasks = args[1], args[2], args[3], split(args[4])
  wrk.method = "POST"
  wrk.headers["Authorization"] = "Bearer " .. token
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  local agent = "wrk-" .. tid
  local r = '"roomId":"' .. room .. '"'
  local builders = {
    read_plan = function(i) return call(i, "read_plan", "{" .. r .. "}") end,
    heartbeat = function(i)
      return call(i, "heartbeat", "{" .. r .. ',"agentId":"' .. agent .. '"}')
    end,
    update_task = function(i)
      local task = tasks[(i - 1) % #tasks + 1]
      local status = (i % 2 == 0) and "in_progress" or "pending"
      return call(i, "update_task", "{" .. r .. ',"taskId":"' .. task .. '","status":"' .. status ..
        '","agentId":"' .. agent .. '"}')
    end,
    post_event = function(i)
      return call(i, "post_event", "{" .. r .. ',"type":"bench_load","from":"' .. agent ..
        '","payload":{"n":' .. i .. '}}')
    end,
    get_unread_events = function(i)
      return call(i, "get_unread_events", "{" .. r .. ',"agentId":"' .. agent .. '","limit":20}')
    end,
    -- An idle agent arming its wait, without the wait: the slot, the read, the release.
    wait_for_events = function(i)
      return call(i, "wait_for_events", "{" .. r .. ',"agentId":"' .. agent .. '","timeoutMs":0}')
    end,
  }
  requests = {}
  if scenario == "mix" then
    local order = {"read_plan", "update_task", "post_event", "get_unread_events", "heartbeat"}
    for i = 1, 4 * #tasks do
      for _, name in ipairs(order) do table.insert(requests, builders[name](#requests + 1)) end
    end
  else
    local build = builders[scenario]
    if build == nil then error("unknown scenario " .. tostring(scenario)) end
    for i = 1, 2 * #tasks do table.insert(requests, build(i)) end
  end
  idx = 0
  non200 = 0
  rpc_errors = 0
  tool_errors = 0
  first_bad = ""
end

function request()
  idx = idx % #requests + 1
  return requests[idx]
end

function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
    if first_bad == "" then first_bad = "HTTP " .. status .. " " .. string.sub(body or "", 1, 300) end
  elseif not string.find(body, '"result":', 1, true) then
    rpc_errors = rpc_errors + 1
    if first_bad == "" then first_bad = string.sub(body, 1, 300) end
  elseif string.find(body, '"isError":true', 1, true) then
    tool_errors = tool_errors + 1
    if first_bad == "" then first_bad = string.sub(body, 1, 300) end
  end
end

function done(summary, latency, requests)
  local n200, rpc, tool, bad = 0, 0, 0, ""
  for _, t in ipairs(threads) do
    n200 = n200 + t:get("non200")
    rpc = rpc + t:get("rpc_errors")
    tool = tool + t:get("tool_errors")
    local b = t:get("first_bad")
    if bad == "" and b ~= nil then bad = b end
  end
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
    "non200=%d rpc_errors=%d tool_errors=%d connect=%d read=%d write=%d timeout=%d status=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, n200, rpc, tool, e.connect, e.read, e.write,
    e.timeout, e.status))
  if bad ~= "" then io.write("BENCH_FIRST_BAD " .. string.gsub(bad, "\n", " ") .. "\n") end
end
