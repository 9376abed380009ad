"""A resumable, parallel proof-number prover for Order and Chaos, writing a proof book.

The search is best-first proof-number search (PN^2 style) over the top of the game tree,
kept as an explicit DAG keyed by canonical key (:func:`proof_book.canonical_form`), so
transpositions and the 16 symmetric images of a position share one node.

* OR nodes: Order to move; AND nodes: Chaos to move; the question is "does Order win?".
  An OR node's proof number is the least weighted proof number of its children, its
  disproof number the sum of theirs; AND nodes the other way round. A child's number is
  weighted by its rank in the exact solver's move ordering (:func:`edge_weight`), so
  effort goes first where the solver would look first.
* A frontier leaf is evaluated by the exact solver (:class:`agents.solver.Solver`) under a
  node budget: ``first_budget`` at first, times ``growth`` each time the leaf stays open.
  An open leaf's proof and disproof numbers are both its next budget in units of
  ``first_budget`` (the work its next try costs). Once a try of ``cap`` nodes or more
  has failed, the leaf is expanded: one child per symmetry class of the legal moves, each
  evaluated at ``first_budget`` first (a position already in the book is solved at once).
* Leaves are solved by the workers of a :class:`orderchaos.agents.solver_pool.SolverPool`
  (:func:`make_pool`), each with its own Solver (and so its own transposition table, warm
  across tasks): local worker processes (``backend="local"``; with one worker everything
  runs in this process), or Ray actors (``backend="ray"``: a local Ray instance on
  127.0.0.1, or the cluster at ``ray_address``). A worker that fails stops the run with
  :class:`orderchaos.agents.solver_pool.SolverPoolError`, after the book is saved. Several
  distinct most-proving leaves are kept in flight: selection is a depth-first walk in
  proof-number order that skips leaves already in flight.
* Lossless and resumable: every position proven or disproven -- solved leaves and
  internal nodes -- goes into the book (the mover's winning move too, where the mover
  wins). The book is written atomically every ``interval`` seconds, at the end, and on
  Ctrl-C or SIGTERM (the command line first lets the solve in progress finish; a second
  signal stops at once); a SIGKILL loses at most the last interval (and the solves in
  flight). A side file
  ``BOOK.meta.json`` keeps each open leaf's largest failed budget (so a resumed run does not
  redo big failed solves), solver time spent per node of the top two plies, and totals.
  On start, any node whose position is in the book is solved already, so runs add up.

The side file's format is :mod:`orderchaos.proof.proof_meta`'s; a book's status for the empty
board and the progress lines are :mod:`orderchaos.proof.proof_status`'s. :func:`verify`
re-checks a book with fresh solvers. The command line is ``orderchaos prove``
(:mod:`orderchaos.cli.commands.prove`).
"""

from __future__ import annotations

import heapq
import math
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


from orderchaos.agents import strategy
from orderchaos.agents.pairing_extended import covers_extended, extended_move
from orderchaos.agents.solver import Solver, generated_moves
from orderchaos.envs.rules import (
    ACTIONS,
    CHAOS,
    ORDER,
    SYMBOLS,
    State,
    action_name,
    completes_five,
    parse_cell,
    threat_pairs,
)
from orderchaos.agents.proof_book import ProofBook, ProofBookError, canonical_form, key_state
from orderchaos.agents.solver_pool import SolverPool
from orderchaos.proof.proof_meta import BookMeta
from orderchaos.ray_setup import check_address
from orderchaos.files import write_with_fallback

INF = math.inf
TOP_PLIES = 2
"""Solver time is recorded per node for this many plies below the root (and the root)."""
BACKENDS = ("local", "ray")
"""Where frontier leaves are solved: local worker processes, or Ray actors."""
LEAF_RULES: dict[str, tuple[Callable[[State], bool], Callable[[State], int]]] = {
    "extended": (covers_extended, extended_move),
    "strategy": (strategy.covers, strategy.move),
}
"""The leaf rules, each (covers, Order's move): the pairing argument with equal pairs and open
half pairs (:mod:`orderchaos.agents.pairing_extended`; its tables take about 15 s of CPU time per
kind of line to build on first use), or the central-pairing strategy alone (a table of a few seconds)."""


