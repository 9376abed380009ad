"""Gumbel AlphaZero root search: Gumbel-Top-k sampling of the root moves, sequential
halving over the simulation budget, and completed-Q policy targets (Danihelka et al. 2022,
"Policy improvement by planning with Gumbel"; mctx ``gumbel_muzero_policy``).

Below the root the tree is the PUCT tree of :mod:`orderchaos.agents.mcts` (the same node
arrays, compiled kernels and MCTS-Solver proofs); only the root's choice of which child
to visit next follows the sequential-halving schedule of mctx
(``get_sequence_of_considered_visits``): with ``m`` moves considered and ``n`` simulations,
each simulation visits, among the considered children that have the scheduled visit count,
the one with the highest ``g + logit + sigma(q)``. With few simulations this gives a policy
target that improves on the prior (:attr:`GumbelResult.improved_policy`, the softmax of
``logit + sigma(completed q)``) where visit counts would only echo it.

With ``add_noise=True`` the root's ``g`` are Gumbel(0, 1) draws from the tree's own seeded
stream, and :attr:`SearchResult.best_action` is a sample of the improved policy: the
exploration of self-play. Without noise ``g = 0`` and the search is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from orderchaos.agents.base import Evaluator, SeedLike, make_rng
from orderchaos.agents.evaluation_cache import CachedEvaluator
from orderchaos.agents.mcts import (
    MCTS,
    PUCT_C,
    SearchResult,
    _NodeStore,
    _load_kernels,
    check_evaluator,
    check_positive,
    check_search_states,
)
from orderchaos.agents.mcts_kernels import _select_many
from orderchaos.agents.rollout import splitmix64
from orderchaos.envs.rules import ACTIONS, State

C_VISIT = 50.0
"""sigma(q) = (C_VISIT + max visits) * C_SCALE * q: mctx's ``maxvisit_init``."""
C_SCALE = 0.1
"""mctx's ``value_scale``: how far the completed values move the policy away from the prior."""


