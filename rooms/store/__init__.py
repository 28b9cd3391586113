"""The only package that talks to Redis: one typed async function per atomic step.

One module per domain, named as its scripts' directory in rooms/lua/ (plan, context, events,
presence, locks, vars, reviews, search, leases, messages, handoffs, room; memory for what a
room inherits from its project), and modules of their own for what is not a room's
protocol: archives (freeze, snapshot, load, thaw), bearers (tenancy's hot-path caches),
budgets (the limiter and the slots of open streams and waiters) and signals (revocations
and webhook changes to every process). A function takes a `RoomKeys` and plain values, runs
one script (or one read), and turns the script's codes into typed results (an outcome is a
Literal) or `None` for "not found". Domain rules and messages live in services/selectors;
this package knows nothing of tools or callers.

engine.py loads and runs the scripts (EVALSHA/EVAL, timed) and wraps the write steps
(guard, idempotency record, turn); connections.py holds the connections (one Redis or a
cluster), wakeups.py the wake-ups and signals heard. A caller imports the module whose step
it uses (`from rooms.store import plan as plan_store`).
"""
