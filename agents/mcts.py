"""Monte Carlo tree search: UCT and PUCT with MCTS-Solver backups, after OpenSpiel's
``python/algorithms/mcts.py``, with the tree in compact arrays walked by the numba kernels
of :mod:`orderchaos.agents.mcts_kernels`.

* ``MCTS(evaluator, ...)`` searches one tree per root state. ``search_batch(states)`` grows
  many trees in lock-step: each wave selects one leaf in every unfinished tree and calls
  ``evaluator.evaluate(leaves)`` ONCE for the whole wave (what batched self-play needs).
  With a :class:`RolloutEvaluator` the whole simulation loop, random playouts included,
  runs compiled, tree by tree.
* Values: every node stores the sum of backed-up values from the view of the player who
  moved INTO it (the player to move at its parent), so a parent picks the child with the
  highest mean. The mover alternates strictly, so values are negated once per ply.
* MCTS-Solver: a child whose move ends the game is proven at creation (+1 when the mover
  wins: Order completing a five, Chaos filling the board; -1 when Chaos completes a five).
  A node with a child proven +1 is a proven win for its player to move; a node whose
  children are all proven -1 is a proven loss. Proven-losing children are never selected,
  and the search stops as soon as the root is proven.
* Child order is shuffled at expansion with the tree's own seeded random stream, so ties
  are broken at random but reproducibly.
* Proven leaves from the evaluator: an evaluator with ``evaluate_with_proofs`` (the
  :class:`orderchaos.agents.base.ProvingEvaluator` protocol, e.g. the solver at shallow
  leaves, :class:`orderchaos.agents.solver_assisted.SolverLeafEvaluator`) may settle a leaf
  exactly. Such a leaf is marked proven like a terminal child, is never expanded or
  selected again, and its result backs up as a proof. A root is never marked this way (its
  exact value is used, and it is expanded as usual, so that the search still has moves to
  choose from). Evaluators without that method take the unchanged default path.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from orderchaos.agents import cancel
from orderchaos.agents.base import Evaluator, SeedLike, make_rng
from orderchaos.agents.compiled_rules import legal_actions
from orderchaos.agents.mcts_kernels import (
    NODE_DTYPE,
    _expand_and_backup_many,
    _expand_and_backup_proven_many,
    _select_many,
    _simulate_with_rollouts,
)
from orderchaos.agents.rollout import (
    rollout_values,
    seed_stream,
    splitmix64,
)
from orderchaos.envs.encoding import bits_to_cells
from orderchaos.envs.rules import ACTIONS, State

UCT_C = 1.4
"""Default exploration constant of UCT (UCB1 ``q + c*sqrt(ln N / n)``, no priors): the
``mcts`` player's random-rollout search."""
PUCT_C = 1.5
"""Default exploration constant of PUCT (``q + c * prior * sqrt(N) / (1 + n)``): search
guided by network priors (the ``pretrained`` player, AlphaZero self-play)."""

_CHUNK = 256  # compiled simulations between two time-limit checks
_PROVEN_NAMES = {-1: "win", 1: "loss", 0: None}  # root's proven flag -> its mover's result


# ---------------------------------------------------------------------------------------
# Evaluators.
# ---------------------------------------------------------------------------------------


def uniform_legal_priors(states: Sequence[State]) -> np.ndarray:
    """``(B, 72)`` float32 priors, uniform over each state's legal actions."""
    occupied = np.fromiter((s.x | s.o for s in states), dtype=np.uint64, count=len(states))
    empty = 1 - bits_to_cells(occupied).astype(np.float32)
    per_action = np.repeat(empty, 2, axis=1)
    return per_action / np.maximum(per_action.sum(axis=1, keepdims=True), 1.0)


