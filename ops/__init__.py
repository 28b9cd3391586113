"""Tools that run beside the service, not in it: `make prod-check` and the Chromium that the
browser tests, the prod-check and the README's picture drive. Not shipped (pyproject.toml's
package list leaves it out); nothing of the service imports it."""
