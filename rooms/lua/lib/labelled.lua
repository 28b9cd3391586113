--- KEYS[1] task_order, KEYS[2] task_titles
--- ARGV[1] how many of the newest tasks to sample
--- -> {id, label, id, label, ...} the sample an unknown-task hint is computed from
---

-- {id, label, id, label, ...}: each id with its label from the hash `labels`.
local function labelled(ids, labels)
  local out = {}
  if #ids == 0 then return out end
  local found = redis.call('HMGET', labels, unpack(ids))
  for i = 1, #ids do
    table.insert(out, ids[i])
    table.insert(out, found[i] or '')
  end
  return out
end
