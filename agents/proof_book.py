"""The proof book: a compact, checksummed binary file of proven Order and Chaos positions.

Each entry is a position, up to the 16 symmetries (8 board symmetries times swapping X
and O), with its game-theoretic winner and, where the side to move wins, one winning move.

File format, version 1 (all integers little-endian)
---------------------------------------------------
Header, 24 bytes::

    offset  size  field
    0       8     magic  b"OCPBOOK\\0"
    8       2     format version (1)
    10      2     record size in bytes (10)
    12      8     entry count n
    20      4     CRC-32 (zlib.crc32) of the payload

Payload: ``n`` records of 10 bytes, sorted by key, keys strictly increasing::

    offset  size  field
    0       8     key_lo: bits 0..63 of the canonical key
    8       1     key_hi: bits 64..71 of the canonical key
    9       1     value: bit 7 = winner (0 Order, 1 Chaos); bits 0..6 = the mover's winning
                  move in the canonical frame (action 0..71), or 127 for none

The canonical key is :func:`orderchaos.envs.symmetry.canonical_key`: the least ``x | o << 36`` over
the 16 images, so it fits in 72 bits. A move is stored only where the side to move wins
(Order to move and Order wins, or Chaos to move and Chaos wins), and it is stored in the
frame of the canonical image; :meth:`ProofBook.lookup` maps it back to the query's frame.

A file whose magic, version, record size, length, checksum, key order or values are wrong
is refused with :class:`ProofBookError`, which names the file and the fault; nothing is
ever half-read. :meth:`ProofBook.save` writes atomically (temporary file in the same
folder, fsync, ``os.replace``), so a reader sees the old file or the new one, never a mix.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterator

import numpy as np

from orderchaos.files import atomic_write_bytes, fsync_directory
from orderchaos.envs.rules import ACTIONS, CELLS, CHAOS, ORDER, State
from orderchaos.envs.symmetry import INVERSE, transform_action, transform_bits

MAGIC = b"OCPBOOK\0"
FORMAT_VERSION = 1
SHIPPED_BOOK_NAME = "proof_book.ocb"
RECORD_SIZE = 10
_HEADER = struct.Struct("<8sHHQI")
HEADER_SIZE = _HEADER.size
NO_MOVE = 127
_WINNER_BIT = 0x80
_MOVE_MASK = 0x7F
_LO_MASK = (1 << 64) - 1
_BOARD_MASK = (1 << CELLS) - 1
RECORD_DTYPE = np.dtype([("lo", "<u8"), ("hi", "u1"), ("v", "u1")])
"""One on-disk record: key bits 0..63, key bits 64..71, value byte."""
assert RECORD_DTYPE.itemsize == RECORD_SIZE


class ProofBookError(Exception):
    """A proof book file that cannot be used (names the file and what is wrong), or an
    inconsistent addition (the same position given two different winners)."""


@dataclass(frozen=True)
class BookEntry:
    """A book hit: ``winner`` is ``"order"`` or ``"chaos"``; ``move`` is a winning move for
    the side to move in the frame of the queried state, or None where the mover loses."""

    winner: str
    move: int | None


def canonical_form(x: int, o: int) -> tuple[int, int]:
    """The canonical key of a position and a symmetry ``g`` (0..15) that maps the position
    onto its canonical image (``transform_state(state, g)`` has ``x | o << 36 == key``)."""
    best, best_g = -1, 0
    for t in range(8):
        tx, to = transform_bits(x, t), transform_bits(o, t)
        k1 = tx | to << CELLS
        k2 = to | tx << CELLS
        if best < 0 or k1 < best:
            best, best_g = k1, t
        if k2 < best:
            best, best_g = k2, t + 8
    return best, best_g


def key_state(key: int) -> State:
    """The canonical image of a position, rebuilt from its key."""
    return State(key & _BOARD_MASK, key >> CELLS)


def _encode_value(winner: str, move: int | None) -> int:
    return (_WINNER_BIT if winner == CHAOS else 0) | (NO_MOVE if move is None else move)


def _decode_value(value: int) -> tuple[str, int | None]:
    move = value & _MOVE_MASK
    return (CHAOS if value & _WINNER_BIT else ORDER), (None if move == NO_MOVE else move)


class ProofBook:
    """Proven positions keyed by canonical key; see the module docstring for the format.

    Loaded entries live in sorted numpy arrays (binary search); additions go to a dict
    until :meth:`save` (or :meth:`compact`) merges them in.
    """

    def __init__(self) -> None:
        self._lo = np.zeros(0, dtype=np.uint64)
        self._hi = np.zeros(0, dtype=np.uint8)
        self._v = np.zeros(0, dtype=np.uint8)
        self._new: dict[int, int] = {}

    # -- size and iteration -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._v) + len(self._new)

    def __contains__(self, state: object) -> bool:
        return isinstance(state, State) and self.lookup(state) is not None

    def items(self) -> Iterator[tuple[int, str, int | None]]:
        """Every entry as ``(canonical key, winner, move in the canonical frame)``, by key."""
        self.compact()
        for lo, hi, v in zip(self._lo.tolist(), self._hi.tolist(), self._v.tolist()):
            winner, move = _decode_value(v)
            yield int(lo) | int(hi) << 64, winner, move

    # -- lookup and add -----------------------------------------------------------------
    def _value_of_key(self, key: int) -> int | None:
        v = self._new.get(key)
        if v is not None:
            return v
        if not len(self._v):
            return None
        hi, lo = key >> 64, key & _LO_MASK
        a = int(np.searchsorted(self._hi, hi, "left"))
        b = int(np.searchsorted(self._hi, hi, "right"))
        if a == b:
            return None
        i = a + int(np.searchsorted(self._lo[a:b], np.uint64(lo), "left"))
        if i < b and int(self._lo[i]) == lo:
            return int(self._v[i])
        return None

    def lookup_key(self, key: int) -> tuple[str, int | None] | None:
        """``(winner, move in the canonical frame)`` for a canonical key, or None."""
        v = self._value_of_key(key)
        return None if v is None else _decode_value(v)

    def lookup(self, state: State) -> BookEntry | None:
        """The book's entry for ``state`` (any of its 16 images), with the winning move
        mapped into the frame of ``state``; None when the position is not in the book."""
        key, g = canonical_form(state.x, state.o)
        v = self._value_of_key(key)
        if v is None:
            return None
        winner, move = _decode_value(v)
        return BookEntry(winner, None if move is None else transform_action(move, INVERSE[g]))

    def add(self, state: State, winner: str, move: int | None = None) -> bool:
        """Record that ``winner`` wins ``state``; ``move`` (in the frame of ``state``) is a
        winning move for the side to move, required to be None when the mover loses.

        Returns True when the entry is new. Adding a known position again is a no-op,
        except that a move fills in a missing one; a different winner raises
        ProofBookError (two proofs disagree: a bug somewhere).
        """
        if winner not in (ORDER, CHAOS):
            raise ValueError(f"winner must be 'order' or 'chaos', got {winner!r}")
        if state.x & state.o:
            raise ValueError("invalid State: a cell holds both X and O")
        if move is not None:
            if not 0 <= move < ACTIONS or (state.x | state.o) >> (move >> 1) & 1:
                raise ValueError(f"move {move} is not a legal action in this position")
            if winner != state.to_play:
                raise ValueError("a move is stored only where the side to move wins")
        key, g = canonical_form(state.x, state.o)
        canon_move = None if move is None else transform_action(move, g)
        return self._add_key(key, _encode_value(winner, canon_move))

    def _add_key(self, key: int, value: int) -> bool:
        old = self._value_of_key(key)
        if old is None:
            self._new[key] = value
            return True
        if (old ^ value) & _WINNER_BIT:
            o_w, _ = _decode_value(old)
            n_w, _ = _decode_value(value)
            raise ProofBookError(
                f"conflicting results for position {key_state(key).to_string()}: "
                f"book says {o_w}, new result says {n_w}"
            )
        if old & _MOVE_MASK == NO_MOVE and value & _MOVE_MASK != NO_MOVE:
            self._new[key] = value  # compact() keeps the newer value for a repeated key
        return False

    def merge(self, other: "ProofBook") -> int:
        """Add every entry of ``other``; returns how many were new. Raises ProofBookError
        when the books disagree on a winner."""
        added = 0
        for key, winner, move in other.items():
            added += self._add_key(key, _encode_value(winner, move))
        return added

    def compact(self) -> None:
        """Merge pending additions into the sorted arrays (done by save and items)."""
        if not self._new:
            return
        keys = np.fromiter(self._new.keys(), dtype=object, count=len(self._new))
        lo = np.array([k & _LO_MASK for k in keys], dtype=np.uint64)
        hi = np.array([k >> 64 for k in keys], dtype=np.uint8)
        v = np.fromiter(self._new.values(), dtype=np.uint8, count=len(self._new))
        lo = np.concatenate([self._lo, lo])
        hi = np.concatenate([self._hi, hi])
        v = np.concatenate([self._v, v])
        order = np.lexsort((lo, hi))  # stable: a repeated key keeps the newer (later) value
        lo, hi, v = lo[order], hi[order], v[order]
        if len(v) > 1:
            last = np.ones(len(v), dtype=bool)
            last[:-1] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
            lo, hi, v = lo[last], hi[last], v[last]
        self._lo, self._hi, self._v = lo, hi, v
        self._new = {}

    # -- files --------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The whole file image: header and sorted payload."""
        self.compact()
        rec = np.empty(len(self._v), dtype=RECORD_DTYPE)
        rec["lo"], rec["hi"], rec["v"] = self._lo, self._hi, self._v
        payload = rec.tobytes()
        header = _HEADER.pack(MAGIC, FORMAT_VERSION, RECORD_SIZE, len(rec), zlib.crc32(payload))
        return header + payload

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the book to ``path`` atomically (temp file in the same folder, fsync,
        ``os.replace``)."""
        write_atomic(Path(path), self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "ProofBook":
        """Read a book file; raises ProofBookError naming the file and the fault when it is
        missing, unreadable, truncated, corrupt, or of another format version."""
        p = Path(path)
        try:
            data = p.read_bytes()
        except OSError as e:
            raise ProofBookError(f"cannot read proof book {p}: {e.strerror or e}") from None
        return cls.from_bytes(data, str(p))

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> "ProofBook":
        """Parse a file image (see :meth:`load`); ``name`` is used in error messages."""

        def bad(what: str) -> ProofBookError:
            return ProofBookError(f"proof book {name}: {what}")

        if len(data) < HEADER_SIZE:
            if data[: len(MAGIC)] != MAGIC[: len(data)]:
                raise bad("not a proof book (bad magic bytes)")
            raise bad(f"truncated: {len(data)} bytes, shorter than the {HEADER_SIZE}-byte header")
        magic, version, rsize, count, crc = _HEADER.unpack_from(data)
        if magic != MAGIC:
            raise bad(f"not a proof book (magic bytes {magic!r}, expected {MAGIC!r})")
        if version != FORMAT_VERSION:
            raise bad(f"format version {version} is not supported (this code reads version {FORMAT_VERSION})")
        if rsize != RECORD_SIZE:
            raise bad(f"record size {rsize} in header, expected {RECORD_SIZE}")
        want = HEADER_SIZE + count * RECORD_SIZE
        if len(data) < want:
            raise bad(f"truncated: header announces {count} entries ({want} bytes), file has {len(data)} bytes")
        if len(data) > want:
            raise bad(f"{len(data) - want} unexpected trailing bytes after {count} entries")
        payload = memoryview(data)[HEADER_SIZE:]
        if zlib.crc32(payload) != crc:
            raise bad("corrupt: payload checksum (CRC-32) does not match the header")
        rec = np.frombuffer(payload, dtype=RECORD_DTYPE)
        lo, hi, v = rec["lo"].copy(), rec["hi"].copy(), rec["v"].copy()
        if count > 1:
            up = (hi[1:] > hi[:-1]) | ((hi[1:] == hi[:-1]) & (lo[1:] > lo[:-1]))
            if not up.all():
                raise bad(f"corrupt: keys not strictly increasing at entry {int(np.argmin(up)) + 1}")
        moves = v & _MOVE_MASK
        if np.any((moves >= ACTIONS) & (moves != NO_MOVE)):
            raise bad("corrupt: a stored move outside 0..71")
        x = lo & np.uint64(_BOARD_MASK)
        o = (lo >> np.uint64(CELLS)) | (hi.astype(np.uint64) << np.uint64(64 - CELLS))
        if np.any(x & o):
            raise bad("corrupt: a key with a cell holding both X and O")
        book = cls()
        book._lo, book._hi, book._v = lo, hi, v
        return book


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` atomically (old file or new, never half) and flush the folder entry."""
    atomic_write_bytes(path, data)
    fsync_directory(Path(path).parent)


def shipped_book_path() -> Path:
    """Where the proof book shipped with the package lives (``agents/data/proof_book.ocb``)."""
    return Path(str(resources.files("orderchaos.agents") / "data" / SHIPPED_BOOK_NAME))


_SHIPPED: list[ProofBook] = []


def shipped_book() -> ProofBook:
    """The shipped proof book, loaded once per process (an empty book if none is shipped)."""
    if not _SHIPPED:
        path = shipped_book_path()
        _SHIPPED.append(ProofBook.load(path) if path.is_file() else ProofBook())
    return _SHIPPED[0]


__all__ = [
    "BookEntry",
    "FORMAT_VERSION",
    "MAGIC",
    "ProofBook",
    "ProofBookError",
    "canonical_form",
    "key_state",
    "shipped_book",
    "shipped_book_path",
    "write_atomic",
]
