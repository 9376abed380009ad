"""The network player: a batched two-network evaluator, the agent, and its loaders.

* :class:`NetworkEvaluator` implements :class:`orderchaos.agents.base.Evaluator` over a pair of
  networks: each state is evaluated by the Order net when Order is to move and by the Chaos
  net otherwise, both as one batch each; illegal actions get zero probability.
* :class:`NeuralAgent` plays from the network alone (``sims=0``: greedy with ``temp=0`` or
  sampling with ``temp>0``) or with PUCT search (``sims>0``, the shared ``orderchaos.agents.mcts.MCTS``);
  ``solver=D`` adds the proof book and the exact solver at the root and at search leaves
  with at most ``D`` empty cells (:mod:`orderchaos.agents.solver_assisted`).
* :func:`pretrained_agent` (registry spec ``pretrained``) plays the shipped weights;
  :func:`run_dir_agent` (a run directory as a spec) plays a run's latest checkpoint. Both
  share one cached evaluator per policy (:func:`shared_evaluator`), so a match does not
  reload the weights for every game; :func:`load_evaluator` gives networks of one's own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orderchaos.agents.base import SeedLike, make_rng
from orderchaos.agents.evaluation_cache import DEFAULT_CAPACITY, CachedEvaluator
from orderchaos.agents.symmetric_evaluator import SymmetricEvaluator, check_symmetries
from orderchaos.agents.network import (
    INFERENCE_PRECISIONS,
    InferenceForward,
    PolicyValueNet,
    masked_log_softmax,
)
from orderchaos.agents.policy_files import (
    META_FILE,
    WEIGHT_FILES,
    CheckpointError,
    find_policy_dir,
    load_policy_dir,
    pretrained_dir,
    repaired_dir,
)
from orderchaos.agents.proof_book import ProofBook
from orderchaos.envs.encoding import bitboard_masks, encode_bitboards, state_bitboards
from orderchaos.envs.rules import ACTIONS, AGENTS, State

if TYPE_CHECKING:
    from orderchaos.agents.mcts import SearchResult
    from orderchaos.agents.solver_assisted import RootAnswer


class NetworkEvaluator:
    """Evaluate batches of states with one network per role (see :class:`orderchaos.agents.base.Evaluator`).

    ``nets`` maps ``"order"`` and ``"chaos"`` to :class:`PolicyValueNet` instances. Networks
    are put in eval mode for evaluation and restored to their previous mode afterwards. On
    CPU, with ``compiled`` (the default), each network runs through
    :class:`orderchaos.agents.network.InferenceForward`: the same outputs to float rounding
    at a fraction of the time, recompiled whenever the weights change. ``precision``
    ``"bfloat16"`` evaluates in bfloat16 (see :class:`InferenceForward`; the plain modules
    run under ``torch.autocast``): cheaper where the hardware has bfloat16 units, but no
    longer the same outputs to float rounding.
    """

    def __init__(
        self,
        nets: dict[str, PolicyValueNet],
        device: str | torch.device = "cpu",
        compiled: bool = True,
        precision: str = "float32",
    ) -> None:
        missing = [r for r in AGENTS if r not in nets]
        if missing:
            raise ValueError(f"NetworkEvaluator needs networks for {AGENTS}, missing {missing}")
        if precision not in INFERENCE_PRECISIONS:
            raise ValueError(f"NetworkEvaluator precision must be one of {INFERENCE_PRECISIONS}, got {precision!r}")
        self.nets = nets
        self.device = torch.device(device)
        self.precision = precision
        self.positions_evaluated = 0
        # On CPU the forward pass runs compiled (InferenceForward), recompiled when the
        # weights change; CUDA keeps the plain module, which is untested compiled.
        self.compiled = compiled and self.device.type == "cpu"
        self._forward = {
            role: InferenceForward(net, precision) if self.compiled else net for role, net in nets.items()
        }
        self._autocast = precision == "bfloat16" and not self.compiled
        # listed once: walking the modules on every call would cost more than a small batch
        self._weights = [t for net in nets.values() for t in (*net.parameters(), *net.buffers())]

    def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        """Priors ``(B, 72)`` float32 (zero on illegal actions) and values ``(B,)`` float32
        from the view of the player to move."""
        if len(states) == 0:
            return np.zeros((0, ACTIONS), np.float32), np.zeros(0, np.float32)
        x, o = state_bitboards(states)
        planes = encode_bitboards(x, o)
        roles = planes[:, 2, 0, 0].astype(np.int8)  # plane 2 is 1 where Chaos is to move
        return self.evaluate_arrays(planes, bitboard_masks(x, o), roles)

    def evaluate_arrays(
        self, planes: np.ndarray, masks: np.ndarray, roles: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Like :meth:`evaluate` on encoded planes ``(B,3,6,6)``, masks ``(B,72)`` and role
        indices ``(B,)`` (0 Order, 1 Chaos)."""
        n = planes.shape[0]
        priors = np.zeros((n, ACTIONS), np.float32)
        values = np.zeros(n, np.float32)
        with torch.inference_mode():
            for index, role in enumerate(AGENTS):
                rows = np.flatnonzero(roles == index)
                if rows.size == 0:
                    continue
                net = self.nets[role]
                was_training = net.training
                if was_training:  # toggling modes walks every submodule; skip when not needed
                    net.eval()
                x = torch.from_numpy(planes[rows]).to(self.device)
                m = torch.from_numpy(masks[rows]).to(self.device)
                with torch.autocast(self.device.type, torch.bfloat16, enabled=self._autocast):
                    logits, v = self._forward[role](x)
                priors[rows] = masked_log_softmax(logits.float(), m).exp().cpu().numpy()
                values[rows] = v.float().cpu().numpy()
                if was_training:
                    net.train()
        self.positions_evaluated += n
        return priors, values

    def weights_version(self) -> tuple[int, ...]:
        """A stamp that changes whenever either network's weights change (the in-place
        version counters of their parameters and buffers: optimiser steps,
        ``load_state_dict``, batch-norm statistics), for caches of its answers. As with
        :class:`orderchaos.agents.network.InferenceForward`, networks whose parameter objects
        are replaced need a new evaluator."""
        return tuple(t._version for t in self._weights)


