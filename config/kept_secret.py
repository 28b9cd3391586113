"""A random secret made once and kept in a file only its owner reads: a local run's
SECRET_KEY (config.settings), so no two installs share one and nobody derives its links
from the source, and the room export key when none is set (tenants.imports)."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path


def kept_secret(path: Path) -> str:
    """The secret in `path`, made on first use: written (mode 0600) to a file of its own and
    linked into place, so of several processes starting at once one makes it and every one
    reads that one, and nobody ever reads half of it."""
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
        try:
            os.write(fd, secrets.token_urlsafe(50).encode())
            os.fsync(fd)
            os.close(fd)
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)  # atomic; fails when another process was first
        finally:
            os.unlink(tmp)
    secret = path.read_text().strip()
    if len(secret) < 32:
        raise RuntimeError(f"{path} holds no secret; remove it to make a new one")
    return secret
