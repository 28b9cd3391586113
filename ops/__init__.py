"""Tools that run beside the service, not in it: `make prod-check`, the Chromium that the
browser tests, the prod-check and the README's picture drive, and the generator of
docs/tools.md (`python -m ops.tooldocs`). Not shipped (pyproject.toml's package list leaves
it out); nothing of the service imports it."""