@dataclass(frozen=True)
class ProveConfig:
    """Search parameters: leaf budgets (solver nodes), workers and where they run
    (``backend`` 'local' or 'ray'; ``ray_address`` None for a local Ray instance, ``auto``
    or ``HOST:PORT``), timing (seconds), and the leaf rule (a key of :data:`LEAF_RULES`)."""

    first_budget: int = 20_000
    growth: int = 4
    cap: int = 5_000_000
    tt_bits: int = 22
    workers: int = 1
    interval: float = 10.0
    progress_every: float = 5.0
    backend: str = "local"
    ray_address: str | None = None
    leaf_rule: str = "extended"

    def __post_init__(self) -> None:
        if self.first_budget < 1 or self.growth < 2 or self.cap < self.first_budget:
            raise ValueError("need first_budget >= 1, growth >= 2 and cap >= first_budget")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.interval <= 0 or self.progress_every <= 0:
            raise ValueError("interval and progress_every must be positive")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.leaf_rule not in LEAF_RULES:
            raise ValueError(f"leaf_rule must be one of {', '.join(LEAF_RULES)}, got {self.leaf_rule!r}")
        if self.ray_address is not None and self.backend != "ray":
            raise ValueError("a Ray address goes with the ray backend only")
        check_address(self.ray_address, "Ray address")


def edge_weight(is_or: bool, rank: int) -> float:
    """The factor on a child's number at rank ``rank`` of the move ordering: at OR nodes
    ``2 ** (rank / 4)`` (Order needs one good move, so effort goes to the solver's first
    choices), at AND nodes ``1 + rank / 8`` (every Chaos reply must be refuted)."""
    return 2.0 ** (rank / 4) if is_or else 1.0 + rank / 8


# ---------------------------------------------------------------------------------------
# Move ordering and leaf solving (run in workers).
# ---------------------------------------------------------------------------------------


def ordered_actions(state: State) -> list[int]:
    """All legal actions, most promising for the mover first: the exact solver's move
    ordering (without its pruning), then any action it leaves out."""
    legal = state.legal_actions()
    threats = threat_pairs(state.x, state.o)
    if threats:
        own = state.to_play == ORDER
        first = [2 * c + (s if own else 1 - s) for c, s in threats]
    else:
        n, moves = generated_moves(state, stop_on_double_four=False, prune=False)
        first = [int(a) for a in moves[:n]]
    seen: set[int] = set()
    out: list[int] = []
    for a in first + legal:
        if a not in seen:
            seen.add(a)
            out.append(a)
    return out


def _child_result(solver: Solver, state: State, action: int, node_limit: int) -> tuple[str | None, int]:
    child = state.apply_unchecked(action)
    bits = child.x if action & 1 == 0 else child.o
    if completes_five(bits, action >> 1):
        return ORDER, 0
    r = solver.solve(child, node_limit=node_limit)
    return r.winner, r.nodes


def winning_move(solver: Solver, state: State, winner: str, start_budget: int) -> tuple[int, int]:
    """A winning move for the side to move of ``state``, known to be won by it, and the
    solver nodes spent finding it. Children are tried in move order under a node budget
    that grows until one of them is proven won."""
    if winner != state.to_play:
        raise ValueError("the side to move does not win this position")
    actions = ordered_actions(state)
    refuted: set[int] = set()
    budget, spent = max(start_budget, 1000), 0
    while True:
        for a in actions:
            if a in refuted:
                continue
            w, nodes = _child_result(solver, state, a, budget)
            spent += nodes
            if w == winner:
                return a, spent
            if w is not None:
                refuted.add(a)
        budget *= 4


def solve_leaf(solver: Solver, state: State, budget: int) -> tuple[str | None, int | None, int, float, float]:
    """Try to solve ``state`` within ``budget`` solver nodes: ``(winner or None, the
    mover's winning move or None, nodes, wall seconds, CPU seconds)``."""
    start, cpu = time.perf_counter(), time.process_time()
    r = solver.solve(state, node_limit=budget)
    nodes, move = r.nodes, None
    if r.winner is not None and r.winner == state.to_play:
        move, extra = winning_move(solver, state, r.winner, 2 * r.nodes)
        nodes += extra
    return r.winner, move, nodes, time.perf_counter() - start, time.process_time() - cpu


Task = tuple[int, int, int, int]
"""(key, x, o, budget)."""
Result = tuple[int, int, str | None, int | None, int, float, float]
"""(key, budget, winner, move, nodes, wall seconds, CPU seconds)."""


def solve_task(solver: Solver, task: Task) -> Result:
    """Solve one frontier leaf with a worker's Solver (a :class:`SolverPool` job)."""
    key, x, o, budget = task
    return (key, budget) + solve_leaf(solver, State(x, o), budget)


