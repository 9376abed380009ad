"""AlphaZero-style self-play training of separate Order and Chaos networks.

Each iteration plays ``selfplay.games`` games at once. Every move of every game is chosen by
PUCT search (``agents.mcts.MCTS`` with a :class:`~agents.neural.NetworkEvaluator`, so each
simulation wave evaluates the leaves of all trees in one batch per role), with Dirichlet
noise at the root and a temperature for the first ``selfplay.temperature_moves`` plies.
A fraction of games can pit the networks against the heuristic agent in one seat.

Every position a network moved in becomes a training row for that role's network: the
visit distribution as policy target and the final outcome from the mover's view as value
target, or the exact solver value for positions with at most ``selfplay.solver_depth``
empty cells. Rows go to one replay buffer per role; training samples them with random
symmetry augmentation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from agents.base import Agent
from agents.network import masked_log_softmax
from agents.neural import NetworkEvaluator, sample_from
from envs.encoding import action_mask, encode_states
from envs.rules import ACTIONS, AGENTS, State
from train.replay import ReplayBuffer
from train.solver_targets import SolverTargets, SolverWorker, solver_targets
from train.trainer import Trainer


@dataclass
class GameLog:
    """The network-played positions of one self-play game and their search policies."""

    states: list[State] = field(default_factory=list)
    policies: list[np.ndarray] = field(default_factory=list)
    winner: str | None = None
    length: int = 0


def value_targets(log: GameLog) -> np.ndarray:
    """The final outcome from the view of the player to move in each logged position."""
    return np.array([1.0 if log.winner == s.to_play else -1.0 for s in log.states], np.float32)


def play_selfplay_games(
    evaluator: NetworkEvaluator,
    n_games: int,
    *,
    simulations: int,
    c_puct: float,
    dirichlet_alpha: float,
    dirichlet_fraction: float,
    temperature: float,
    temperature_moves: int,
    rng: np.random.Generator,
    opponents: dict[int, tuple[int, Agent]] | None = None,
    target_temperature: float = 1.0,
) -> list[GameLog]:
    """Play ``n_games`` games in lockstep with batched PUCT search for every network move.

    ``opponents`` maps a game index to ``(seat, agent)``: in that game the agent plays seat
    0 (Order) or 1 (Chaos) and only the network's positions are logged. Logged policies are
    the search's ``policy(target_temperature)``.
    """
    from agents.mcts import MCTS

    opponents = opponents or {}
    search = MCTS(
        evaluator,
        simulations=simulations,
        c=c_puct,
        use_priors=True,
        dirichlet_alpha=dirichlet_alpha if dirichlet_alpha > 0 else None,
        dirichlet_fraction=dirichlet_fraction,
        seed=int(rng.integers(2**31)),
    )
    states = [State() for _ in range(n_games)]
    logs = [GameLog() for _ in range(n_games)]
    active = list(range(n_games))
    ply = 0
    while active:
        by_network = [g for g in active if opponents.get(g, (None,))[0] != states[g].to_play_index]
        results = search.search_batch([states[g] for g in by_network], add_noise=True) if by_network else []
        moves: dict[int, int] = {}
        temp = temperature if ply < temperature_moves else 0.0
        for g, result in zip(by_network, results):
            # visit distribution; for a proven win, uniform over the proven winning moves; a
            # proven loss stops the search early, so its few visits carry no policy signal and
            # the row trains the value only (an all-zero policy target adds no policy loss)
            if result.proven == "loss":
                target = np.zeros(ACTIONS, np.float32)
            else:
                target = np.asarray(result.policy(target_temperature), dtype=np.float32)
            logs[g].states.append(states[g])
            logs[g].policies.append(target)
            if temp == 0 or result.proven is not None:
                moves[g] = int(result.best_action)
            else:
                moves[g] = sample_from(np.asarray(result.policy(1.0), dtype=np.float64), temp, rng)
        lost = [g for g, result in zip(by_network, results) if result.proven == "loss"]
        if lost:  # every move loses against best play: take the network's favourite, which
            # resists fallible opponents better than an arbitrary (maybe suicidal) move
            priors, _ = evaluator.evaluate([states[g] for g in lost])
            for g, prior in zip(lost, priors):
                moves[g] = int(np.argmax(prior))
        for g in active:
            if g not in moves:
                moves[g] = opponents[g][1].act(states[g])
        still = []
        for g in active:
            states[g] = states[g].apply(moves[g])
            if states[g].is_terminal:
                logs[g].winner = states[g].winner
                logs[g].length = states[g].num_stones
            else:
                still.append(g)
        active = still
        ply += 1
    return logs


def play_heuristic_games(n_games: int, openings: int, rng: np.random.Generator) -> list[GameLog]:
    """``n_games`` games of the heuristic agent against itself, each after ``openings``
    uniformly random plies that do not end the game. The heuristic's positions are logged
    with its move as a one-hot policy."""
    from agents.registry import make

    logs = []
    for _ in range(n_games):
        agent = make("heuristic", seed=int(rng.integers(2**31)))
        state, log = State(), GameLog()
        for _ in range(openings):
            quiet = [a for a in state.legal_actions() if not state.apply_unchecked(a).is_terminal]
            if not quiet:
                break
            state = state.apply_unchecked(int(rng.choice(quiet)))
        while not state.is_terminal:
            action = agent.act(state)
            target = np.zeros(ACTIONS, np.float32)
            target[action] = 1.0
            log.states.append(state)
            log.policies.append(target)
            state = state.apply(action)
        log.winner, log.length = state.winner, state.num_stones
        logs.append(log)
    return logs


class AlphaZeroTrainer(Trainer):
    """PUCT self-play + replay + policy/value regression, one network per role."""

    algorithm = "alphazero"

    def __init__(self, config: Any, run_dir: Any) -> None:
        super().__init__(config, run_dir)
        self.replay = {role: ReplayBuffer(config.replay.capacity) for role in AGENTS}
        self.evaluator = NetworkEvaluator(self.nets, device=self.device)
        self.solver = SolverWorker()

    def close(self) -> None:
        """Stop the solver worker."""
        self.solver.close()

    def extra_state(self) -> dict[str, Any]:
        """The replay buffers."""
        return {"replay": {role: buf.state_dict() for role, buf in self.replay.items()}}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore the replay buffers."""
        for role, buf in self.replay.items():
            buf.load_state_dict(state["replay"][role])

    def _opponents(self, n_games: int) -> dict[int, tuple[int, Agent]]:
        from agents.registry import make

        count = int(round(self.config.selfplay.heuristic_fraction * n_games))
        seed = int(self.rng.integers(2**31))
        return {g: (g % 2, make("heuristic", seed=seed + g)) for g in range(count)}

    def generate(self) -> dict[str, float]:
        """Play one batch of self-play games into the replay buffers; returns statistics."""
        cfg = self.config
        for net in self.nets.values():
            net.eval()
        started = time.perf_counter()
        logs = play_selfplay_games(
            self.evaluator,
            cfg.selfplay.games,
            simulations=cfg.mcts.simulations,
            c_puct=cfg.mcts.c_puct,
            dirichlet_alpha=cfg.mcts.dirichlet_alpha,
            dirichlet_fraction=cfg.mcts.dirichlet_fraction,
            temperature=cfg.selfplay.temperature,
            temperature_moves=cfg.selfplay.temperature_moves,
            rng=self.rng,
            opponents=self._opponents(cfg.selfplay.games),
            target_temperature=cfg.selfplay.target_temperature,
        )
        play_seconds = time.perf_counter() - started
        stats = self.store(logs)
        if cfg.selfplay.imitation_games:
            imitation = play_heuristic_games(cfg.selfplay.imitation_games, cfg.selfplay.warmup_openings, self.rng)
            for log in imitation:
                keep = [i for i, s in enumerate(log.states) if s.to_play in cfg.selfplay.imitation_roles]
                log.states = [log.states[i] for i in keep]
                log.policies = [log.policies[i] for i in keep]
            stats["charts/imitation_solver_values"] = self.store(imitation).get("charts/solver_values", 0.0)
        self.games_played += len(logs)
        order_wins = sum(log.winner == "order" for log in logs)
        return {
            **stats,
            "charts/games_per_sec": len(logs) / play_seconds,
            "charts/SPS": sum(log.length for log in logs) / play_seconds,
            "charts/selfplay_order_winrate": order_wins / len(logs),
            "charts/mean_game_length": float(np.mean([log.length for log in logs])),
            "charts/games_played": float(self.games_played),
        }

    def store(self, logs: list[GameLog]) -> dict[str, float]:
        """Turn game logs into training rows (solver targets where configured) and add them
        to the replay buffer of the role that moved."""
        cfg = self.config
        started = time.perf_counter()
        states = [s for log in logs for s in log.states]
        if not states:
            return {}
        policies = np.stack([p for log in logs for p in log.policies])
        values = np.concatenate([value_targets(log) for log in logs])
        solved = 0
        if cfg.selfplay.solver_depth:
            late = [i for i, s in enumerate(states) if s.num_empty <= cfg.selfplay.solver_depth]
            solve = self.solver.targets if cfg.selfplay.solver_process else solver_targets
            exact = solve([states[i] for i in late], cfg.selfplay.solver_node_limit, cfg.selfplay.solver_policy)
            for j, v in exact.values.items():
                values[late[j]] = v
            for j, winning in exact.winning_moves.items():
                policies[late[j]] = 0.0
                policies[late[j], winning] = 1.0 / len(winning)
            solved = len(exact.values)
        planes = encode_states(states)
        masks = np.stack([action_mask(s) for s in states])
        roles = np.array([s.to_play_index for s in states])
        for index, role in enumerate(AGENTS):
            rows = roles == index
            self.replay[role].add(planes[rows], masks[rows], policies[rows], values[rows])
        return {"charts/solver_values": float(solved), "charts/store_seconds": time.perf_counter() - started}

    def warm_up(self) -> dict[str, float]:
        """Fill the replay buffers from heuristic games and pre-train both networks."""
        cfg = self.config.selfplay
        started = time.perf_counter()
        logs = play_heuristic_games(cfg.warmup_games, cfg.warmup_openings, self.rng)
        stats = self.store(logs)
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
        buffer = self.replay[role]
        if len(buffer) < cfg.replay.min_positions or updates == 0:
            return {}
        net, opt = self.nets[role], self.optimizers[role]
        net.train()
        totals = np.zeros(3)
        for _ in range(updates):
            planes, masks, targets, values = buffer.sample(cfg.optim.batch_size, self.rng, cfg.replay.augment)
            x = torch.from_numpy(planes).to(self.device)
            m = torch.from_numpy(masks).to(self.device).bool()
            pi = torch.from_numpy(targets).to(self.device)
            z = torch.from_numpy(values).to(self.device)
            logits, v = net(x)
            logp = masked_log_softmax(logits, m).masked_fill(~m, 0.0)
            policy_loss = -(pi * logp).sum(1).mean()
            value_loss = torch.mean((v - z) ** 2)
            loss = policy_loss + cfg.optim.value_weight * value_loss
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
        started = time.perf_counter()
        for role in AGENTS:
            metrics.update(self.train_role(role))
        metrics["charts/train_seconds"] = time.perf_counter() - started
        return metrics
