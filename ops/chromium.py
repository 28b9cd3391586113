"""Debian's Chromium, headless, as everything here that drives a browser starts it: the
browser tests, `make prod-check` and the README's picture.

The flags keep a root-run, sandbox-less Chromium quiet on a machine with no outside network
(without the background-networking ones it keeps trying Google's hosts).
"""

from __future__ import annotations

import os
import shutil

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """The browser to drive: CHROMIUM_PATH when set, else Debian's; None when there is none
    (`make test` installs it when it can)."""
    for candidate in (
        os.environ.get("CHROMIUM_PATH"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and os.path.exists(candidate):
            return candidate
    return None