def make_pool(config: ProveConfig) -> SolverPool:
    """The solver workers ``config`` asks for: Ray actors (``backend`` 'ray'), else this
    process (one worker) or local worker processes; each keeps one Solver of
    ``2**tt_bits`` entries across tasks. Raises
    :class:`orderchaos.ray_setup.RayBackendError` when Ray cannot be used."""
    if config.backend == "ray":
        return SolverPool("ray", config.workers, tt_bits=config.tt_bits, ray_address=config.ray_address,
                          ray_setting="--ray-address", ray_purpose="--backend ray")
    kind = "inline" if config.workers == 1 else "processes"
    return SolverPool(kind, config.workers, tt_bits=config.tt_bits)


# ---------------------------------------------------------------------------------------
# The proof-number search.
# ---------------------------------------------------------------------------------------


class Node:
    """A DAG node: one position up to symmetry (``state`` is the representative image)."""

    __slots__ = ("key", "state", "stones", "is_or", "pn", "dn", "children", "parents", "tried", "busy", "terminal")

    def __init__(self, key: int, state: State) -> None:
        self.key = key
        self.state = state
        self.stones = state.num_stones
        self.is_or = state.to_play == ORDER
        self.pn = 1.0
        self.dn = 1.0
        self.children: list[tuple[Node, int, float]] | None = None  # (child, action, weight)
        self.parents: list[Node] = []
        self.tried = 0
        self.busy = False
        self.terminal = False

    @property
    def solved(self) -> bool:
        """Proven or disproven."""
        return self.pn == 0 or self.dn == 0


@dataclass
class ProveResult:
    """The outcome of a run: ``winner`` of the root (None while open), whether the
    restricted first move was refuted, and counters."""

    winner: str | None
    refuted: bool
    seconds: float
    solver_nodes: int
    tasks: int
    book_entries: int
    interrupted: bool


