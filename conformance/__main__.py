"""`python -m conformance --url URL --key KEY [--key-b KEY_B]`: run the kit, print the
report, exit 0 (all passed or skipped), 1 (a check failed) or 2 (it could not run).

Each option falls back to an environment variable (CONFORMANCE_URL, CONFORMANCE_KEY,
CONFORMANCE_KEY_B), so a key need not appear in a shell's history or a CI log.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from conformance.runner import ROOMD_TOOLS, Config, all_checks, run_kit

MODES = ("legacy", "auto", "2026-07-28")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Black-box conformance checks of a Room Protocol MCP server (docs/tools.md).",
    )
    env = os.environ.get
    parser.add_argument(
        "--url",
        default=env("CONFORMANCE_URL", ""),
        help="the MCP endpoint, or the server's base URL (the kit then tries URL/mcp)",
    )
    parser.add_argument("--key", default=env("CONFORMANCE_KEY", ""), help="a team's bearer key")
    parser.add_argument(
        "--key-b",
        default=env("CONFORMANCE_KEY_B", ""),
        help="a key of a second team, for the cross-team isolation checks (else they skip)",
    )
    parser.add_argument(
        "--mode", choices=MODES, default="legacy", help="the MCP handshake (default: legacy)"
    )
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per tool call")
    parser.add_argument(
        "--rate-wait",
        type=float,
        default=180.0,
        help="seconds the run may wait in all for the server's rate limit, pacing itself as "
        "its Retry-After says (default 180)",
    )
    parser.add_argument("--only", default="", help="run only checks naming this (a tool, say)")
    parser.add_argument(
        "--surface",
        choices=("all", "roomd"),
        default="all",
        help="judge every listed tool (all), or only roomd's 44, the others as not offered",
    )
    parser.add_argument("--report", default="", help="also write the report to this file")
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.list:
        for c in all_checks():
            print(f"{c.kind:<9}  {c.source:<8}  {c.name}" + (f"  — {c.why}" if c.why else ""))
        return 0
    if not args.url or not args.key:
        print(
            "conformance: give the server's MCP endpoint (or its base URL) and a team key: "
            "--url http://host:port[/mcp] --key KEY (or CONFORMANCE_URL / CONFORMANCE_KEY)",
            file=sys.stderr,
        )
        return 2
    config = Config(
        url=args.url,
        key=args.key,
        key_b=args.key_b,
        mode=args.mode,
        timeout=args.timeout,
        only=args.only,
        surface=ROOMD_TOOLS if args.surface == "roomd" else None,
        rate_wait=args.rate_wait,
    )
    try:
        report = asyncio.run(run_kit(config))
    except ConnectionError as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2
    text = report.render()
    print(text)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(text + "\n", encoding="utf-8")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
