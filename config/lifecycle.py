"""Everything `make run` starts dies with it, however it dies — Ctrl-C, SIGTERM, or a
supervisor's kill -9 of its process group: each child asks the kernel (Linux's
PR_SET_PDEATHSIG) to be killed the moment its parent is gone, so no Celery worker, relay or
embedded Redis is ever left behind as an orphan.

A child also starts with the signal state of a fresh process, not its launcher's: a script,
`timeout`, a container's init or a service manager may ignore or block SIGTERM, and both
survive exec — a Redis, worker or relay with SIGTERM blocked or ignored outlives a killed
`make run` (and a graceful stop). The parent-death signal is SIGKILL, which none can block,
ignore or handle slowly: when the parent died abruptly there is nothing left to shut down for
(the Redis's AOF is written before each reply, so it loses nothing). A child's own children
do the same in turn (the Celery worker's beat process, config/celery.py): a parent killed
outright cannot end them, and a warm shutdown with its broker gone may take its time."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
# What stops a process, each of which a launcher may have ignored (a background job of a
# script ignores SIGINT and SIGQUIT; nohup SIGHUP; some supervisors SIGTERM).
STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def die_with_parent(parent_pid: int | None = None, sig: int = signal.SIGKILL) -> None:
    """Have `sig` sent to this process when its parent dies (Linux; elsewhere a no-op). If
    the parent is already gone (it died before this ran), exit at once."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, sig)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def child_of_this_process(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` for subprocess.Popen: the child starts with no signal blocked and the
    stopping ones at their defaults, and dies with the process starting it. Start it from
    the main thread: the kernel sends the signal when the *thread* that forked it ends."""
    parent = os.getpid()

    def prepare() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        for signum in STOPPING:
            signal.signal(signum, signal.SIG_DFL)
        die_with_parent(parent, sig)

    return prepare