def sample_from(probs: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """Pick an action from a probability vector: argmax when ``temperature == 0`` (ties
    broken by ``rng``), else sample from ``probs ** (1 / temperature)``."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        best = np.flatnonzero(probs == probs.max())
        return int(best[0] if best.size == 1 else rng.choice(best))
    legal = probs > 0
    logp = np.where(legal, np.log(np.where(legal, probs, 1.0)) / temperature, -np.inf)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    return int(rng.choice(ACTIONS, p=p))


class NeuralAgent:
    """A player from a :class:`NetworkEvaluator`, with optional PUCT search and solver.

    ``sims=0``: the network's policy alone; ``temp=0`` plays its most probable move, ``temp>0``
    samples. ``sims>0``: runs that many PUCT simulations (``orderchaos.agents.mcts.MCTS``, constant
    ``c``, by default ``orderchaos.agents.mcts.PUCT_C``) and plays the most visited move
    (``temp=0``) or samples the visit distribution.

    ``solver=D`` (0: off) adds the exact solver, as
    :class:`orderchaos.agents.solver_assisted.SolverAssist` describes: a root found in the proof
    ``book`` (default: the shipped one) that the mover wins is answered with the book's move;
    a root with at most ``root_depth`` empty cells (default ``D + 4``) proven won for the
    mover is answered with a proven winning move (the one the network likes best); an Order
    root that the solve does not settle first seeks a proven win among the network's
    likeliest moves (``seek_nodes``); a Chaos root the solve does not settle, with at most
    ``D + 7`` empty cells, has the search's move checked and, where the solver proves it
    lost, replaced by the next one not proven lost (``avoid_nodes``; a second pass with
    more nodes a move, ``recheck_nodes``); search
    leaves with at most ``D`` empty cells are solved under ``leaf_nodes`` nodes each and
    marked proven in the tree. A root
    proven lost (by the solver at the root, or by the search's proofs) is searched again
    without the solver, so the network picks the move that leaves the opponent the most
    chances to go wrong. ``root_nodes`` caps the solver's work at the root. One solver, and
    its transposition table, serves the whole game.

    The searches ask the network through a :class:`orderchaos.agents.evaluation_cache.CachedEvaluator`
    of ``cache`` positions (0: none), so a position the agent's earlier searches have
    evaluated (most of the tree below the moves since played) is not evaluated again.

    ``sym`` (1, 8 or 16) averages the network's answers over that many images of each
    position (:class:`orderchaos.agents.symmetric_evaluator.SymmetricEvaluator`), for the
    network alone and inside the search.

    ``last_reason`` says how the last move (or policy) was chosen: ``"network"``,
    ``"search"``, ``"book"``, ``"solver"``, ``"solver (avoid)"`` or ``"search (lost)"``.
    """

    def __init__(
        self,
        evaluator: NetworkEvaluator,
        *,
        sims: int = 0,
        temp: float = 0.0,
        c: float | None = None,
        seed: SeedLike = None,
        name: str = "neural",
        solver: int = 0,
        book: ProofBook | None = None,
        root_depth: int | None = None,
        root_nodes: int | None = None,
        leaf_nodes: int | None = None,
        seek_nodes: int | None = None,
        avoid_nodes: int | None = None,
        recheck_nodes: int | None = None,
        cache: int = DEFAULT_CAPACITY,
        sym: int = 1,
    ) -> None:
        if sims < 0:
            raise ValueError(f"sims must be >= 0, got {sims}")
        if temp < 0:
            raise ValueError(f"temp must be >= 0, got {temp}")
        if c is not None and c <= 0:
            raise ValueError(f"c must be > 0, got {c}")
        from orderchaos.agents.solver_assisted import check_depth

        weights_version = getattr(evaluator, "weights_version", None)
        if check_symmetries(sym) > 1:
            evaluator = SymmetricEvaluator(evaluator, sym)
        self.evaluator = evaluator
        self.sims, self.temp, self.c = sims, temp, c
        self.solver_depth = check_depth(solver)
        self.rng = make_rng(seed)
        self.name = name
        self.last_reason = ""
        self.assist = None
        if self.solver_depth:
            from orderchaos.agents.solver_assisted import SolverAssist

            tuning = {
                "root_depth": root_depth, "root_nodes": root_nodes, "leaf_nodes": leaf_nodes,
                "seek_nodes": seek_nodes, "avoid_nodes": avoid_nodes,
                "recheck_nodes": recheck_nodes,
            }
            self.assist = SolverAssist(
                self.solver_depth, book=book, **{k: v for k, v in tuning.items() if v is not None}
            )
        self._search = None
        self._plain_search = None  # the search without the solver, for roots proven lost
        if sims > 0:
            from orderchaos.agents.mcts import MCTS

            searched = evaluator
            if cache:
                searched = CachedEvaluator(evaluator, capacity=cache, version=weights_version)
            leaf_evaluator = searched if self.assist is None else self.assist.leaf_evaluator(searched)
            self._search = MCTS(
                leaf_evaluator,
                simulations=sims,
                c=c,
                use_priors=True,
                seed=int(self.rng.integers(2**31)),
            )
            self.c = self._search.c  # c=None: the MCTS default for PUCT, PUCT_C
            if self.assist is not None:
                self._plain_search = MCTS(
                    searched, simulations=sims, c=c, use_priors=True, seed=int(self.rng.integers(2**31))
                )

    def policy(self, state: State) -> np.ndarray:
        """Move probabilities (72, zero on illegal moves): the network's prior, or the
        search's visit distribution when ``sims > 0``; one-hot on a book or solver move."""
        if state.is_terminal:
            raise ValueError("the game is over; there is no policy for a terminal state")
        answer = self._root_answer(state)
        if answer is not None and answer.move is not None:
            out = np.zeros(ACTIONS, dtype=np.float32)
            out[answer.move] = 1.0
            return out
        lost = answer is not None and answer.source == "lost"
        if self._search is not None:
            result = self._searched(state, lost)
            safer = self._avoided(state, answer, result, int(result.best_action))
            if safer is not None:
                out = np.zeros(ACTIONS, dtype=np.float32)
                out[safer] = 1.0
                return out
            return np.asarray(result.policy(1.0), dtype=np.float32)
        self.last_reason = "network"
        priors, _ = self.evaluator.evaluate([state])
        return priors[0]

    def act(self, state: State) -> int:
        """Choose a legal action for the side to move."""
        if state.is_terminal:
            raise ValueError("the game is over; no action can be chosen")
        answer = self._root_answer(state)
        if answer is not None and answer.move is not None:
            return answer.move
        lost = answer is not None and answer.source == "lost"
        if self._search is not None:
            result = self._searched(state, lost)
            if self.temp == 0:
                move = int(result.best_action)
            else:
                move = sample_from(np.asarray(result.policy(1.0), dtype=np.float64), self.temp, self.rng)
            safer = self._avoided(state, answer, result, move)
            return move if safer is None else safer
        self.last_reason = "network"
        priors, _ = self.evaluator.evaluate([state])
        return sample_from(priors[0].astype(np.float64), self.temp, self.rng)

    def _root_answer(self, state: State) -> RootAnswer | None:
        """The book's or the solver's answer at the root (a ``RootAnswer``), None without
        the solver."""
        if self.assist is None:
            return None
        answer = self.assist.root(state, lambda: self._ranked(state))
        self.last_reason = answer.source
        return answer

    def _avoided(self, state: State, answer: RootAnswer | None, result: SearchResult, move: int) -> int | None:
        """Chaos's replacement for ``move`` when the solver proves it lost and another
        move is not proven lost (``SolverAssist.avoid_lost``; the others are tried most
        visited first, then in the network's order); None to keep ``move``."""
        if self.assist is None or answer is None or answer.source != "open" or self.last_reason != "search":
            return None

        def others() -> list[int]:
            rank = {a: i for i, a in enumerate(self._ranked(state))}
            return sorted((a for a in rank if a != move), key=lambda a: (-result.visits[a], rank[a]))

        safer = self.assist.avoid_lost(state, move, others)
        if safer is None:
            return None
        self.last_reason = "solver (avoid)"
        return safer

    def _ranked(self, state: State) -> list[int]:
        """The legal moves, most probable under the network first."""
        priors, _ = self.evaluator.evaluate([state])
        return sorted(state.legal_actions(), key=lambda a: -float(priors[0][a]))

    def _searched(self, state: State, root_lost: bool) -> SearchResult:
        """The search result to play from (``sims > 0``): the search with the solver at its
        leaves, or, for a root proven lost, the search without it."""
        assert self._search is not None
        if not root_lost:
            result = self._search.search(state)
            root_lost = self.assist is not None and result.proven == "loss"
            if not root_lost:
                self.last_reason = "search"
                return result
        self.last_reason = "search (lost)"
        assert self._plain_search is not None
        return self._plain_search.search(state)


def load_evaluator(path: str | Path, device: str | torch.device = "cpu") -> NetworkEvaluator:
    """A :class:`NetworkEvaluator` over the policy in ``path`` (policy or run directory),
    with networks of its own (see :func:`shared_evaluator` for a cached, shared one)."""
    nets, _ = load_policy_dir(find_policy_dir(path), device=device)
    return NetworkEvaluator(nets, device=device)


_SHARED: OrderedDict[tuple, NetworkEvaluator] = OrderedDict()
_SHARED_SIZE = 8


def _stamp(file: Path) -> tuple[int, int, int] | None:
    # Weights are written atomically (a new file renamed into place), so the inode changes
    # with every rewrite even when the size and a coarse modification time do not.
    try:
        stat = file.stat()
    except FileNotFoundError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def _policy_files_key(policy_dir: Path, device: str | torch.device) -> tuple:
    files = [policy_dir / name for name in (META_FILE, *WEIGHT_FILES)]
    stamps = tuple(_stamp(f) for f in files)
    return (str(policy_dir.resolve()), str(torch.device(device)), stamps)


def shared_evaluator(path: str | Path, device: str | torch.device = "cpu") -> NetworkEvaluator:
    """The evaluator of the policy in ``path``, loaded once per process and shared.

    Agents built from specs (``pretrained``, a run directory) use it, so a match of many
    games does not reload the weights for every game. The cache key includes the policy
    files' identities (inode, modification time, size), so a new checkpoint (or rewritten
    weights) is loaded afresh. Treat the shared networks as read-only; use :func:`load_evaluator` for
    networks to train or modify.
    """
    policy_dir = find_policy_dir(path)
    key = _policy_files_key(policy_dir, device)
    evaluator = _SHARED.get(key)
    if evaluator is None:
        evaluator = load_evaluator(policy_dir, device=device)
        _SHARED[key] = evaluator
        while len(_SHARED) > _SHARED_SIZE:
            _SHARED.popitem(last=False)
    _SHARED.move_to_end(key)
    return evaluator


def run_dir_agent(
    path: str | Path,
    sims: int = 0,
    temp: float = 0.0,
    c: float | None = None,
    seed: SeedLike = None,
    solver: int = 0,
    sym: int = 1,
    name: str | None = None,
    avoid: int | None = None,
    recheck: int | None = None,
) -> NeuralAgent:
    """The agent of a training run directory (its latest checkpoint) or of a policy directory;
    ``solver=D`` adds the book and the solver, ``avoid`` sets the solver nodes of Chaos's
    check of its move (0: off; default ``AVOID_NODE_LIMIT``), ``recheck`` those of its second
    pass (0: one pass; default ``RECHECK_NODE_LIMIT``), ``sym`` symmetry averaging (see
    :class:`NeuralAgent`). ``name`` defaults to ``run:<directory name>``."""
    return NeuralAgent(
        shared_evaluator(path), sims=sims, temp=temp, c=c, seed=seed,
        name=name or f"run:{Path(path).name}", solver=solver, sym=sym, avoid_nodes=avoid,
        recheck_nodes=recheck,
    )


def pretrained_agent(**options: Any) -> NeuralAgent:
    """The shipped pretrained Order and Chaos policies as one agent (registry ``pretrained``),
    with the options of :func:`run_dir_agent` (``sims``, ``temp``, ``c``, ``seed``, ``solver``,
    ``avoid``, ``recheck``, ``sym``); ``pretrained:sims=200,solver=26`` is the strongest player,
    ``sym=16`` averages the networks over the game's symmetries (see :class:`NeuralAgent`)."""
    where = pretrained_dir()
    if not (where / META_FILE).is_file():
        raise CheckpointError(
            f"no pretrained policy is installed at {where}; export one from a run with "
            f"`orderchaos export RUN_DIR`"
        )
    return run_dir_agent(where, name="pretrained", **options)


def repaired_agent(**options: Any) -> NeuralAgent:
    """The shipped repaired policies (registry ``repaired``): the pretrained Chaos network and
    the pretrained Order network after ``orderchaos repair --border-moves 1``, with the options
    of :func:`run_dir_agent`."""
    return run_dir_agent(repaired_dir(), name="repaired", **options)
