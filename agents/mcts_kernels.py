"""The compiled tree kernels of the search in :mod:`orderchaos.agents.mcts`: selection,
expansion and MCTS-Solver backup over a tree held in one array of :data:`NODE_DTYPE` rows.

numba functions on plain arrays; :class:`orderchaos.agents.mcts.MCTS` (and the Gumbel
search) own the trees and call these.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from orderchaos.agents.compiled_rules import legal_actions, places_five
from orderchaos.agents.rollout import rand_below, rollout_value
from orderchaos.envs.rules import ACTIONS, CELLS

NODE_DTYPE = np.dtype(
    [
        ("parent", np.int32),
        ("first_child", np.int32),  # -1 until expanded
        ("visits", np.int32),
        ("wsum", np.float64),  # sum of values from the view of the player who moved here
        ("prior", np.float32),
        ("action", np.int8),  # the action that leads from the parent to this node
        ("n_children", np.int8),
        ("proven", np.int8),  # +1 / -1: proven win / loss for the player who moved here
    ]
)
"""One search node. A tree is a slice of an array of these; children are contiguous."""


@njit(cache=True)
def _select(nodes, root, x, o, c, use_priors):  # pragma: no cover - compiled
    """Walk from ``root`` to an unexpanded (or proven) node; returns it and its bitboards."""
    node = root
    one = np.int64(1)
    while nodes[node].first_child >= 0 and nodes[node].proven == 0:
        first = nodes[node].first_child
        parent_visits = max(nodes[node].visits, 1)
        explore_scale = math.sqrt(parent_visits) if use_priors else math.log(parent_visits)
        best = -1
        best_score = -np.inf
        for j in range(first, first + nodes[node].n_children):
            if nodes[j].proven == -1:
                continue
            n = nodes[j].visits
            if use_priors:
                q = nodes[j].wsum / n if n > 0 else 0.0
                score = q + c * nodes[j].prior * explore_scale / (1 + n)
            elif n == 0:
                best = j  # UCB1 is infinite for an unvisited child
                break
            else:
                score = nodes[j].wsum / n + c * math.sqrt(explore_scale / n)
            if score > best_score:
                best_score = score
                best = j
        a = np.int64(nodes[best].action)
        if a & 1 == 0:
            x |= one << (a >> 1)
        else:
            o |= one << (a >> 1)
        node = best
    return node, x, o


@njit(cache=True)
def _expand(nodes, size, leaf, x, o, priors, stream):  # pragma: no cover - compiled
    """Create all children of ``leaf`` (in shuffled order), proving terminal ones at once.

    Priors are renormalised over the legal actions (uniform when they sum to zero).
    """
    actions = np.empty(ACTIONS, dtype=np.int64)
    n = legal_actions(x | o, actions)
    for i in range(n - 1, 0, -1):
        j = rand_below(stream, i + 1)
        actions[i], actions[j] = actions[j], actions[i]
    total = 0.0
    for i in range(n):
        total += priors[actions[i]]
    mover_is_order = (CELLS - n // 2) % 2 == 0
    first = size[0]
    size[0] += n
    nodes[leaf].first_child = first
    nodes[leaf].n_children = n
    any_win = False
    all_lost = True
    one = np.int64(1)
    for i in range(n):
        a = actions[i]
        j = first + i
        cell = a >> 1
        nodes[j].parent = leaf
        nodes[j].first_child = -1
        nodes[j].n_children = 0
        nodes[j].visits = 0
        nodes[j].wsum = 0.0
        nodes[j].action = a
        nodes[j].prior = priors[a] / total if total > 0 else 1.0 / n
        bits = (x if a & 1 == 0 else o) | (one << cell)
        if places_five(bits, cell):
            outcome = 1 if mover_is_order else -1
        elif n == 2:  # the last empty cell: a full board without a five
            outcome = -1 if mover_is_order else 1
        else:
            outcome = 0
        nodes[j].proven = outcome
        any_win |= outcome == 1
        all_lost &= outcome == -1
    if any_win:
        nodes[leaf].proven = -1
    elif all_lost:
        nodes[leaf].proven = 1


@njit(cache=True)
def _backup(nodes, leaf, value):  # pragma: no cover - compiled
    """Propagate proofs upward, then add ``value`` (leaf mover's view) along the path."""
    node = leaf
    while nodes[node].proven != 0:
        parent = nodes[node].parent
        if parent < 0 or nodes[parent].proven != 0:
            break
        if nodes[node].proven == 1:
            nodes[parent].proven = -1
        else:
            first = nodes[parent].first_child
            all_lost = True
            for j in range(first, first + nodes[parent].n_children):
                if nodes[j].proven != -1:
                    all_lost = False
                    break
            if not all_lost:
                break
            nodes[parent].proven = 1
        node = parent
    v = -value
    node = leaf
    while node >= 0:
        nodes[node].visits += 1
        nodes[node].wsum += v
        v = -v
        node = nodes[node].parent


@njit(cache=True)
def _expand_and_backup(nodes, size, leaf, x, o, priors, value, stream):  # pragma: no cover - compiled
    """Expand an unproven, unexpanded leaf; back up its exact value if that proves it."""
    if nodes[leaf].proven == 0 and nodes[leaf].first_child < 0:
        _expand(nodes, size, leaf, x, o, priors, stream)
    if nodes[leaf].proven != 0:
        value = -float(nodes[leaf].proven)
    _backup(nodes, leaf, value)


@njit(cache=True)
def _simulate_with_rollouts(
    nodes, size, root, x, o, n_sims, c, use_priors, n_rollouts, stream
):  # pragma: no cover - compiled
    """Run up to ``n_sims`` simulations with random-playout leaf values; returns how many
    ran (fewer when the root is proven or the node array is full)."""
    trace = np.empty(CELLS, dtype=np.int64)
    priors = np.full(ACTIONS, 1.0 / ACTIONS, dtype=np.float32)
    done = 0
    while done < n_sims and nodes[root].proven == 0 and size[0] + ACTIONS <= nodes.shape[0]:
        leaf, lx, lo = _select(nodes, root, x, o, c, use_priors)
        if nodes[leaf].proven == 0 and nodes[leaf].first_child < 0:
            _expand(nodes, size, leaf, lx, lo, priors, stream)
        if nodes[leaf].proven != 0:
            value = -float(nodes[leaf].proven)
        else:
            value = rollout_value(lx, lo, n_rollouts, stream, trace)
        _backup(nodes, leaf, value)
        done += 1
    return done


@njit(cache=True)
def _select_many(nodes, roots, xs, os_, c, use_priors):  # pragma: no cover - compiled
    """:func:`_select` for several trees; returns leaf indices and leaf bitboards."""
    k = roots.shape[0]
    leaves = np.empty(k, dtype=np.int64)
    lxs = np.empty(k, dtype=np.int64)
    los = np.empty(k, dtype=np.int64)
    for i in range(k):
        leaves[i], lxs[i], los[i] = _select(nodes, roots[i], xs[i], os_[i], c, use_priors)
    return leaves, lxs, los


@njit(cache=True)
def _expand_and_backup_many(
    nodes, size, tree_ids, leaves, xs, os_, priors, values, streams
):  # pragma: no cover - compiled
    """:func:`_expand_and_backup` for one evaluated leaf per tree (streams by tree id)."""
    for i in range(leaves.shape[0]):
        _expand_and_backup(
            nodes, size, leaves[i], xs[i], os_[i], priors[i], values[i],
            streams[tree_ids[i]],
        )


@njit(cache=True)
def _expand_and_backup_proven_many(
    nodes, size, tree_ids, leaves, xs, os_, priors, values, proven, streams
):  # pragma: no cover - compiled
    """:func:`_expand_and_backup_many` with the evaluator's proofs: ``proven[i]`` is +1 / -1
    when the player to move at ``leaves[i]`` provably wins / loses (0: unknown).

    A proven leaf that is not a root is marked before the backup (node flags are from the
    view of the player who moved into the node, hence the sign flip), so it is not expanded,
    its exact value is backed up, and the proof propagates like a terminal child's.
    """
    for i in range(leaves.shape[0]):
        leaf = leaves[i]
        if (
            proven[i] != 0
            and nodes[leaf].parent >= 0
            and nodes[leaf].proven == 0
            and nodes[leaf].first_child < 0
        ):
            nodes[leaf].proven = -proven[i]
        _expand_and_backup(
            nodes, size, leaf, xs[i], os_[i], priors[i], values[i], streams[tree_ids[i]],
        )
