"""Calls: what runs a caller's work across the layers below, above `tenants/` and `rooms/`
and below the doors: one tool call for every door (runner.py), the credential holds of open
streams and waiting calls (live.py), what a client hook event does (hooks.py), and the
backup of the rows and every live room, and its restore (backups.py)."""
