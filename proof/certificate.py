"""The file format of a proof certificate: that Order wins Order and Chaos by central pairing.

A certificate is one JSON object (UTF-8), self-contained and versioned::

    {
      "format": "orderchaos-certificate",
      "version": 1,
      "first_move": "c3 X",
      "pairs": [["a2", "f2"], ["a3", "f3"], ...],
      "border_answer": "other symbol",
      "centre_moves": {"....X.......O...": "d4 O", ...}
    }

* ``first_move``: Order's first move on the empty 6x6 board, a cell (``a``-``f`` then
  ``1``-``6``) and a symbol.
* ``pairs``: the 10 border pairs; each pair's two cells are the ends of one 6-cell line
  whose four inner cells are central (b2..e5).
* ``border_answer``: how Order answers a Chaos move on a border cell: on its partner, with
  the ``"other symbol"`` (or the ``"same symbol"``; the checker then finds the lemma broken).
* ``centre_moves``: Order's move for every Order-to-move centre board the strategy reaches.
  A key is the central 4x4 as 16 characters of ``X``, ``O`` and ``.``, row-major b2, c2,
  d2, e2, b3, ..., e5; a value is a cell and a symbol, like ``"d4 O"``.

This module knows the format and nothing else: :func:`write` and :func:`read` (which
refuses a file that is not a well-formed certificate of this version with
:class:`CertificateError`). It imports only the standard library and the rules engine, so
the independent checker (:mod:`orderchaos.proof.certificate_check`) can read with it.
What the moves mean is checked there.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from orderchaos.envs.rules import SYMBOLS, parse_cell
from orderchaos.files import InputTooLargeError, JSONLimitError, loads_bounded, read_text_bounded

FORMAT = "orderchaos-certificate"
VERSION = 1
BORDER_ANSWERS = ("other symbol", "same symbol")
CENTRE_KEY_CHARS = frozenset("XO.")
KEYS = ("format", "version", "first_move", "pairs", "border_answer", "centre_moves")


class CertificateError(ValueError):
    """A file that is not a readable certificate of this format and version."""


@dataclass(frozen=True)
class Certificate:
    """A certificate's contents, as in the file (cell names and moves as text)."""

    first_move: str
    pairs: tuple[tuple[str, str], ...]
    border_answer: str
    centre_moves: dict[str, str]


def parse_move(text: str) -> int:
    """The action of a move written ``"d4 O"`` (cell, one space, symbol). Raises ValueError."""
    if not isinstance(text, str) or len(text) != 4 or text[2] != " " or text[3] not in SYMBOLS:
        raise ValueError(f"bad move {text!r}: expected a cell and a symbol like 'd4 O'")
    return 2 * parse_cell(text[:2]) + SYMBOLS.index(text[3])


def to_json(cert: Certificate) -> str:
    """The certificate as the text of its file (centre boards sorted, one per line)."""
    head = {
        "format": FORMAT,
        "version": VERSION,
        "first_move": cert.first_move,
        "pairs": [list(p) for p in cert.pairs],
        "border_answer": cert.border_answer,
    }
    lines = [json.dumps(k) + ": " + json.dumps(v) for k, v in head.items()]
    moves = ",\n".join(f"  {json.dumps(k)}: {json.dumps(cert.centre_moves[k])}" for k in sorted(cert.centre_moves))
    return "{\n" + ",\n".join(lines) + ',\n"centre_moves": {\n' + moves + "\n}\n}\n"


def write(cert: Certificate, path: str | os.PathLike[str]) -> None:
    """Write ``cert`` to ``path`` atomically (a temporary file renamed into place)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(to_json(cert))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: str | os.PathLike[str]) -> Certificate:
    """Read and validate the shape of a certificate (not what its moves mean). Raises
    CertificateError naming the file and what is wrong with it."""
    try:
        text = read_text_bounded(path)
    except InputTooLargeError as e:
        raise CertificateError(f"certificate {path} is refused: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CertificateError(f"cannot read certificate {path}: {e}") from None
    try:
        data = loads_bounded(text)
    except json.JSONDecodeError as e:
        raise CertificateError(f"certificate {path} is not valid JSON (damaged or truncated?): {e}") from None
    except JSONLimitError as e:
        raise CertificateError(f"certificate {path} is refused: {e}") from None
    try:
        return from_dict(data)
    except CertificateError as e:
        raise CertificateError(f"certificate {path}: {e}") from None


def from_dict(data: object) -> Certificate:
    """A Certificate from a parsed JSON object; raises CertificateError naming what is wrong."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CertificateError(f"not an {FORMAT} file (expected a JSON object with \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise CertificateError(f"version {data.get('version')!r} is not supported (this program reads version {VERSION})")
    if sorted(data) != sorted(KEYS):
        raise CertificateError(f"expected exactly the keys {', '.join(KEYS)}; found {', '.join(sorted(data))}")
    first, pairs, answer, moves = data["first_move"], data["pairs"], data["border_answer"], data["centre_moves"]
    try:
        parse_move(first)
    except ValueError as e:
        raise CertificateError(f"first_move: {e}") from None
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(c, str) for c in p) for p in pairs
    ):
        raise CertificateError("pairs must be a list of two-cell lists like [\"a2\", \"f2\"]")
    for p in pairs:
        for c in p:
            try:
                parse_cell(c)
            except ValueError as e:
                raise CertificateError(f"pairs: {e}") from None
    if answer not in BORDER_ANSWERS:
        raise CertificateError(f"border_answer must be one of {', '.join(map(repr, BORDER_ANSWERS))}, got {answer!r}")
    if not isinstance(moves, dict):
        raise CertificateError("centre_moves must be an object mapping centre boards to moves")
    for key, value in moves.items():
        if len(key) != 16 or not set(key) <= CENTRE_KEY_CHARS:
            raise CertificateError(f"centre_moves: bad centre board {key!r} (16 characters of X, O and .)")
        try:
            parse_move(value)
        except ValueError as e:
            raise CertificateError(f"centre_moves[{key!r}]: {e}") from None
    return Certificate(first, tuple((p[0], p[1]) for p in pairs), answer, dict(moves))
