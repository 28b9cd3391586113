"""Everything `make run` starts dies with it, however it dies — Ctrl-C, SIGTERM, or a
supervisor's kill -9 of its process group: each child asks the kernel (Linux's
PR_SET_PDEATHSIG) to be sent SIGTERM the moment its parent is gone, so no Celery worker,
relay or embedded Redis is ever left behind as an orphan."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None = None, sig: int = signal.SIGTERM) -> None:
    """Have `sig` sent to this process when its parent dies (Linux; elsewhere a no-op). If
    the parent is already gone (it died before this ran), exit at once."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, sig)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def child_of_this_process() -> Callable[[], None]:
    """A `preexec_fn` for subprocess.Popen: the child dies with the process starting it."""
    parent = os.getpid()
    return lambda: die_with_parent(parent)
