"""The exact solver inside a network player: proofs where they are cheap, the network elsewhere.

A network player built with ``solver=D`` (``pretrained:sims=200,solver=26``, see
:class:`orderchaos.agents.network_agent.NeuralAgent`) gets a :class:`SolverAssist`, which adds
two things to its play:

* **At the root** (:meth:`SolverAssist.root`): an Order position that the central-pairing
  strategy covers (:mod:`orderchaos.agents.strategy`: every position of Order's games from
  the empty board when it follows the strategy) is answered with the strategy's move, so
  as Order the player never loses. A position in the proof book (by default the
  one shipped with the package, :func:`orderchaos.agents.proof_book.shipped_book`) that the
  mover wins is answered with the book's stored move, without search. A root with at most
  ``root_depth`` empty cells (by default ``D + ROOT_EXTRA_DEPTH``: one solve per move can
  afford to go deeper than thousands of leaf solves) is solved exactly, under ``root_nodes``
  nodes; when the mover wins, the player plays a proven winning move: the first of its
  moves, in the order the network likes them, that the solver proves keeps the win. A root proven lost is left to the
  search without the solver (the opponent may still go wrong, and the network knows better
  than "every move loses" which moves give it the most chances to). When the root solve
  does not settle an Order root, the player seeks a proven win among the network's
  :data:`SEEK_CANDIDATES` likeliest moves, under ``seek_nodes`` nodes, and plays the first
  it proves; only when none is proven does the search choose. **Chaos checks the search's
  move** (:meth:`SolverAssist.avoid_lost`) at an unsettled root with up to ``root_depth +``
  :data:`AVOID_EXTRA_DEPTH` empty cells: when the solver proves it lost, Chaos plays the
  next move, in the search's order, that the solver does not prove lost; a second pass,
  with five times the nodes a move, checks that choice again the same way.
* **Inside the search** (:class:`SolverLeafEvaluator`): every leaf with at most ``D`` empty
  cells is first handed to the solver under a small node limit, ``leaf_nodes``. A proven
  leaf gets its exact value, +1 or -1, and is marked proven in the tree (MCTS-Solver, see
  :mod:`orderchaos.agents.mcts`), so its result backs up as a proof and the search never
  enters it again; a leaf the solver does not settle in time gets the network's value.

Both use one :class:`orderchaos.agents.solver.Solver`, whose transposition table is shared by
the root and the leaves and kept across the player's moves (a proof found at a leaf on one
move is a table hit on the next).

The node limits keep the cost of a move bounded: the root solve and the search for a
proven winning move share ``root_nodes``; seeking one after an unsettled solve gets
``seek_nodes``; Chaos's check of its move gets ``avoid_nodes`` (0.8 to 1.2 s for each of the
five checks timed in two games against ``heuristic``, another match on the other core) and
``recheck_nodes`` for its second pass (over 36 Chaos moves at 31 to 33 empty cells, each by a
fresh player on the otherwise idle machine, 1.90 s a move on average with both passes against
0.52 s with the first alone); each leaf gets ``leaf_nodes``. On the 2-core
machine the solver does roughly 0.2 to 0.4 million nodes per second (less when the machine
is loaded), so the defaults cost at most a few seconds at the root, about twice that when
an unsettled Order root also seeks (10.4 s for the move in the position of
``tests/agents/test_solver_assisted.py``'s ``SEEK_ROOT``), and about 10 ms per leaf; most
proofs at 26 empty cells or fewer take a few hundred nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from orderchaos.agents.base import Evaluator
from orderchaos.agents.mcts import uniform_legal_priors
from orderchaos.agents import strategy
from orderchaos.agents.proof_book import ProofBook, shipped_book
from orderchaos.agents.solver import Solver
from orderchaos.envs.rules import ACTIONS, CELLS, ORDER, State

ROOT_NODE_LIMIT = 2_000_000
"""Default node budget at the root: the exact solve plus the search for a winning move."""
ROOT_EXTRA_DEPTH = 4
"""By default the root is solved at up to ``D + 4`` empty cells (leaves at up to ``D``). In
games of the strongest player, at 28 empty cells the median proof takes a few hundred
nodes, at 30 some 30 thousand (90% within 0.5M), at 32 only about half finish within 3M."""
FIRST_CHILD_NODES = 1_000
"""Nodes for each child in the first pass of the search for a proven winning root move."""
SEEK_NODE_LIMIT = 2_000_000
"""Default node budget, after a root solve that did not settle, for proving one of Order's
:data:`SEEK_CANDIDATES` likeliest moves a win."""
SEEK_CANDIDATES = 8
"""How many of the network's likeliest moves that seeking a proven win tries."""
LEAF_NODE_LIMIT = 3_000
"""Default node budget for each leaf of the search handed to the solver."""
AVOID_EXTRA_DEPTH = 3
"""Chaos checks the move it is about to play at roots with up to ``root_depth + 3`` empty
cells (33 with ``solver=26``): at 31 empty cells, in games Chaos lost to ``heuristic``, the
move it played was usually proven lost in 200,000 nodes while others were not."""
AVOID_CHILD_NODES = 200_000
"""Nodes for proving each checked Chaos move lost."""
AVOID_NODE_LIMIT = 4_000_000
"""Default node budget for one Chaos move's check (0: no check)."""
RECHECK_CHILD_NODES = 1_000_000
"""Nodes for proving a move lost in the check's second pass."""
RECHECK_NODE_LIMIT = 8_000_000
"""Default node budget for the check's second pass (0: one pass only)."""

