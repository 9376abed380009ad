"""Small file helpers shared by every floor: atomic writes, directory fsync, the git commit,
the check that an output path can be written before any work starts, and a text reader and
a JSON parser bounded for files a user hands in.

They know nothing about what the files hold; each on-disk format lives in its own module
(policies and run directories in :mod:`orderchaos.agents.policy_files`, the proof book in
:mod:`orderchaos.agents.proof_book`, saved games in :mod:`orderchaos.arena.game_files`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_JSON_INT_DIGITS = 40
"""The most digits an integer in a JSON file may have (every count this project writes fits
in 20); a longer one is refused before Python converts it."""
MAX_INPUT_BYTES = 256 * 2**20
"""The most bytes :func:`read_text_bounded` reads from a file a user hands in (256 MiB: a
games, positions or puzzle file or a certificate is read whole and parsed in memory, and
none this project writes comes near it); a larger file, or an endless one such as
``/dev/zero``, is refused instead of filling the memory."""


class OutputPathError(ValueError):
    """An output path that cannot be written: a directory where a file is meant (or a file
    where a directory is meant), a parent that is a file, or a place without write access."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _probe_directory(directory: Path, what: str, shown: Path) -> None:
    """Raise OutputPathError unless ``directory`` exists or can be created and a file can be
    created in it. Directories made for the probe are removed again, so nothing is left."""
    made: list[Path] = []
    missing = directory
    while not missing.exists():
        made.append(missing)
        if missing.parent == missing:
            break
        missing = missing.parent
    if missing.exists() and not missing.is_dir():
        raise OutputPathError(f"cannot write {what} {shown}: {missing} is a file, not a directory")
    try:
        for d in reversed(made):
            try:
                d.mkdir()
            except OSError as exc:
                raise OutputPathError(
                    f"cannot write {what} {shown}: cannot create {d} ({_reason(exc)})"
                ) from None
        try:
            fd, probe = tempfile.mkstemp(dir=directory, prefix=".write-check-")
        except OSError as exc:
            raise OutputPathError(
                f"cannot write {what} {shown}: cannot write in {directory} ({_reason(exc)})"
            ) from None
        os.close(fd)
        os.unlink(probe)
    finally:
        for d in made:
            try:
                d.rmdir()
            except OSError:
                pass


def check_output_file(path: str | os.PathLike[str], what: str = "output file") -> Path:
    """Check, before any work, that a file can be written at ``path``: it is not a
    directory, its folder exists or can be created, and it can be written (an existing file
    is opened for appending, unchanged). Raises OutputPathError, one line naming the path
    and what is wrong; returns the path."""
    p = Path(path)
    if p.is_dir():
        raise OutputPathError(f"cannot write {what} {p}: it is a directory; give a file path")
    _probe_directory(p.parent if str(p.parent) else Path("."), what, p)
    if p.exists():
        try:
            with open(p, "ab"):
                pass
        except OSError as exc:
            raise OutputPathError(f"cannot write {what} {p}: {_reason(exc)}") from None
    return p


def check_output_dir(path: str | os.PathLike[str], what: str = "output directory") -> Path:
    """Check, before any work, that ``path`` is a directory that exists or can be created
    and that files can be written in it. Raises OutputPathError (one line); returns the path."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"cannot write {what} {p}: it is a file, not a directory")
    _probe_directory(p, what, p)
    return p


def os_error_reason(exc: OSError) -> str:
    """What went wrong in an OSError, for a one-line message (``No space left on device``)."""
    return _reason(exc)


def write_with_fallback(
    path: str | os.PathLike[str], write: Callable[[Path], None]
) -> tuple[Path, OSError | None]:
    """Call ``write(path)``; if it fails with OSError, write the same thing beside ``path``
    (``NAME.unsaved-PID``), else into a new temporary folder, so finished work is kept.
    Returns the path written and the first error (None when ``path`` itself worked);
    raises the first error when no place could be written, and BrokenPipeError at once (the
    path is a pipe whose reader left: there is no one to write for)."""
    p = Path(path)
    try:
        write(p)
        return p, None
    except BrokenPipeError:
        raise
    except OSError as first:
        candidates = [p.with_name(f"{p.name}.unsaved-{os.getpid()}")]
        try:
            candidates.append(Path(tempfile.mkdtemp(prefix="orderchaos-")) / p.name)
        except OSError:
            pass
        for candidate in candidates:
            try:
                write(candidate)
                return candidate, first
            except OSError:
                continue
        raise first


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old or the new file:
    a temp file in the same directory, fsync, then ``os.replace``; a failure (a full disk
    included) removes the temp file and raises the OSError. A path that exists but is not a
    regular file (``/dev/null``, a pipe) is written straight through, never replaced."""
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        with open(path, "wb") as fh:
            fh.write(data)
        return
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


class InputTooLargeError(ValueError):
    """A file handed in that is larger than :data:`MAX_INPUT_BYTES` (or endless)."""


def read_text_bounded(path: str | os.PathLike[str], limit: int | None = None) -> str:
    """The UTF-8 text of ``path``, read only up to ``limit`` bytes (default
    :data:`MAX_INPUT_BYTES`): a larger regular file is refused from its size without reading
    it, and a device or pipe (``/dev/zero``) once more than ``limit`` bytes came. Raises
    :class:`InputTooLargeError` (one line naming the limit), OSError and UnicodeDecodeError."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    too_large = InputTooLargeError(
        f"larger than {limit:,} bytes, the most read from a file handed in; is it the right file?")
    with open(path, "rb") as fh:
        if os.path.isfile(path) and os.fstat(fh.fileno()).st_size > limit:
            raise too_large
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise too_large
    return data.decode("utf-8")


class JSONLimitError(ValueError):
    """JSON text that is well formed but beyond what this project's files ever hold: nested
    deeper than the reader's stack allows, an integer of more than
    :data:`MAX_JSON_INT_DIGITS` digits, or a number that is not finite."""


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_JSON_INT_DIGITS:
        raise JSONLimitError(f"an integer of {digits:,} digits (at most {MAX_JSON_INT_DIGITS})")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONLimitError(f"a number too large to hold ({text[:20]}{'...' if len(text) > 20 else ''})")
    return value


def _refused_constant(text: str) -> float:
    raise JSONLimitError(f"{text} is not a number this file may hold")


def loads_bounded(text: str) -> Any:
    """``json.loads`` for files from outside: raises :class:`json.JSONDecodeError` for text
    that is not JSON and :class:`JSONLimitError` (both ValueErrors, one line each) for
    nesting too deep to read, integers of more than :data:`MAX_JSON_INT_DIGITS` digits,
    and numbers that are not finite (``NaN``, ``Infinity``, ``1e999``)."""
    try:
        return json.loads(
            text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_refused_constant
        )
    except RecursionError:
        raise JSONLimitError("lists or objects nested too deeply to read") from None
