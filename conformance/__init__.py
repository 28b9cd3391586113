"""The conformance kit: a black-box suite of the Room Protocol's tool contract (docs/tools.md),
run over MCP against any server that speaks it — ours, roomd, or an integrator's.

It needs only the official `mcp` client (with its HTTP stack, httpx2) and the standard
library, so it can be copied out of this repository and pointed at anything:

    python -m conformance --url http://host:port/mcp --key KEY [--key-b KEY_OF_ANOTHER_TEAM]

See docs/conformance.md for what it checks and how to read its report.
"""

from __future__ import annotations

from conformance.runner import Config, Outcome, Report, run_kit

__all__ = ["Config", "Outcome", "Report", "run_kit"]