class RolloutEvaluator:
    """Uniform priors over legal actions; value = mean result of ``n_rollouts`` random
    playouts, from the view of the player to move (as OpenSpiel's RandomRolloutEvaluator).

    Inside :class:`MCTS` the playouts run in the compiled search loop and draw from each
    tree's own stream; ``seed`` drives direct calls to :meth:`evaluate`.
    """

    def __init__(self, n_rollouts: int = 1, seed: SeedLike = None) -> None:
        if isinstance(n_rollouts, bool) or not isinstance(n_rollouts, int) or n_rollouts < 1:
            raise ValueError(f"n_rollouts must be a positive int, got {n_rollouts!r}")
        self.n_rollouts = n_rollouts
        self._stream = seed_stream(seed)

    def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        """Uniform priors and random-playout values for non-terminal ``states``."""
        for s in states:
            if s.is_terminal:
                raise ValueError("RolloutEvaluator.evaluate needs non-terminal states")
        xs = np.fromiter((s.x for s in states), dtype=np.int64, count=len(states))
        os_ = np.fromiter((s.o for s in states), dtype=np.int64, count=len(states))
        values = rollout_values(xs, os_, self.n_rollouts, self._stream)
        return uniform_legal_priors(states), values


# ---------------------------------------------------------------------------------------
# Search results and the search driver.
# ---------------------------------------------------------------------------------------


@dataclass
class SearchResult:
    """What one search found at its root.

    ``visits``, ``q`` (mean value from the root mover's view, 0 when unvisited) and
    ``action_proven`` (+1 proven win, -1 proven loss for the root mover, 0 unknown) are
    72-long arrays indexed by action. ``value`` is the root value from the view of the
    player to move (exactly +/-1 when proven); ``proven`` is ``"win"``, ``"loss"`` or None.
    """

    state: State
    visits: np.ndarray
    q: np.ndarray
    action_proven: np.ndarray
    value: float
    proven: str | None
    best_action: int
    simulations: int
    out_of_memory: bool = False
    _legal: list[int] = field(default_factory=list, repr=False)

    def policy(self, temperature: float = 1.0) -> np.ndarray:
        """Move probabilities over 72 actions: visits ** (1 / temperature), normalised.

        ``temperature == 0`` gives a one-hot vector on :attr:`best_action`. A proven win
        puts all mass, uniformly, on the proven winning moves. With no visits at all, the
        mass is uniform over legal moves not proven to lose (over all legal if all lose).
        """
        if not temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        probs = np.zeros(ACTIONS, dtype=np.float64)
        if self.proven == "win":
            probs[self.action_proven == 1] = 1.0
        elif temperature == 0:
            probs[self.best_action] = 1.0
        elif self.visits.sum() > 0:
            probs = (self.visits / self.visits.max()) ** (1.0 / temperature)
        else:
            legal = np.array(self._legal)
            not_lost = legal[self.action_proven[legal] != -1]
            probs[not_lost if not_lost.size else legal] = 1.0
        return (probs / probs.sum()).astype(np.float32)