class Prover:
    """Proof-number search from ``root``, recording into ``book`` (saved to ``book_path``
    when given). ``first`` restricts the root (Order to move) to one action: the root is
    then proven through that move, and the run stops if the move is refuted."""

    def __init__(
        self,
        root: State,
        book: ProofBook,
        *,
        config: ProveConfig = ProveConfig(),
        book_path: str | os.PathLike[str] | None = None,
        meta: BookMeta | None = None,
        first: int | None = None,
        log: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        if root.x & root.o:
            raise ValueError("invalid root: a cell holds both X and O")
        if first is not None:
            if root.to_play != ORDER:
                raise ValueError("a first move can be fixed only when Order is to move")
            root.check_action(first)
        self.book = book
        self.config = config
        self.book_path = None if book_path is None else Path(book_path)
        self.meta = meta if meta is not None else BookMeta()
        self.first = first
        self.log = log
        self.nodes: dict[int, Node] = {}
        self.refuted = False
        self.tasks_done = 0
        self.run_nodes = 0
        self.stop_requested = False
        """Set (e.g. by a signal handler) to end :meth:`run` after the current result."""
        self.save_error: OSError | None = None
        """The first error writing the book at ``book_path`` (it went elsewhere, named in a
        warning, and :attr:`book_path` names where); None while every save went there."""
        # a root with its first move fixed is never settled by the leaf rule: the question
        # is whether that move wins
        self.root = self._node(canonical_form(root.x, root.o)[0], root, leaf_rule=first is None)

    # -- nodes --------------------------------------------------------------------------
    def _node(self, key: int, state: State, leaf_rule: bool = True) -> Node:
        node = self.nodes.get(key)
        if node is not None:
            return node
        node = Node(key, state)
        self.nodes[key] = node
        done = state.winner
        if done is not None:
            node.terminal = True
            self._set_solved(node, done)
            return node
        hit = self.book.lookup_key(key)
        if hit is not None:
            self._set_solved(node, hit[0])
            return node
        covers, move = LEAF_RULES[self.config.leaf_rule]
        if leaf_rule and covers(state):  # a leaf rule: the pairing argument wins it for Order
            self._set_solved(node, ORDER)
            self.book.add(state, ORDER, move(state) if state.to_play == ORDER else None)
            return node
        node.tried = self.meta.tried.get(key, 0)
        node.pn = node.dn = self._leaf_number(node.tried)
        return node

    def _leaf_number(self, tried: int) -> float:
        """Proof and disproof number of an open leaf: its next budget in first budgets."""
        return 1.0 if tried == 0 else tried * self.config.growth / self.config.first_budget

    @staticmethod
    def _set_solved(node: Node, winner: str) -> None:
        node.pn, node.dn = (0.0, INF) if winner == ORDER else (INF, 0.0)

    def _record(self, node: Node, winner: str, move: int | None) -> None:
        """Put a solved non-terminal position into the book and drop its side data."""
        if not node.terminal:
            self.book.add(node.state, winner, move)
            self.meta.tried.pop(node.key, None)

    def _expand(self, node: Node) -> None:
        """Create one child per symmetry class of the legal moves, in solver move order
        (only the fixed first move at a restricted root)."""
        if self.first is not None and node is self.root:
            node.children = [(self._child(node, self.first), self.first, 1.0)]
            return
        kids: list[tuple[Node, int, float]] = []
        seen: set[int] = set()
        for a in ordered_actions(node.state):
            child_state = node.state.apply_unchecked(a)
            key = canonical_form(child_state.x, child_state.o)[0]
            if key in seen:
                continue
            seen.add(key)
            child = self._child(node, a, key)
            kids.append((child, a, edge_weight(node.is_or, len(kids))))
            if (node.is_or and child.pn == 0) or (not node.is_or and child.dn == 0):
                break  # the mover wins with this move: no need for the others
        node.children = kids

    def _child(self, node: Node, action: int, key: int | None = None) -> Node:
        child_state = node.state.apply_unchecked(action)
        if key is None:
            key = canonical_form(child_state.x, child_state.o)[0]
        child = self._node(key, child_state)
        child.parents.append(node)
        return child

    def _recompute(self, node: Node) -> None:
        kids = node.children
        assert kids is not None
        if node.is_or:
            node.pn = min(w * c.pn for c, _, w in kids)
            node.dn = sum(c.dn for c, _, _ in kids)
        else:
            node.pn = sum(c.pn for c, _, _ in kids)
            node.dn = min(w * c.dn for c, _, w in kids)

    def _update(self, start: Node) -> None:
        """Recompute ``start``'s ancestors, deepest first, recording newly solved ones."""
        heap: list[tuple[int, int, Node]] = [(-start.stones, id(start), start)]
        queued = {id(start)}
        while heap:
            _, _, node = heapq.heappop(heap)
            queued.discard(id(node))
            before = (node.pn, node.dn)
            if node.children is not None and not node.solved:
                self._recompute(node)
                if node.solved:
                    self._on_solved_internal(node)
            if node is not start and (node.pn, node.dn) == before:
                continue
            for p in node.parents:
                if id(p) not in queued and not p.solved:
                    queued.add(id(p))
                    heapq.heappush(heap, (-p.stones, id(p), p))

    def _on_solved_internal(self, node: Node) -> None:
        assert node.children is not None
        winner = ORDER if node.pn == 0 else CHAOS
        if node is self.root and self.first is not None and winner == CHAOS:
            self.refuted = True  # only the fixed first move is refuted, not the root
            return
        move = None
        if winner == node.state.to_play:
            move = next(a for c, a, _ in node.children if (c.pn == 0 if winner == ORDER else c.dn == 0))
        self._record(node, winner, move)

    # -- selection ----------------------------------------------------------------------
    def _select(self) -> list[Node] | None:
        """The path to a most-proving leaf not in flight, or None when every open leaf is."""
        dead: set[int] = set()

        def walk(node: Node) -> list[Node] | None:
            if node.children is None:
                return None if node.busy else [node]
            kids = [
                ((w * c.pn if node.is_or else w * c.dn), i, c)
                for i, (c, _, w) in enumerate(node.children)
                if not c.solved and c.key not in dead
            ]
            kids.sort(key=lambda t: (t[0], t[1]))
            for _, _, c in kids:
                path = walk(c)
                if path is not None:
                    return [node] + path
                dead.add(c.key)
            return None

        return None if self.root.solved else walk(self.root)

    # -- results ------------------------------------------------------------------------
    def _apply(self, result: Result, path: list[Node]) -> None:
        key, budget, winner, move, nodes, seconds, cpu = result
        node = self.nodes[key]
        node.busy = False
        self.tasks_done += 1
        self.run_nodes += nodes
        self.meta.solver_nodes += nodes
        self.meta.solver_seconds += seconds
        self.meta.solver_cpu_seconds += cpu
        top = self.root.stones + TOP_PLIES
        for n in path:
            if n.stones <= top:
                self.meta.add_work(n.key, seconds, cpu, nodes)
        if winner is not None:
            self._record(node, winner, move)
            if not node.solved:
                self._set_solved(node, winner)
                self._update(node)
            return
        if node.solved:
            return
        node.tried = max(node.tried, budget)
        self.meta.tried[key] = node.tried
        node.pn = node.dn = self._leaf_number(node.tried)
        self._update(node)

    # -- driving ------------------------------------------------------------------------
    def run(self, seconds: float | None = None) -> ProveResult:
        """Search until the root is solved (or its fixed first move refuted), ``seconds``
        have passed, :attr:`stop_requested` is set, or KeyboardInterrupt; the book is saved
        every ``interval`` seconds and at the end. A solve running in this process (one
        worker) is not interruptible by signals, so a stop request waits for it. The clock
        starts once the workers are connected (a Ray instance takes a while to start); a
        backend that cannot start raises before anything is changed, and a worker that
        fails raises :class:`~orderchaos.agents.solver_pool.SolverPoolError` after the book
        is saved."""
        cfg = self.config
        pool = make_pool(cfg)
        start = time.monotonic()
        deadline = INF if seconds is None else start + seconds
        next_save = start + cfg.interval
        next_progress = start + cfg.progress_every
        self.meta.runs += 1
        if self.first is not None:
            self.meta.first = self.first
        if self.first is not None and self.root.children is None and not self.root.solved:
            self._expand(self.root)  # a fixed first move: nothing to gain from solving the root
            self._update(self.root)
        inflight: dict[int, list[Node]] = {}
        interrupted = False
        last_wall = start
        try:
            while not self.root.solved and not self.refuted:
                now = time.monotonic()
                if now >= deadline or self.stop_requested:
                    interrupted = self.stop_requested
                    break
                while len(inflight) < cfg.workers:
                    path = self._select()
                    if path is None:
                        break
                    leaf = path[-1]
                    if leaf.tried >= cfg.cap:
                        self._expand(leaf)
                        self._update(leaf)
                        if self.root.solved or self.refuted:
                            break
                        continue
                    leaf.busy = True
                    inflight[leaf.key] = path
                    budget = cfg.first_budget if leaf.tried == 0 else leaf.tried * cfg.growth
                    pool.submit(solve_task, (leaf.key, leaf.state.x, leaf.state.o, budget))
                if not inflight:
                    break
                done = pool.wait(timeout=0.5)
                if done is not None:
                    result = done[1]
                    self._apply(result, inflight.pop(result[0]))
                now = time.monotonic()
                if now >= next_progress:
                    self._progress(now - start)
                    next_progress = now + cfg.progress_every
                if now >= next_save:
                    self.meta.wall_seconds += now - last_wall
                    last_wall = now
                    self.checkpoint()
                    next_save = time.monotonic() + cfg.interval
        except KeyboardInterrupt:
            interrupted = True
        finally:
            pool.close()
            self.meta.wall_seconds += time.monotonic() - last_wall
            self.checkpoint()
        elapsed = time.monotonic() - start
        self._progress(elapsed, final=True)
        winner = None if not self.root.solved or self.refuted else (ORDER if self.root.pn == 0 else CHAOS)
        return ProveResult(winner, self.refuted, elapsed, self.run_nodes, self.tasks_done, len(self.book), interrupted)

    def checkpoint(self) -> None:
        """Write the book and its side file (atomically) when a path was given."""
        if self.book_path is None:
            return
        for node in self.nodes.values():
            if node.tried and not node.solved:
                self.meta.tried[node.key] = node.tried
        self.book_path, error = write_with_fallback(self.book_path, self._save_to)
        if error is not None:
            self.save_error = self.save_error or error
            warnings.warn(
                f"cannot write the proof book ({error.strerror or error}); it is saved to "
                f"{self.book_path} (and its side file beside it) instead",
                stacklevel=2,
            )

    def _save_to(self, path: Path) -> None:
        self.book.save(path)
        self.meta.save(path)

    def counts(self) -> dict[str, Any]:
        """Node counts and the root's numbers (for progress lines)."""
        proven = disproven = open_ = leaves = 0
        for n in self.nodes.values():
            if n.pn == 0:
                proven += 1
            elif n.dn == 0:
                disproven += 1
            else:
                open_ += 1
                leaves += n.children is None
        return {
            "proven": proven,
            "disproven": disproven,
            "open": open_,
            "open_leaves": leaves,
            "root_pn": self.root.pn,
            "root_dn": self.root.dn,
        }

    def _replies(self) -> tuple[int, int] | None:
        """(proven, total) children of the root's most-proving child, when expanded."""
        kids = self.root.children
        if not kids:
            return None
        best = min(kids, key=lambda t: t[2] * t[0].pn)[0]
        if not best.children:
            return None
        return sum(c.pn == 0 for c, _, _ in best.children), len(best.children)

    def _progress(self, elapsed: float, final: bool = False) -> None:
        if self.log is None:
            return
        d = self.counts()
        rate = self.run_nodes / elapsed / self.config.workers if elapsed > 0 else 0.0
        d.update(
            elapsed=round(elapsed, 1),
            tasks=self.tasks_done,
            nodes_per_s_per_worker=round(rate),
            book=len(self.book),
            replies=self._replies(),
            final=final,
        )
        self.log(d)


# ---------------------------------------------------------------------------------------
# Verification.
# ---------------------------------------------------------------------------------------


def verify(
    book_path: str | os.PathLike[str],
    *,
    node_limit: int | None = None,
    tt_bits: int = 20,
    progress: Callable[[int, int], None] | None = None,
    leaf_rule: str = "extended",
) -> list[str]:
    """Check every book entry independently; returns failure descriptions (empty: all
    good). A book that cannot be loaded gives one failure naming the problem.

    Where the side to move wins, its stored move must lead to a position in which every
    reply of the opponent leads to a position won by the same side; where the side to
    move loses, every move must. Each such position counts as won when it is finished
    with that winner, when the book says so, or when a fresh solver (new tables for each
    entry) re-proves it; a re-proof that runs out of ``node_limit`` nodes is a failure.
    A position that ``leaf_rule`` (a key of :data:`LEAF_RULES`) covers counts as an Order win.
    """
    covers = LEAF_RULES[leaf_rule][0]
    try:
        book = ProofBook.load(book_path)
    except ProofBookError as e:
        return [str(e)]
    failures: list[str] = []
    entries = list(book.items())
    for i, (key, winner, move) in enumerate(entries):
        state = key_state(key)
        problem = _verify_entry(book, state, winner, move, Solver(tt_bits=tt_bits), node_limit, covers)
        if problem:
            failures.append(f"{state.to_string()} ({state.to_play} to move, book: {winner} wins): {problem}")
        if progress is not None:
            progress(i + 1, len(entries))
    return failures


def _verify_entry(
    book: ProofBook, state: State, winner: str, move: int | None, solver: Solver, node_limit: int | None,
    covers: Callable[[State], bool],
) -> str | None:
    if state.winner is not None:
        return "the game is already over here"
    if winner == state.to_play:
        if move is None:
            return "no winning move stored"
        if (state.x | state.o) >> (move >> 1) & 1:
            return f"stored move {action_name(move)} is on an occupied cell"
        after = state.apply(move)
        if after.winner is not None:
            return None if after.winner == winner else f"stored move {action_name(move)} ends the game lost"
        positions = [(f"{action_name(move)} then {action_name(r)}", after.apply(r)) for r in after.legal_actions()]
    else:
        if move is not None:
            return f"a move ({action_name(move)}) is stored for the losing side"
        positions = [(action_name(a), state.apply(a)) for a in state.legal_actions()]
    for label, pos in positions:
        if pos.winner is not None:
            if pos.winner != winner:
                return f"after {label} the game ends with {pos.winner} winning"
            continue
        if covers(pos):  # proven by the pairing argument, as the prover's leaf rule has it
            if winner != ORDER:
                return f"after {label} the pairing argument proves order wins"
            continue
        hit = book.lookup(pos)
        if hit is not None:
            if hit.winner != winner:
                return f"after {label} the book says {hit.winner} wins"
            continue
        r = solver.solve(pos, node_limit=node_limit)
        if r.winner is None:
            return f"after {label}: could not re-prove within {node_limit} nodes"
        if r.winner != winner:
            return f"after {label} a fresh solver finds {r.winner} wins"
    return None


# ---------------------------------------------------------------------------------------
# Command line.
# ---------------------------------------------------------------------------------------


def parse_action(text: str) -> int:
    """An action from ``28``, ``c3X`` or ``c3 X``."""
    t = text.strip()
    if t.isdigit():
        a = int(t)
        if not 0 <= a < ACTIONS:
            raise ValueError(f"action {a} is outside 0..{ACTIONS - 1}")
        return a
    t = t.replace(" ", "")
    if len(t) != 3 or t[2].upper() not in SYMBOLS:
        raise ValueError(f"bad move {text!r}: expected an action number or a cell and symbol like 'c3X'")
    return 2 * parse_cell(t[:2]) + SYMBOLS.index(t[2].upper())