def considered_visit_sequence(max_considered: int, simulations: int) -> list[int]:
    """For each simulation after the root's expansion, the visit count a root child must
    have to be visited next (mctx ``get_sequence_of_considered_visits``): sequential
    halving in ``ceil(log2(max_considered))`` phases, each spending about the same share
    of the budget on the children still considered."""
    if max_considered <= 1:
        return list(range(simulations))
    log2max = math.ceil(math.log2(max_considered))
    sequence: list[int] = []
    visits = [0] * max_considered
    considered = max_considered
    while len(sequence) < simulations:
        extra = max(1, simulations // (log2max * considered))
        for _ in range(extra):
            sequence.extend(visits[:considered])
            for i in range(considered):
                visits[i] += 1
        considered = max(2, considered // 2)
    return sequence[:simulations]


@dataclass
class GumbelResult(SearchResult):
    """A :class:`SearchResult` with the completed-Q improved policy of the root."""

    improved_policy: np.ndarray = field(default_factory=lambda: np.zeros(ACTIONS, np.float32))

    def policy(self, temperature: float = 1.0) -> np.ndarray:
        """The improved policy ``softmax(logit + sigma(completed q))`` (a proven win: uniform
        over the proven winning moves), sharpened by ``1 / temperature``; ``temperature == 0``
        is one-hot on :attr:`best_action`."""
        if not temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        if self.proven is not None or temperature == 0:
            return super().policy(temperature)
        probs = self.improved_policy.astype(np.float64) ** (1.0 / temperature)
        return (probs / probs.sum()).astype(np.float32)


# ---------------------------------------------------------------------------------------
# Compiled root kernels: one call per wave for all trees.
# ---------------------------------------------------------------------------------------


@njit(cache=True)
def _sigma(nodes, first, n, logits, probs, root_value, c_visit, c_scale, out):  # pragma: no cover - compiled
    """Fill ``out[:n]`` with sigma(completed q) of the root's ``n`` children (from
    ``first``), q from the root mover's view; returns nothing."""
    total = 0.0
    max_visits = 0.0
    weight = 0.0
    weighted = 0.0
    for j in range(n):
        node = nodes[first + j]
        visits = float(node.visits)
        total += visits
        max_visits = max(max_visits, visits)
        if node.proven != 0:
            q = float(node.proven)
        elif visits > 0:
            q = node.wsum / visits
        else:
            out[j] = np.nan
            continue
        out[j] = q
        weight += probs[j]
        weighted += probs[j] * q
    mixed = root_value
    if weight > 0:
        mixed = (root_value + total * weighted / weight) / (1.0 + total)
    low = np.inf
    high = -np.inf
    for j in range(n):
        if np.isnan(out[j]):
            out[j] = mixed
        low = min(low, out[j])
        high = max(high, out[j])
    scale = (c_visit + max_visits) * c_scale / max(high - low, 1e-8)
    for j in range(n):
        out[j] = (out[j] - low) * scale


@njit(cache=True)
def _next_children(
    nodes, roots, first, count, logits, probs, gumbel, root_values, considered, xs, os_,
    c_visit, c_scale, active, starts, cxs, cos,
):  # pragma: no cover - compiled
    """For every tree whose root is unproven: the root child the schedule visits next
    (among the children with ``considered[t]`` visits that are not proven lost, the best
    ``g + logit + sigma(q)``; any child not proven lost if none has that count) and the
    child's bitboards. Fills ``active``, ``starts``, ``cxs``, ``cos``; returns how many."""
    k = 0
    sigma = np.empty(ACTIONS, dtype=np.float64)
    one = np.int64(1)
    for t in range(roots.shape[0]):
        if nodes[roots[t]].proven != 0:
            continue
        n = count[t]
        _sigma(nodes, first[t], n, logits[t], probs[t], root_values[t], c_visit, c_scale, sigma)
        best = -1
        best_score = -np.inf
        fallback = -1
        fallback_score = -np.inf
        for j in range(n):
            node = nodes[first[t] + j]
            if node.proven == -1:
                continue
            score = gumbel[t, j] + logits[t, j] + sigma[j]
            if score > fallback_score:
                fallback, fallback_score = j, score
            if node.visits == considered[t] and score > best_score:
                best, best_score = j, score
        if best < 0:
            best = fallback
        if best < 0:  # every child proven lost: the root is proven too (not reached)
            continue
        child = first[t] + best
        a = np.int64(nodes[child].action)
        x, o = xs[t], os_[t]
        if a & 1 == 0:
            x |= one << (a >> 1)
        else:
            o |= one << (a >> 1)
        active[k], starts[k], cxs[k], cos[k] = t, child, x, o
        k += 1
    return k


class GumbelSearch:
    """Gumbel root search over PUCT trees (see the module docstring).

    Args:
        evaluator: gives priors and values for leaf batches.
        simulations: simulations per search, the root's expansion included.
        max_considered: root moves sampled (Gumbel-Top-k) for sequential halving.
        c: PUCT exploration constant below the root.
        c_visit, c_scale: sigma(q) = (c_visit + max visits) * c_scale * q, q min-max
            normalised over the root's children.
        seed: int or numpy Generator; each tree draws its own seed from it in order.
        max_nodes: node storage cap (a search that fills it stops early).
        prefetch: evaluate, in one batch for all trees, the root children that the first
            round of sequential halving will visit (each considered child's first visit,
            in ``g + logit`` order: unvisited children share one completed value, so the
            order does not depend on the values). The waves then find them evaluated. The
            search is the same; the network sees one large batch instead of one small
            batch per wave, which costs less per position when the waves are small
            (docs/experiments.md has the measurements). Not with an evaluator that
            proves leaves (``evaluate_with_proofs``), which is asked wave by wave as before.
    """

    def __init__(
        self,
        evaluator: Evaluator,
        simulations: int = 16,
        max_considered: int = 16,
        c: float = PUCT_C,
        c_visit: float = C_VISIT,
        c_scale: float = C_SCALE,
        seed: SeedLike = None,
        max_nodes: int = 4_000_000,
        prefetch: bool = False,
    ) -> None:
        check_evaluator(evaluator)
        for name, value in (("simulations", simulations), ("max_considered", max_considered), ("max_nodes", max_nodes)):
            check_positive(name, value, int)
        for name, value in (("c", c), ("c_visit", c_visit), ("c_scale", c_scale)):
            check_positive(name, value, float)
        self.evaluator = evaluator
        self.simulations = simulations
        self.max_considered = max_considered
        self.c, self.c_visit, self.c_scale = float(c), float(c_visit), float(c_scale)
        self.max_nodes = max_nodes
        self._rng = make_rng(seed)
        self.prefetch = bool(prefetch) and not hasattr(evaluator, "evaluate_with_proofs")

    def search(self, state: State, simulations: int | None = None, add_noise: bool = False) -> GumbelResult:
        """Search one position; the same as ``search_batch([state], ...)[0]``."""
        return self.search_batch([state], simulations=simulations, add_noise=add_noise)[0]

    def search_batch(
        self, states: Sequence[State], simulations: int | None = None, add_noise: bool = False
    ) -> list[GumbelResult]:
        """Search every state in its own tree, evaluating the leaves of all trees together
        (one ``evaluate`` call per wave). ``add_noise`` draws the root's Gumbel variables."""
        states = check_search_states(states)
        if not states:
            return []
        budget = int(simulations or self.simulations)
        k = len(states)
        asked: Evaluator = self.evaluator
        if self.prefetch:
            # the waves' evaluations go through a cache that the prefetch fills first
            asked = CachedEvaluator(self.evaluator, capacity=k * (budget + 1) + 1)
        evaluate_and_backup = MCTS(asked, simulations=1, use_priors=True)._evaluate_and_backup
        seeds = self._rng.integers(1, 2**63, size=k)
        store = _NodeStore(min(k * (budget + 1) * ACTIONS, 1 << 20), self.max_nodes)
        roots = np.array([store.add_root() for _ in states], dtype=np.int64)
        streams = np.array([[splitmix64(np.uint64(s))] for s in seeds], dtype=np.uint64)
        xs = np.array([s.x for s in states], dtype=np.int64)
        os_ = np.array([s.o for s in states], dtype=np.int64)
        _load_kernels()
        every = np.arange(k, dtype=np.int64)
        store.reserve(k * ACTIONS)
        leaves, lxs, los = _select_many(store.nodes, roots, xs, os_, self.c, True)
        root_values = evaluate_and_backup(store, every, leaves, lxs, los, streams)
        # the roots' children, in node order: prior logits, probabilities and Gumbel draws
        first = store.nodes["first_child"][roots].astype(np.int64)
        count = store.nodes["n_children"][roots].astype(np.int64)
        logits = np.full((k, ACTIONS), -np.inf)
        gumbel = np.zeros((k, ACTIONS))
        for t in range(k):
            prior = store.nodes["prior"][first[t] : first[t] + count[t]].astype(np.float64)
            logits[t, : count[t]] = np.log(np.maximum(prior, 1e-12))
            logits[t] -= logits[t, : count[t]].max()
            if add_noise:
                gumbel[t, : count[t]] = np.random.default_rng(int(seeds[t])).gumbel(size=count[t])
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        considered = np.minimum(self.max_considered, count)
        schedules = {m: considered_visit_sequence(int(m), max(budget - 1, 0)) for m in set(considered.tolist())}
        schedule = np.array([schedules[int(m)] for m in considered], dtype=np.int64).reshape(k, -1)
        if self.prefetch:
            self._prefetch_first_visits(asked, store, states, roots, first, logits + gumbel, schedule)
        done = np.ones(k, dtype=np.int64)
        active, starts = np.empty(k, np.int64), np.empty(k, np.int64)
        cxs, cos = np.empty(k, np.int64), np.empty(k, np.int64)
        for step in range(budget - 1):
            n = _next_children(
                store.nodes, roots, first, count, logits, probs, gumbel, root_values, schedule[:, step],
                xs, os_, self.c_visit, self.c_scale, active, starts, cxs, cos,
            )
            if n == 0 or not store.reserve(n * ACTIONS):
                break
            leaves, lxs, los = _select_many(store.nodes, starts[:n], cxs[:n], cos[:n], self.c, True)
            evaluate_and_backup(store, active[:n].copy(), leaves, lxs, los, streams)
            done[active[:n]] += 1
        roots_info = (first, count, logits, probs, gumbel, root_values)
        return [self._result(store, t, state, roots[t], roots_info, int(done[t]), budget) for t, state in enumerate(states)]

    @staticmethod
    def _prefetch_first_visits(
        cache: Evaluator, store: _NodeStore, states: list[State], roots: np.ndarray, first: np.ndarray,
        scores: np.ndarray, schedule: np.ndarray,
    ) -> None:
        """Evaluate through ``cache``, in one batch, the children each unproven root visits in
        the schedule's opening run of first visits: its leading zeros, the children taken in
        ``g + logit`` (``scores``) order, passing over those proven at expansion (a move
        that completes a five for the opponent), as the schedule does."""
        proven, actions = store.nodes["proven"], store.nodes["action"]
        children: list[State] = []
        for t, state in enumerate(states):
            if proven[roots[t]] != 0 or schedule.shape[1] == 0:
                continue
            first_visits = int(np.argmax(schedule[t] != 0)) if schedule[t].any() else schedule.shape[1]
            order = np.argsort(-scores[t], kind="stable")
            order = order[np.isfinite(scores[t, order])]
            # a move that loses at once (proven at expansion) is never visited
            order = order[proven[first[t] + order] == 0][:first_visits]
            for action in actions[first[t] + order].tolist():
                stone = 1 << (action >> 1)
                # the child's board straight from the bitboards (the tree holds legal moves only)
                children.append(State(state.x | stone, state.o) if action & 1 == 0 else State(state.x, state.o | stone))
        if children:
            cache.evaluate(children)

    def _result(
        self, store: _NodeStore, t: int, state: State, root: int, roots_info: tuple, done: int, budget: int
    ) -> GumbelResult:
        """Tree ``t``'s result: the PUCT result's statistics, the improved policy, and (when
        unproven) the final Gumbel choice among the most visited children."""
        first, count, logits, probs, gumbel, root_values = roots_info
        base = MCTS._result(store, int(root), state, done, budget)
        n = int(count[t])
        children = store.nodes[first[t] : first[t] + n]
        sigma = np.empty(ACTIONS)
        _sigma(store.nodes, int(first[t]), n, logits[t], probs[t], float(root_values[t]), self.c_visit, self.c_scale, sigma)
        scores = logits[t, :n] + sigma[:n]
        lost = children["proven"] == -1
        if not lost.all():
            scores[lost] = -np.inf
        weights = np.exp(scores - scores.max())
        improved = np.zeros(ACTIONS, np.float64)
        improved[children["action"].astype(np.int64)] = weights / weights.sum()
        best_action = base.best_action
        if base.proven is None:
            visits = children["visits"]
            final = np.where(visits == visits.max(), gumbel[t, :n] + scores, -np.inf)
            best_action = int(children["action"][int(np.argmax(final))])
        fields = {name: getattr(base, name) for name in base.__dataclass_fields__}
        fields["best_action"] = best_action
        return GumbelResult(**fields, improved_policy=improved.astype(np.float32))
