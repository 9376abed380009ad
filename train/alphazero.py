"""The AlphaZero training loop: one network per role learns from self-play rows.

Each iteration plays ``selfplay.games`` games (:mod:`orderchaos.train.selfplay`: batched
PUCT or Gumbel search for every network move, some games against the heuristic agent) and
turns every position a network moved in into a training row for that role's network
(:class:`TrainingRows`): the search's visit distribution as policy target and the final
outcome from the mover's view as value target, or the exact solver value for positions
with at most ``selfplay.solver_depth`` empty cells. Rows go to one replay buffer per role;
training samples them with random symmetry augmentation. With ``mistakes.games``, the
networks also play greedy games against fixed opponents at intervals, and the moves that
lost them, corrected by the solver, are mixed into training batches
(``orderchaos.arena.mistakes``).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from orderchaos.agents.network import masked_log_softmax
from orderchaos.agents.network_agent import NetworkEvaluator, NeuralAgent
from orderchaos.agents.solver import Solver
from orderchaos.agents.solver_pool import SolverPoolError
from orderchaos.envs.rules import AGENTS, State
from orderchaos.arena.mistakes import collect_mistakes, labelled_rows, mistake_rows, ranked_moves
from orderchaos.train.replay_buffer import ReplayBuffer
from orderchaos.train.config_schema import (
    COMPILED_INFERENCE,
    MISTAKE_CANDIDATES,
    MISTAKE_CAPACITY,
    MISTAKE_FRACTION,
    MISTAKE_MIN_ROWS,
    MISTAKE_NODE_LIMIT,
    MISTAKE_OPENINGS,
    MISTAKE_OPPONENTS,
    SOLVER_POLICY,
    VALUE_WEIGHT,
    WARMUP_OPENINGS,
)
from orderchaos.train.selfplay import (
    SelfPlayGame,
    play_heuristic_games,
    play_training_games,
    value_targets,
)
from orderchaos.train.solver_targets import PendingTargets, SolverTargets, SolverWorker, solver_targets
from orderchaos.train.trainer import Trainer


@dataclass(frozen=True)
class MistakeSettings:
    """The fixed settings of the mistake hunt and of the mistake positions' share of the
    training batches (the ``MISTAKE_*`` constants of :mod:`orderchaos.train.config_schema`;
    the ``mistakes`` config section says how many games and how often). One object, so that
    the Ray backend hands the same settings to its hunter actor, and tests can shrink the
    solver budget of a short run."""

    opponents: tuple[str, ...] = MISTAKE_OPPONENTS
    node_limit: int = MISTAKE_NODE_LIMIT
    candidates: int = MISTAKE_CANDIDATES
    capacity: int = MISTAKE_CAPACITY
    fraction: float = MISTAKE_FRACTION
    min_rows: int = MISTAKE_MIN_ROWS


def mistake_hunt_rows(
    evaluator: NetworkEvaluator, config: Any, rng: np.random.Generator, settings: MistakeSettings = MistakeSettings()
) -> tuple[dict[str, tuple[np.ndarray, ...]], dict[str, float]]:
    """One hunt of the ``mistakes`` section (``config`` a MistakesConfig) with the networks of
    ``evaluator``: each role plays greedy games against the opponents, and the losing move
    of each lost game that the solver (or, with ``rollouts``, play-outs) can place becomes a
    row. Returns the rows per role (``mistake_rows`` arrays; roles that found none are left
    out) and the hunt's metrics. The local trainer runs it in the learner; the Ray backend
    on an actor."""
    learner = NeuralAgent(evaluator, sims=0, temp=0.0, name="learner")

    def preferences(state: State) -> list[int]:
        priors, _ = evaluator.evaluate([state])
        return ranked_moves(priors[0], settings.candidates)

    rows: dict[str, tuple[np.ndarray, ...]] = {}
    metrics: dict[str, float] = {}
    for role in AGENTS:
        hunt = collect_mistakes(
            learner,
            role,
            settings.opponents,
            config.games,
            int(rng.integers(2**31)),
            openings=MISTAKE_OPENINGS,
            node_limit=settings.node_limit,
            preferences=preferences,
            rollouts=config.rollouts,
        )
        if hunt.mistakes:
            rows[role] = tuple(mistake_rows(hunt.mistakes))
        metrics[f"{role}/mistakes/lost_rate"] = hunt.lost / hunt.games
        metrics[f"{role}/mistakes/found"] = float(len(hunt.mistakes))
        metrics[f"{role}/mistakes/practical"] = float(hunt.practical)
    return rows, metrics


@dataclass
class TrainingRows:
    """Training rows from game logs: positions, planes, masks, policy and value targets."""

    states: list[State]
    planes: np.ndarray
    masks: np.ndarray
    policies: np.ndarray
    values: np.ndarray

    @classmethod
    def from_logs(cls, logs: list[SelfPlayGame], length_weight: float = 0.0) -> "TrainingRows | None":
        """The rows of every logged position (None when there are none); value targets
        graded by game length with ``length_weight`` (:func:`value_targets`)."""
        logs = [log for log in logs if log.states]
        if not logs:
            return None
        return cls(
            states=[s for log in logs for s in log.states],
            planes=np.stack([p for log in logs for p in log.planes]),
            masks=np.stack([m for log in logs for m in log.masks]),
            policies=np.stack([p for log in logs for p in log.policies]),
            values=np.concatenate([value_targets(log, length_weight) for log in logs]),
        )

    def favourite_moves(self, row: int, count: int) -> list[int]:
        """Up to ``count`` moves with positive policy target in ``row``, most favoured first."""
        policy = self.policies[row]
        order = np.argsort(-policy, kind="stable")[:count]
        return [int(a) for a in order if policy[a] > 0]

    def apply(self, rows: list[int], exact: SolverTargets, weights: str = "uniform") -> None:
        """Overwrite the targets of ``rows`` with the exact results the solver found
        (``exact`` is keyed by position in ``rows``): the value, and for a proven win a
        policy over the winning moves only: uniform, or (``weights="search"``) in
        proportion to the policy target already there (uniform if it gave them nothing)."""
        for j, value in exact.values.items():
            self.values[rows[j]] = value
        for j, winning in exact.winning_moves.items():
            kept = self.policies[rows[j], winning] if weights == "search" else np.ones(len(winning))
            if kept.sum() <= 0:
                kept = np.ones(len(winning))
            self.policies[rows[j]] = 0.0
            self.policies[rows[j], winning] = kept / kept.sum()


class AlphaZeroTrainer(Trainer):
    """PUCT self-play + replay + policy/value regression, one network per role."""

    algorithm = "alphazero"
    mistake_settings = MistakeSettings()

    def __init__(self, config: Any, run_dir: Any) -> None:
        super().__init__(config, run_dir)
        self.replay = {role: ReplayBuffer(config.replay.capacity) for role in AGENTS}
        self.mistakes = {role: ReplayBuffer(self.mistake_settings.capacity) for role in AGENTS}
        self.load_labelled_positions(config.mistakes.positions)
        self.evaluator = NetworkEvaluator(
            self.nets,
            device=self.device,
            compiled=COMPILED_INFERENCE,
            precision=config.run.inference_precision,
        )
        self.solver = SolverWorker(config.selfplay.solver_workers)
        # The solver of this process: it ends self-play games at a proof and, without
        # selfplay.solver_process, gives the solver targets. A node-limited proof depends on
        # what its table holds, so the table is part of the checkpoint.
        self.local_solver = Solver()
        # bf16 autocast of the learner's forward pass: CUDA only (the CPU path stays float32)
        self.bf16 = config.optim.bf16 and self.device.type == "cuda"
        self._pending: list[tuple[TrainingRows, list[int], PendingTargets]] = []

    def load_labelled_positions(self, paths: list[str]) -> None:
        """Add the positions of ``mistakes.positions`` files to the mistake positions of the
        side to move. A resumed run's checkpoint then replaces the buffers with what they
        held when it was saved. Raises ValueError for a file that cannot be read and for more
        positions of a side than the mistake positions hold (the buffer would drop the first
        ones without a word)."""
        from orderchaos.arena.positions import PositionsFileError, load_positions

        positions = []
        for path in paths:
            try:
                positions += load_positions(path)
            except PositionsFileError as exc:
                raise ValueError(f"mistakes.positions: {exc}") from None
        capacity = self.mistake_settings.capacity
        for role, role_rows in labelled_rows(positions).items():
            if len(role_rows[-1]) > capacity:
                raise ValueError(
                    f"mistakes.positions: {len(role_rows[-1])} positions with {role} to move do not "
                    f"fit the {capacity} mistake positions a side keeps; give at most {capacity}"
                )
            self.mistakes[role].add(*role_rows)

    def close(self) -> None:
        """Stop the solver worker."""
        self.solver.close()

    def extra_state(self) -> dict[str, Any]:
        """The replay buffers (after adding the rows still waiting for solver targets), the
        mistake positions, and the tables of this process's solver and of the solver
        worker's (:meth:`SolverWorker.table_state`)."""
        self.flush()
        return {
            "replay": {role: buf.state_dict() for role, buf in self.replay.items()},
            "mistakes": {role: buf.state_dict() for role, buf in self.mistakes.items()},
            "solver": self.local_solver.table_state(),
            "solver_workers": self.solver.table_state(),
        }

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore the replay buffers, mistake positions and solver tables (checkpoints
        written before mistake positions existed have none; one written before the solver
        tables were saved goes on with empty ones, with a warning where a solver works)."""
        for role, buf in self.replay.items():
            buf.load_state_dict(state["replay"][role])
        for role, buf in self.mistakes.items():
            if role in state.get("mistakes", {}):
                buf.load_state_dict(state["mistakes"][role])
        cfg = self.config.selfplay
        try:
            if state.get("solver_workers") is not None:
                self.solver.load_table_state(state["solver_workers"])
            if "solver" in state:
                self.local_solver.load_table_state(state["solver"])
            elif cfg.solver_end_depth or cfg.solver_depth:
                raise ValueError("the checkpoint holds no solver tables (an older format)")
        except (ValueError, SolverPoolError) as exc:
            self.local_solver.clear()
            warnings.warn(
                f"{exc}: the run goes on with empty solver tables, so it will not take the path "
                "it would have taken unstopped",
                stacklevel=2,
            )

    def generate(self) -> dict[str, float]:
        """Play one batch of self-play games (and imitation games) and store their
        positions; returns statistics."""
        cfg = self.config
        for net in self.nets.values():
            net.eval()
        evaluated_before = self.evaluator.positions_evaluated
        logs, imitation, play_seconds = play_training_games(
            self.evaluator, cfg, cfg.selfplay.games, cfg.selfplay.imitation_games, self.rng, self.local_solver
        )
        evaluations = self.evaluator.positions_evaluated - evaluated_before
        self.network_evaluations += evaluations
        stats = self.flush()
        stats.update(self.store(logs + imitation))
        self.games_played += len(logs)
        order_wins = sum(log.winner == "order" for log in logs)
        return {
            **stats,
            "charts/games_per_sec": len(logs) / play_seconds,
            "charts/SPS": sum(log.length for log in logs) / play_seconds,
            "charts/selfplay_order_winrate": order_wins / len(logs),
            "charts/mean_game_length": float(np.mean([log.length for log in logs])),
            "charts/solver_ended_fraction": float(np.mean([log.solver_ended for log in logs])),
            "charts/games_played": float(self.games_played),
            "charts/network_evals_per_game": evaluations / len(logs),
            "charts/network_evaluations": float(self.network_evaluations),
        }

    def store(self, logs: list[SelfPlayGame], solver_depth: int | None = None) -> dict[str, float]:
        """Turn game logs into training rows for the replay buffer of the role that moved.

        Positions with at most ``selfplay.solver_depth`` empty cells get exact solver
        targets. With ``selfplay.solver_process`` the solver works in its process while
        training goes on, and the rows join the buffers at the next :meth:`flush` (the
        next iteration's, or the next checkpoint's); otherwise they are solved here.
        ``solver_depth`` overrides ``selfplay.solver_depth``.
        """
        return self.store_rows(TrainingRows.from_logs(logs, self.config.selfplay.length_weight), solver_depth)

    def store_rows(self, rows: "TrainingRows | None", solver_depth: int | None = None) -> dict[str, float]:
        """:meth:`store` for rows already gathered from game logs (None: no rows)."""
        cfg = self.config.selfplay
        depth = cfg.solver_depth if solver_depth is None else solver_depth
        if rows is None:
            return {}
        late = [i for i, s in enumerate(rows.states) if s.num_empty <= depth] if depth else []
        if not late:
            self._add(rows)
            return {}
        late_states = [rows.states[i] for i in late]
        candidates = [rows.favourite_moves(i, cfg.solver_candidates) for i in late] if cfg.solver_candidates else None
        args = (
            late_states, cfg.solver_node_limit, SOLVER_POLICY, candidates)
        if cfg.solver_process:
            self._pending.append((rows, late, self.solver.submit(*args)))
            return {"charts/solver_positions": float(len(late))}
        exact = solver_targets(*args, solver=self.local_solver)
        self._add_solved(rows, late, exact)
        return {"charts/solver_positions": float(len(late)), "charts/solver_values": float(len(exact.values))}

    def flush(self) -> dict[str, float]:
        """Wait for pending solver targets and add their rows to the replay buffers."""
        if not self._pending:
            return {}
        started = time.perf_counter()
        solved = 0
        for rows, late, pending in self._pending:
            exact = pending.result()
            self._add_solved(rows, late, exact)
            solved += len(exact.values)
        self._pending = []
        return {"charts/solver_values": float(solved), "charts/solver_wait_seconds": time.perf_counter() - started}

    def _add_solved(self, rows: "TrainingRows", late: list[int], exact: SolverTargets) -> None:
        """Put the solver's results into ``rows`` (positions ``late``) as the config says,
        then add the rows to the replay buffers."""
        cfg = self.config.selfplay
        rows.apply(late, exact, cfg.solver_policy_weights)
        self._add(rows)

    def _add(self, rows: "TrainingRows") -> None:
        """Add training rows to the replay buffer of the role that moved in each."""
        roles = np.array([s.to_play_index for s in rows.states])
        for index, role in enumerate(AGENTS):
            mine = roles == index
            self.replay[role].add(rows.planes[mine], rows.masks[mine], rows.policies[mine], rows.values[mine])

    def hunt_mistakes(self) -> dict[str, float]:
        """One round of ``mistakes``: each role's network plays greedy games
        against the opponents, and the losing move of each lost game that the solver (or,
        with ``mistakes.rollouts``, play-outs) can place joins that role's mistake positions
        (``orderchaos.arena.mistakes``)."""
        started = time.perf_counter()
        for net in self.nets.values():
            net.eval()
        rows, metrics = mistake_hunt_rows(self.evaluator, self.config.mistakes, self.rng, self.mistake_settings)
        return {**self.add_mistakes(rows, metrics), "charts/mistake_seconds": time.perf_counter() - started}

    def add_mistakes(self, rows: dict[str, tuple[np.ndarray, ...]], metrics: dict[str, float]) -> dict[str, float]:
        """Add a :func:`mistake_hunt_rows` result's rows to the mistake positions; its metrics, with how
        many each role keeps."""
        out = dict(metrics)
        for role in AGENTS:
            if role in rows:
                self.mistakes[role].add(*rows[role])
            out[f"{role}/mistakes/kept"] = float(len(self.mistakes[role]))
        return out

    def warm_up(self) -> dict[str, float]:
        """Fill the replay buffers from heuristic games and pre-train both networks."""
        cfg = self.config.selfplay
        started = time.perf_counter()
        logs = play_heuristic_games(cfg.warmup_games, WARMUP_OPENINGS, self.rng)
        stats = self.store(logs, cfg.solver_depth if cfg.warmup_solver_depth < 0 else cfg.warmup_solver_depth)
        stats.update(self.flush())
        metrics = {"charts/warmup_positions": float(sum(len(log.states) for log in logs)), **stats}
        for role in AGENTS:
            metrics.update(self.train_role(role, cfg.warmup_updates))
        metrics["charts/warmup_seconds"] = time.perf_counter() - started
        return metrics

    def train_role(self, role: str, updates: int | None = None) -> dict[str, float]:
        """``updates`` (default ``optim.updates_per_iteration``) gradient steps of ``role``'s
        network on its replay buffer; nothing until it holds ``replay.min_positions`` rows."""
        cfg = self.config
        updates = cfg.optim.updates_per_iteration if updates is None else updates
        buffer, mistakes = self.replay[role], self.mistakes[role]
        if len(buffer) < cfg.replay.min_positions or updates == 0:
            return {}
        from_mistakes = 0
        settings = self.mistake_settings
        if len(mistakes) >= settings.min_rows:
            from_mistakes = min(cfg.optim.batch_size - 1, int(round(settings.fraction * cfg.optim.batch_size)))
        net, opt = self.nets[role], self.optimizers[role]
        net.train()
        totals = np.zeros(3)
        for _ in range(updates):
            planes, masks, targets, values = buffer.sample(cfg.optim.batch_size - from_mistakes, self.rng)
            if from_mistakes:
                extra = mistakes.sample(from_mistakes, self.rng)
                planes, masks, targets, values = (
                    np.concatenate(pair) for pair in zip((planes, masks, targets, values), extra)
                )
            x = torch.from_numpy(planes).to(self.device)
            m = torch.from_numpy(masks).to(self.device).bool()
            pi = torch.from_numpy(targets).to(self.device)
            z = torch.from_numpy(values).to(self.device)
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                logits, v = net(x)
            logits, v = logits.float(), v.float()  # no-ops in float32 (the CPU path)
            logp = masked_log_softmax(logits, m).masked_fill(~m, 0.0)
            policy_loss = -(pi * logp).sum(1).mean()
            value_loss = torch.mean((v - z) ** 2)
            loss = policy_loss + VALUE_WEIGHT * value_loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.optim.grad_clip:
                torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.optim.grad_clip)
            opt.step()
            with torch.no_grad():
                entropy = -(logp.exp() * logp).sum(1).mean()
            totals += (policy_loss.item(), value_loss.item(), entropy.item())
        policy_loss, value_loss, entropy = totals / updates
        return {
            f"{role}/losses/policy": policy_loss,
            f"{role}/losses/value": value_loss,
            f"{role}/losses/entropy": entropy,
            f"{role}/replay_size": float(len(buffer)),
        }

    def train_iteration(self) -> dict[str, float]:
        """Self-play one batch, then train both networks (after the warm-up, first time)."""
        metrics: dict[str, float] = {}
        if self.iteration == 0 and self.config.selfplay.warmup_games:
            metrics.update(self.warm_up())
        metrics.update(self.generate())
        mistakes_cfg = self.config.mistakes
        if mistakes_cfg.games and self.iteration % mistakes_cfg.interval == 0:
            metrics.update(self.hunt_mistakes())
        started = time.perf_counter()
        for role in AGENTS:
            metrics.update(self.train_role(role))
        metrics["charts/train_seconds"] = time.perf_counter() - started
        return metrics