class _NodeStore:
    """Growable storage for the nodes of one or more trees."""

    def __init__(self, capacity: int, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self.nodes = np.zeros(min(max(capacity, ACTIONS + 1), max_nodes), dtype=NODE_DTYPE)
        self.size = np.zeros(1, dtype=np.int64)

    def reserve(self, extra: int) -> bool:
        """Grow (up to ``max_nodes``) so that ``extra`` more nodes fit; False if they can't."""
        need = int(self.size[0]) + extra
        if need <= len(self.nodes):
            return True
        if need > self.max_nodes:
            return False
        grown = np.zeros(min(max(need, 2 * len(self.nodes)), self.max_nodes), dtype=NODE_DTYPE)
        grown[: len(self.nodes)] = self.nodes
        self.nodes = grown
        return True

    def add_root(self) -> int:
        """Append an unexpanded root node and return its index."""
        if not self.reserve(1):
            raise MemoryError("the node limit leaves no room for a root")
        idx = int(self.size[0])
        self.nodes[idx] = (-1, -1, 0, 0.0, 1.0, 0, 0, 0)
        self.size[0] += 1
        return idx

    def children(self, node: int) -> np.ndarray:
        """The (contiguous) child records of ``node``; empty before expansion."""
        first = int(self.nodes[node]["first_child"])
        if first < 0:
            return self.nodes[:0]
        return self.nodes[first : first + int(self.nodes[node]["n_children"])]


def _parse_mode(use_priors: bool | str | None, evaluator: object) -> bool:
    if use_priors is None:
        return not isinstance(evaluator, RolloutEvaluator)
    if isinstance(use_priors, bool):
        return use_priors
    if use_priors in ("puct", "uct"):
        return use_priors == "puct"
    raise ValueError(
        f"use_priors must be True/'puct', False/'uct' or None (PUCT unless the evaluator is "
        f"a RolloutEvaluator), got {use_priors!r}"
    )


def check_evaluator(evaluator: object) -> None:
    """Refuse an ``evaluator`` without ``evaluate(states)`` (the searches' first argument)."""
    if not callable(getattr(evaluator, "evaluate", None)):
        raise TypeError(
            f"evaluator must have evaluate(states) -> (priors, values), got {type(evaluator).__name__}"
        )


def check_positive(name: str, value: object, kind: type, allow_none: bool = False) -> None:
    """Refuse a ``value`` that is not a positive ``kind`` (int, or float which also takes
    ints; ``None`` too when ``allow_none``), naming ``name`` and what is accepted."""
    if value is None and allow_none:
        return
    ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    if not ok or not value > 0:  # type: ignore[operator]
        accepted = f"a positive {kind.__name__}" + (" or None" if allow_none else "")
        raise ValueError(f"{name} must be {accepted}, got {value!r}")


def check_search_states(states: Sequence[State]) -> list[State]:
    """``states`` as a list; refuse (naming its index) one that is not a State or is a
    finished game, where there is nothing to search."""
    states = list(states)
    for i, s in enumerate(states):
        if not isinstance(s, State):
            raise TypeError(f"states[{i}] must be an orderchaos.envs.rules.State, got {type(s).__name__}")
        if s.is_terminal:
            raise ValueError(f"states[{i}] is terminal ({s.winner} won); there is nothing to search")
    return states


class MCTS:
    """UCT / PUCT tree search with MCTS-Solver backups (see the module docstring).

    Args:
        evaluator: gives priors and values for leaf batches (``orderchaos.agents.base.Evaluator``);
            one that also proves leaves (``orderchaos.agents.base.ProvingEvaluator``) has
            its proofs marked in the tree (see the module docstring).
        simulations: simulations per search (the root expansion counts as the first one);
            None means unbounded, so ``time_limit`` must be given.
        c: exploration constant: UCB1 ``q + c*sqrt(ln N / n)`` or PUCT
            ``q + c * prior * sqrt(N) / (1 + n)``; None means :data:`UCT_C` for UCT and
            :data:`PUCT_C` for PUCT.
        use_priors: True / ``"puct"`` or False / ``"uct"``; None picks UCT for a
            :class:`RolloutEvaluator` and PUCT otherwise.
        dirichlet_alpha, dirichlet_fraction: root noise ``(1-f)*prior + f*Dir(alpha)``,
            applied when a search is called with ``add_noise=True``.
        time_limit: seconds per search call (shared by the trees of a batch); the search
            stops at whichever of ``simulations`` and ``time_limit`` comes first.
        seed: int or numpy Generator; each tree draws its own seed from it in order.
        max_nodes: node storage cap (about 27 bytes each); a search that fills it stops
            early and flags ``out_of_memory``.
    """

    def __init__(
        self,
        evaluator: Evaluator,
        simulations: int | None = 800,
        c: float | None = None,
        use_priors: bool | str | None = None,
        dirichlet_alpha: float | None = None,
        dirichlet_fraction: float = 0.25,
        time_limit: float | None = None,
        seed: SeedLike = None,
        max_nodes: int = 4_000_000,
    ) -> None:
        check_evaluator(evaluator)
        check_positive("simulations", simulations, int, allow_none=True)
        check_positive("time_limit", time_limit, float, allow_none=True)
        if simulations is None and time_limit is None:
            raise ValueError("give a simulations budget, a time_limit, or both")
        check_positive("c", c, float, allow_none=True)
        check_positive("dirichlet_alpha", dirichlet_alpha, float, allow_none=True)
        if not 0.0 <= dirichlet_fraction <= 1.0:
            raise ValueError(f"dirichlet_fraction must be in [0, 1], got {dirichlet_fraction!r}")
        check_positive("max_nodes", max_nodes, int, allow_none=False)
        self.evaluator = evaluator
        self.simulations = simulations
        self.use_priors = _parse_mode(use_priors, evaluator)
        self.c = float(c if c is not None else PUCT_C if self.use_priors else UCT_C)
        self.dirichlet_alpha = dirichlet_alpha
        self.dirichlet_fraction = float(dirichlet_fraction)
        self.time_limit = time_limit
        self.max_nodes = int(max_nodes)
        self._rng = make_rng(seed)

    def search(self, state: State, simulations: int | None = None, add_noise: bool = False) -> SearchResult:
        """Search one position; the same as ``search_batch([state], ...)[0]``."""
        return self.search_batch([state], simulations=simulations, add_noise=add_noise)[0]

    def search_batch(
        self, states: Sequence[State], simulations: int | None = None, add_noise: bool = False
    ) -> list[SearchResult]:
        """Search every state in its own tree; leaves of all trees are evaluated together.

        ``simulations`` overrides the per-tree budget for this call. ``add_noise`` mixes
        Dirichlet noise into each root's priors (needs ``dirichlet_alpha``).
        """
        states = check_search_states(states)
        check_positive("simulations", simulations, int, allow_none=True)
        if add_noise and self.dirichlet_alpha is None:
            raise ValueError("add_noise=True needs MCTS(..., dirichlet_alpha=...) to be set")
        if not states:
            return []
        budget = simulations or self.simulations or np.iinfo(np.int32).max
        seeds = self._rng.integers(1, 2**63, size=len(states))
        store = _NodeStore(min(len(states) * (budget + 1) * ACTIONS, 1 << 20), self.max_nodes)
        roots = np.array([store.add_root() for _ in states], dtype=np.int64)
        streams = np.array([[splitmix64(np.uint64(s))] for s in seeds], dtype=np.uint64)
        noise_rngs = [np.random.default_rng(int(s)) if add_noise else None for s in seeds]
        _load_kernels()  # so that compiling or loading them never eats into time_limit
        start = time.perf_counter()
        if isinstance(self.evaluator, RolloutEvaluator):
            done = self._run_compiled(store, roots, states, streams, noise_rngs, budget, start)
        else:
            done = self._run_waves(store, roots, states, streams, noise_rngs, budget, start)
        return [
            self._result(store, int(root), state, int(n), budget)
            for root, state, n in zip(roots, states, done)
        ]

    # -- drivers -----------------------------------------------------------------------
    def _deadline(self, start: float, share: float) -> float:
        return math.inf if self.time_limit is None else start + self.time_limit * share

    def _run_compiled(self, store, roots, states, streams, noise_rngs, budget, start) -> np.ndarray:
        """Rollout evaluator: each tree runs the compiled loop in chunks until done."""
        assert isinstance(self.evaluator, RolloutEvaluator)
        done = np.zeros(len(states), dtype=np.int64)
        for t, (root, state) in enumerate(zip(roots, states)):
            deadline = self._deadline(start, (t + 1) / len(states))
            while done[t] < budget and time.perf_counter() < deadline:
                cancel.check()
                chunk = 1 if done[t] == 0 else int(min(budget - done[t], _CHUNK))
                store.reserve(chunk * ACTIONS)
                ran = _simulate_with_rollouts(
                    store.nodes, store.size, root, np.int64(state.x), np.int64(state.o), chunk,
                    self.c, self.use_priors, self.evaluator.n_rollouts, streams[t],
                )
                if done[t] == 0 and noise_rngs[t] is not None:
                    self._add_noise(store, int(root), noise_rngs[t])
                done[t] += ran
                if ran < chunk:  # the root is proven, or the node limit is reached
                    break
        return done

    def _run_waves(self, store, roots, states, streams, noise_rngs, budget, start) -> np.ndarray:
        """Any evaluator: lock-step waves, one leaf per unfinished tree, one evaluate call."""
        xs = np.array([s.x for s in states], dtype=np.int64)
        os_ = np.array([s.o for s in states], dtype=np.int64)
        done = np.zeros(len(states), dtype=np.int64)
        deadline = self._deadline(start, 1.0)
        first_wave = True
        while time.perf_counter() < deadline:
            cancel.check()
            active = np.flatnonzero((done < budget) & (store.nodes["proven"][roots] == 0))
            if active.size == 0 or not store.reserve(active.size * ACTIONS):
                break
            leaves, lxs, los = _select_many(store.nodes, roots[active], xs[active], os_[active], self.c, self.use_priors)
            self._evaluate_and_backup(store, active, leaves, lxs, los, streams)
            if first_wave:
                for t in active:
                    if noise_rngs[t] is not None:
                        self._add_noise(store, int(roots[t]), noise_rngs[t])
                first_wave = False
            done[active] += 1
        return done

    def _evaluate_and_backup(self, store: _NodeStore, tree_ids, leaves, lxs, los, streams) -> np.ndarray:
        """Evaluate the selected leaves (one per tree in ``tree_ids``) in one batch, expand
        them and back their values up, marking the evaluator's proofs when it gives any;
        returns the values (each leaf mover's view)."""
        priors, values, proven = self._evaluate([State(int(x), int(o)) for x, o in zip(lxs, los)])
        if proven is None:
            _expand_and_backup_many(store.nodes, store.size, tree_ids, leaves, lxs, los, priors, values, streams)
        else:
            _expand_and_backup_proven_many(
                store.nodes, store.size, tree_ids, leaves, lxs, los, priors, values, proven, streams
            )
        return values

    def _evaluate(self, states: list[State]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Priors, values and, from a proving evaluator, proven flags (else None)."""
        prove = getattr(self.evaluator, "evaluate_with_proofs", None)
        proven = None
        if prove is not None:
            priors, values, flags = prove(states)
            flags = np.asarray(flags).reshape(-1)
            if flags.shape != (len(states),) or not np.isin(flags, (-1, 0, 1)).all():
                raise ValueError(
                    f"evaluator returned proven flags of shape {flags.shape} for "
                    f"{len(states)} states; expected ({len(states)},) with values in -1, 0, 1"
                )
            proven = np.ascontiguousarray(flags, dtype=np.int8)
        else:
            priors, values = self.evaluator.evaluate(states)
        priors = np.ascontiguousarray(priors, dtype=np.float32)
        values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
        if priors.shape != (len(states), ACTIONS) or values.shape != (len(states),):
            raise ValueError(
                f"evaluator returned priors {priors.shape} and values {values.shape} for "
                f"{len(states)} states; expected ({len(states)}, {ACTIONS}) and ({len(states)},)"
            )
        return priors, values, proven

    def _add_noise(self, store: _NodeStore, root: int, rng: np.random.Generator) -> None:
        children = store.children(root)
        if len(children):
            noise = rng.dirichlet(np.full(len(children), self.dirichlet_alpha))
            f = self.dirichlet_fraction
            children["prior"] = (1 - f) * children["prior"] + f * noise

    @staticmethod
    def _result(store: _NodeStore, root: int, state: State, simulations: int, budget: int) -> SearchResult:
        node = store.nodes[root]
        children = store.children(root)
        actions = children["action"].astype(np.int64)
        visits = np.zeros(ACTIONS, dtype=np.float32)
        visits[actions] = children["visits"]
        q = np.zeros(ACTIONS, dtype=np.float32)
        seen = children["visits"] > 0
        q[actions[seen]] = children["wsum"][seen] / children["visits"][seen]
        action_proven = np.zeros(ACTIONS, dtype=np.int8)
        action_proven[actions] = children["proven"]
        proven = _PROVEN_NAMES[int(node["proven"])]
        if proven is not None:
            value = 1.0 if proven == "win" else -1.0
        else:
            value = float(-node["wsum"] / max(int(node["visits"]), 1))
        # The best child by (proven, visits, q); children are in shuffled order, so the first
        # best is a seeded random tie-break (lexsort: last key first, -index keeps the first).
        order = np.lexsort((-np.arange(len(actions)), q[actions], children["visits"], children["proven"]))
        best_action = int(actions[order[-1]])
        out_of_memory = simulations < budget and proven is None and len(store.nodes) >= store.max_nodes
        legal = np.empty(ACTIONS, dtype=np.int64)  # the searched state is never terminal
        n_legal = legal_actions(state.x | state.o, legal)
        return SearchResult(
            state, visits, q, action_proven, value, proven, best_action, simulations,
            out_of_memory, legal[:n_legal].tolist(),
        )


_KERNELS_LOADED = False


def _load_kernels() -> None:
    """Run every search kernel once on a throwaway tree (first call in a process only)."""
    global _KERNELS_LOADED
    if _KERNELS_LOADED:
        return
    store = _NodeStore(4 * ACTIONS, 4 * ACTIONS)
    roots = np.array([store.add_root()], dtype=np.int64)
    stream = seed_stream(0)
    zero = np.zeros(1, dtype=np.int64)
    _simulate_with_rollouts(store.nodes, store.size, 0, zero[0], zero[0], 1, 1.0, False, 1, stream)
    leaves, xs, os_ = _select_many(store.nodes, roots, zero, zero, 1.0, True)
    priors = np.zeros((1, ACTIONS), dtype=np.float32)
    _expand_and_backup_many(
        store.nodes, store.size, zero, leaves, xs, os_, priors, np.zeros(1), stream[None, :]
    )
    leaves, xs, os_ = _select_many(store.nodes, roots, zero, zero, 1.0, True)
    _expand_and_backup_proven_many(
        store.nodes, store.size, zero, leaves, xs, os_, priors, np.zeros(1),
        np.zeros(1, dtype=np.int8), stream[None, :],
    )
    _KERNELS_LOADED = True


class MCTSAgent:
    """The registry's ``mcts`` player: UCT with one random playout per leaf and
    MCTS-Solver backups. Plays the most visited move, or a proven win at once.

    ``time`` (seconds per move), when given, replaces the ``sims`` budget. Every expansion
    stores all children, so a search holds about 65 nodes per simulation and stops at the
    ``MCTS`` node cap (4M nodes, ~110 MB, about 60k simulations) even if time remains.
    """

    name = "mcts"

    def __init__(self, sims: int = 1000, c: float = UCT_C, seed: SeedLike = None, time: float | None = None) -> None:
        check_positive("sims", sims, int, allow_none=False)
        self.mcts = MCTS(
            RolloutEvaluator(1),
            simulations=None if time is not None else sims,
            c=c,
            use_priors=False,
            time_limit=time,
            seed=seed,
        )

    def search(self, state: State) -> SearchResult:
        """The full search result for ``state``."""
        return self.mcts.search(state)

    def policy(self, state: State) -> np.ndarray:
        """Visit-count probabilities (temperature 1) from a fresh search."""
        return self.search(state).policy(1.0)

    def act(self, state: State) -> int:
        """The most visited action (a proven win when there is one)."""
        return self.search(state).best_action
