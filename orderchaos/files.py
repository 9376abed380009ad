"""Small file helpers shared by every floor: atomic writes, directory fsync, the git commit.

They know nothing about what the files hold; each on-disk format lives in its own module
(policies and run directories in :mod:`orderchaos.agents.policy_files`, the proof book in
:mod:`orderchaos.agents.proof_book`, saved games in :mod:`orderchaos.arena.game_files`).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old or the new file:
    a temp file in the same directory, fsync, then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o644)  # mkstemp creates 0600; these are ordinary files
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def fsync_directory(path: str | Path) -> None:
    """Flush a directory entry (after renames) where the platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sha256_hex(data: bytes) -> str:
    """The SHA-256 digest of ``data`` as 64 hex characters."""
    return hashlib.sha256(data).hexdigest()


def git_commit(cwd: str | Path | None = None) -> str | None:
    """The current git commit of the checkout containing ``cwd`` (default: this package),
    or None when it is not a git checkout or git is missing."""
    where = Path(cwd) if cwd is not None else Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