STRATEGY, BOOK, SOLVER, LOST, OPEN = "strategy", "book", "solver", "lost", "open"
"""What :meth:`SolverAssist.root` found: the central-pairing strategy's move, a book move, a
proven winning move, a root proven lost for the mover, or nothing settled (a deep root, or a
limit hit)."""


def check_depth(depth: object) -> int:
    """``depth`` as an int in 0..36 (0: no solver); ValueError otherwise."""
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or not 0 <= depth <= CELLS:
        raise ValueError(f"solver depth must be an int from 0 (off) to {CELLS} empty cells, got {depth!r}")
    return int(depth)


def _check_nodes(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _check_budget(name: str, value: object, zero_means: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be an int >= 0 (0: {zero_means}), got {value!r}")
    return int(value)


class SolverLeafEvaluator:
    """An evaluator (``orderchaos.agents.base.ProvingEvaluator``) that asks the solver first.

    Each state with at most ``depth`` empty cells is solved under ``node_limit`` nodes; the
    others, and those the solver does not settle, are evaluated by ``inner`` (one batched
    call for all of them). Proven states get their exact value and, as the network is not
    asked about them, uniform priors over their legal moves (MCTS never expands a proven
    leaf, except a root, which then starts from uniform priors).

    Counters: ``tried`` (states handed to the solver), ``proven`` (of them, settled),
    ``nodes`` (solver nodes spent).
    """

    def __init__(
        self,
        inner: Evaluator,
        depth: int,
        node_limit: int = LEAF_NODE_LIMIT,
        solver: Solver | None = None,
    ) -> None:
        if not callable(getattr(inner, "evaluate", None)):
            raise TypeError(f"inner must have evaluate(states), got {type(inner).__name__}")
        self.inner = inner
        self.depth = check_depth(depth)
        self.node_limit = _check_nodes("node_limit", node_limit)
        self.solver = solver if solver is not None else Solver()
        self.tried = 0
        self.proven = 0
        self.nodes = 0

    def prove(self, states: Sequence[State]) -> np.ndarray:
        """int8 ``(B,)``: +1 / -1 where the mover provably wins / loses, 0 where the state is
        deeper than ``depth`` or the solver hit its node limit."""
        out = np.zeros(len(states), dtype=np.int8)
        for i, state in enumerate(states):
            if state.num_empty > self.depth:
                continue
            result = self.solver.solve(state, node_limit=self.node_limit)
            self.tried += 1
            self.nodes += result.nodes
            if result.winner is not None:
                self.proven += 1
                out[i] = 1 if result.winner == state.to_play else -1
        return out

    def evaluate_with_proofs(
        self, states: Sequence[State]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Priors ``(B, 72)``, values ``(B,)`` (exact where proven) and proven flags ``(B,)``."""
        states = list(states)
        proven = self.prove(states)
        priors = np.zeros((len(states), ACTIONS), dtype=np.float32)
        values = proven.astype(np.float32)
        settled = np.flatnonzero(proven != 0)
        if settled.size:
            priors[settled] = uniform_legal_priors([states[i] for i in settled])
        open_rows = np.flatnonzero(proven == 0)
        if open_rows.size:
            p, v = self.inner.evaluate([states[i] for i in open_rows])
            priors[open_rows] = p
            values[open_rows] = np.asarray(v, dtype=np.float32).reshape(-1)
        return priors, values, proven

    def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        """Priors and values, exact where proven (the plain ``Evaluator`` interface)."""
        priors, values, _ = self.evaluate_with_proofs(states)
        return priors, values


@dataclass(frozen=True)
class RootAnswer:
    """What the strategy, the book and the solver say at a root: ``source`` is one of
    :data:`STRATEGY`, :data:`BOOK`, :data:`SOLVER` (each with a winning ``move``),
    :data:`LOST` or :data:`OPEN` (no move)."""

    source: str
    move: int | None = None


class SolverAssist:
    """The ``solver=D`` part of a network player (see the module docstring): the proof book
    and the exact solver at the root, and :meth:`leaf_evaluator` for the search, all on one
    :class:`Solver` (``solver``, by default a new one with the default table size).

    ``book``: the proof book consulted at the root (default: the shipped one).
    ``root_depth``: the most empty cells at which the root is solved (default
    ``depth + ROOT_EXTRA_DEPTH``, at most 36).
    ``root_nodes``: node budget at the root; ``leaf_nodes``: node budget per search leaf.
    ``seek_nodes``: node budget for seeking a proven winning move for Order when the root
    solve does not settle (0: no seeking).
    ``avoid_nodes``: node budget for :meth:`avoid_lost`, Chaos's check of the move it is
    about to play (0: no check); ``recheck_nodes``: node budget for its second pass, with
    more nodes a move (0: one pass only).
    ``use_strategy``: answer Order roots the central-pairing strategy covers with its move
    (default; False leaves every root to the book and the solver).
    """

    def __init__(
        self,
        depth: int,
        *,
        book: ProofBook | None = None,
        solver: Solver | None = None,
        root_depth: int | None = None,
        root_nodes: int = ROOT_NODE_LIMIT,
        leaf_nodes: int = LEAF_NODE_LIMIT,
        seek_nodes: int = SEEK_NODE_LIMIT,
        avoid_nodes: int = AVOID_NODE_LIMIT,
        recheck_nodes: int = RECHECK_NODE_LIMIT,
        use_strategy: bool = True,
    ) -> None:
        self.depth = check_depth(depth)
        if self.depth == 0:
            raise ValueError("SolverAssist needs a depth of at least 1 empty cell (0 means no solver)")
        self.root_depth = check_depth(
            min(CELLS, self.depth + ROOT_EXTRA_DEPTH) if root_depth is None else root_depth
        )
        self.root_nodes = _check_nodes("root_nodes", root_nodes)
        self.leaf_nodes = _check_nodes("leaf_nodes", leaf_nodes)
        self.seek_nodes = _check_budget("seek_nodes", seek_nodes, "no seeking")
        self.avoid_nodes = _check_budget("avoid_nodes", avoid_nodes, "no check")
        self.recheck_nodes = _check_budget("recheck_nodes", recheck_nodes, "one pass only")
        self.book = book if book is not None else shipped_book()
        self.solver = solver if solver is not None else Solver()
        self.use_strategy = use_strategy

    def leaf_evaluator(self, inner: Evaluator) -> SolverLeafEvaluator:
        """``inner`` wrapped so that leaves within the depth are tried by the solver first."""
        return SolverLeafEvaluator(inner, self.depth, self.leaf_nodes, self.solver)

    def root(self, state: State, ranked: Callable[[], Sequence[int]]) -> RootAnswer:
        """The strategy's, the book's or the solver's answer at ``state`` (not terminal): an
        Order root covered by the central-pairing strategy (:mod:`orderchaos.agents.strategy`)
        gets the strategy's move at once.

        ``ranked()`` gives the mover's legal moves in the order the player prefers them; it
        is called only when the solver proves the mover wins, and the first of those moves
        proven to keep the win is the answer (each child is first tried with a few nodes,
        then those still open with ten times as many, and so on), or when the solve leaves
        an Order root unsettled and ``seek_nodes`` is not 0: then the first of its
        :data:`SEEK_CANDIDATES` moves proven won, if any, is the answer. The answer is
        :data:`OPEN` when the root is deeper than ``root_depth``, or when the budgets run out
        before a proof (or before a winning move is proven: the search, whose leaves the
        solver settles, takes over).
        """
        if self.use_strategy and state.to_play == ORDER and strategy.covers(state):
            return RootAnswer(STRATEGY, strategy.move(state))
        entry = self.book.lookup(state)
        if entry is not None and entry.winner == state.to_play and entry.move is not None:
            return RootAnswer(BOOK, int(entry.move))
        if state.num_empty > self.root_depth:
            return RootAnswer(OPEN)
        mover = state.to_play
        result = self.solver.solve(state, node_limit=self.root_nodes)
        if result.winner is None:
            if mover != ORDER or not self.seek_nodes:
                return RootAnswer(OPEN)
            # The whole-tree solve spends its budget in the order its own heuristics try
            # the moves, and can run out deep inside a hard one while a move the network
            # likes is a cheap proof (e.g. 0.1M nodes for a child where the root's 20M-node
            # solve was needed). Only Order seeks: a child proven won for Chaos needs every
            # way of filling the board refuted, out of reach at the root's depth.
            move = self._first_winning_child(state, list(ranked())[:SEEK_CANDIDATES], self.seek_nodes, 4)
            return RootAnswer(OPEN) if move is None else RootAnswer(SOLVER, move)
        if result.winner != mover:
            return RootAnswer(LOST)
        # The proof just found usually left a winning child in the table, but refuting a
        # losing child can cost far more than the proof did; so try every child cheaply
        # first, then again with ten times the nodes, and so on.
        move = self._first_winning_child(state, list(ranked()), self.root_nodes - result.nodes, 10)
        return RootAnswer(OPEN) if move is None else RootAnswer(SOLVER, move)

    def avoid_lost(self, state: State, move: int, others: Callable[[], Sequence[int]]) -> int | None:
        """Chaos's check, at a root the solver has not settled, of the ``move`` it is about
        to play: None to keep it, or another move, when the solver proves ``move`` lost.

        The check runs in two passes over ``move`` and then ``others()`` (the other legal
        moves, in the player's order). The first gives each move :data:`AVOID_CHILD_NODES`
        nodes, out of ``avoid_nodes``, and picks the first one the solver does not prove
        lost. The second (when ``recheck_nodes`` is not 0) walks the same order again with
        :data:`RECHECK_CHILD_NODES` nodes a move, out of ``recheck_nodes``, and its pick
        replaces the first's; moves refuted in the first pass are table hits there. A pass
        stops when fewer nodes than a move gets are left; one that finds no move keeps the
        pick before it (``move`` when the first finds none). It does not apply (None) to
        Order, to a root deeper than ``root_depth + AVOID_EXTRA_DEPTH`` or with
        ``avoid_nodes`` 0; ``others`` is called only when a pass proves ``move`` lost.

        A move that is not proven lost may still lose, but against a perfect opponent a
        proven loss certainly does, and a loss the solver cannot prove cheaply is one the
        opponent can miss. Only Chaos checks: proving an Order move lost needs every Chaos
        reply refuted, while an Order win needs one winning line, so the check is cheap
        for Chaos and seldom settles anything for Order.
        """
        if state.to_play == ORDER or state.num_empty > self.root_depth + AVOID_EXTRA_DEPTH:
            return None
        rest: list[int] | None = None

        def in_order() -> Iterator[int]:
            nonlocal rest
            yield move
            if rest is None:
                rest = [int(a) for a in others() if a != move]
            yield from rest

        chosen = move
        for child_nodes, budget in ((AVOID_CHILD_NODES, self.avoid_nodes), (RECHECK_CHILD_NODES, self.recheck_nodes)):
            if not budget:
                break
            pick = self._first_not_proven_lost(state, in_order(), child_nodes, budget)
            if pick is None:
                break
            chosen = pick
        return None if chosen == move else chosen

    def _first_not_proven_lost(self, state: State, moves: Iterable[int], child_nodes: int, budget: int) -> int | None:
        """The first of ``moves`` that the solver does not prove lost for Chaos with
        ``child_nodes`` nodes, or None when every move tried is, or when fewer than
        ``child_nodes`` of ``budget`` are left (every move tried gets the same chance)."""
        for action in moves:
            if budget < child_nodes:
                return None
            child = self.solver.solve(state.apply(action), node_limit=child_nodes)
            budget -= child.nodes
            if child.winner != ORDER:
                return int(action)
        return None

    def _first_winning_child(self, state: State, candidates: list[int], budget: int, growth: int) -> int | None:
        """The first of ``candidates`` proven to keep the mover's win, or None when
        ``budget`` nodes run out first: each is tried with :data:`FIRST_CHILD_NODES` nodes,
        then those still unsettled with ``growth`` times as many, and so on."""
        mover, limit = state.to_play, FIRST_CHILD_NODES
        while candidates and budget > 0:
            unsettled = []
            for action in candidates:
                if budget <= 0:
                    break
                child = self.solver.solve(state.apply(action), node_limit=min(limit, budget))
                budget -= child.nodes
                if child.winner == mover:
                    return int(action)
                if child.winner is None:
                    unsettled.append(action)
            candidates, limit = unsettled, growth * limit
        return None


__all__ = [
    "AVOID_CHILD_NODES",
    "AVOID_EXTRA_DEPTH",
    "AVOID_NODE_LIMIT",
    "BOOK",
    "FIRST_CHILD_NODES",
    "LEAF_NODE_LIMIT",
    "LOST",
    "OPEN",
    "RECHECK_CHILD_NODES",
    "RECHECK_NODE_LIMIT",
    "ROOT_EXTRA_DEPTH",
    "ROOT_NODE_LIMIT",
    "SEEK_CANDIDATES",
    "SEEK_NODE_LIMIT",
    "SOLVER",
    "RootAnswer",
    "SolverAssist",
    "SolverLeafEvaluator",
    "check_depth",
]
