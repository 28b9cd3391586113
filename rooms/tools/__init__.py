"""Every tool, one module per domain (the same stems as rooms/services, rooms/selectors and
rooms/store): each tool's adapter under its row's decorator (rooms/tools/rows.py), the
docstring its description. rooms/registry.py collects them into the one table."""
