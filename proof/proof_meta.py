"""The prover's side file: ``BOOK.meta.json`` next to a proof book.

It keeps each open leaf's largest failed budget (so that a resumed run does not redo big
failed solves), the solver work spent per node of the top two plies (wall seconds, and, in
files written since they were added, CPU seconds and nodes: ``cpu_seconds`` and ``nodes``,
absent keys read as none), the totals of all runs, and the first move being proven. This module is the one that knows the file's format.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from orderchaos.agents.proof_book import ProofBookError, write_atomic
from orderchaos.files import loads_bounded

META_VERSION = 1


def meta_path(book_path: str | os.PathLike[str]) -> Path:
    """The side file of a book: ``BOOK.meta.json``."""
    return Path(f"{book_path}.meta.json")


@dataclass
class BookMeta:
    """Side data of a book: largest failed budget per open position (``tried``), solver
    wall seconds, CPU seconds and nodes per top-of-tree position (``seconds``,
    ``cpu_seconds``, ``nodes``), totals (solver wall and CPU seconds,
    solver nodes, prover wall seconds, runs), and the first move being
    proven. Keys are canonical keys."""

    tried: dict[int, int] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)
    cpu_seconds: dict[int, float] = field(default_factory=dict)
    nodes: dict[int, int] = field(default_factory=dict)
    solver_seconds: float = 0.0
    solver_cpu_seconds: float = 0.0
    solver_nodes: int = 0
    wall_seconds: float = 0.0
    runs: int = 0
    first: int | None = None

    @classmethod
    def load(cls, book_path: str | os.PathLike[str]) -> "BookMeta":
        """Read the side file of ``book_path``; an absent one gives empty side data.
        Raises ProofBookError naming the file when it is unreadable or malformed."""
        p = meta_path(book_path)
        if not p.exists():
            return cls()
        try:
            d = loads_bounded(p.read_text())
            if not isinstance(d, dict):
                raise ValueError(f"it holds a JSON {type(d).__name__}, not an object of side data")
            if d.get("version") != META_VERSION:
                raise ValueError(f"version {d.get('version')!r}, expected {META_VERSION}")
            return cls(
                tried={int(k, 16): int(v) for k, v in d["tried"].items()},
                seconds={int(k, 16): float(v) for k, v in d["seconds"].items()},
                cpu_seconds={int(k, 16): float(v) for k, v in d.get("cpu_seconds", {}).items()},
                nodes={int(k, 16): int(v) for k, v in d.get("nodes", {}).items()},
                solver_seconds=float(d["solver_seconds"]),
                solver_cpu_seconds=float(d.get("solver_cpu_seconds", 0.0)),
                solver_nodes=int(d["solver_nodes"]),
                wall_seconds=float(d["wall_seconds"]),
                runs=int(d["runs"]),
                first=None if d["first"] is None else int(d["first"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ProofBookError(f"side file {p} is unreadable or malformed: {e}") from None

    def add_work(self, key: int, seconds: float, cpu_seconds: float, nodes: int) -> None:
        """Charge one solve's wall seconds, CPU seconds and nodes to the position ``key``."""
        self.seconds[key] = self.seconds.get(key, 0.0) + seconds
        self.cpu_seconds[key] = self.cpu_seconds.get(key, 0.0) + cpu_seconds
        self.nodes[key] = self.nodes.get(key, 0) + nodes

    def save(self, book_path: str | os.PathLike[str]) -> None:
        """Write the side file atomically."""
        d = {
            "version": META_VERSION,
            "first": self.first,
            "runs": self.runs,
            "solver_seconds": round(self.solver_seconds, 3),
            "solver_cpu_seconds": round(self.solver_cpu_seconds, 3),
            "solver_nodes": self.solver_nodes,
            "wall_seconds": round(self.wall_seconds, 3),
            "seconds": {f"{k:x}": round(v, 3) for k, v in self.seconds.items()},
            "cpu_seconds": {f"{k:x}": round(v, 3) for k, v in self.cpu_seconds.items()},
            "nodes": {f"{k:x}": v for k, v in self.nodes.items()},
            "tried": {f"{k:x}": v for k, v in self.tried.items()},
        }
        write_atomic(meta_path(book_path), json.dumps(d, indent=0).encode())
