"""Masked-action PPO self-play with an opponent pool: a model-free baseline.

Each iteration trains both roles in turn. For the learning role, ``ppo.games`` games are
played against the other role's current network or, with probability
``1 - PPO_LATEST_FRACTION``, a snapshot from that role's pool of past networks. The
learner samples from its masked policy; the opponent too. The learner's moves are its
transitions; the only reward is the game result (+1/-1) on its last move. Advantages use
GAE over the learner's own moves, then clipped-ratio PPO updates the learner's network
(its value head as critic). Every ``ppo.snapshot_interval`` iterations both networks join
their pools (at most ``ppo.pool_size`` each, oldest dropped).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from orderchaos.agents.network import PolicyValueNet, masked_log_softmax
from orderchaos.envs.encoding import action_mask, encode_states
from orderchaos.envs.rules import AGENTS, State
from orderchaos.train.config_schema import (
    PPO_CLIP,
    PPO_ENTROPY_COEF,
    PPO_GAE_LAMBDA,
    PPO_GAMMA,
    PPO_LATEST_FRACTION,
    PPO_VALUE_COEF,
)
from orderchaos.train.trainer import Trainer, build_network


@dataclass
class Rollout:
    """The learner's transitions of one batch of games, with GAE advantages and returns."""

    planes: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    log_probs: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray
    learner_wins: int
    games: int
    moves: int


def sample_rows(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One sampled column per row of a (B, K) probability matrix (inverse CDF; columns with
    zero probability are never chosen)."""
    cdf = np.cumsum(probs, axis=1)
    u = rng.random(len(probs)) * cdf[:, -1]
    return np.argmax(cdf > u[:, None], axis=1)


def gae(rewards: np.ndarray, values: np.ndarray, gamma: float, lam: float) -> np.ndarray:
    """Generalised advantage estimates for one episode (next value 0 after the last step)."""
    adv = np.zeros(len(rewards), np.float32)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        next_value = values[t + 1] if t + 1 < len(rewards) else 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        running = delta + gamma * lam * running
        adv[t] = running
    return adv


def _policy_step(net: PolicyValueNet, states: list[State], device: torch.device) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    planes = encode_states(states)
    masks = np.stack([action_mask(s) for s in states])
    with torch.inference_mode():
        logits, values = net(torch.from_numpy(planes).to(device))
        probs = masked_log_softmax(logits, torch.from_numpy(masks).to(device)).exp()
    return planes, masks, probs.double().cpu().numpy(), values.cpu().numpy()


def collect_rollout(
    learner: PolicyValueNet,
    opponent: PolicyValueNet,
    learner_seat: int,
    n_games: int,
    rng: np.random.Generator,
    device: torch.device,
) -> Rollout:
    """Play ``n_games`` games, learner in seat ``learner_seat`` (0 Order, 1 Chaos); the
    learner's advantages by :func:`gae` with :data:`PPO_GAMMA` and :data:`PPO_GAE_LAMBDA`."""
    learner.eval()
    opponent.eval()
    states = [State() for _ in range(n_games)]
    steps: list[list[tuple[np.ndarray, np.ndarray, int, float, float]]] = [[] for _ in range(n_games)]
    active = list(range(n_games))
    while active:
        # all active games have the same stone count, so one side is to move everywhere
        seat = states[active[0]].to_play_index
        net = learner if seat == learner_seat else opponent
        planes, masks, probs, values = _policy_step(net, [states[g] for g in active], device)
        actions = sample_rows(probs, rng)
        still = []
        for row, g in enumerate(active):
            a = int(actions[row])
            if seat == learner_seat:
                logp = float(np.log(probs[row, a]))
                steps[g].append((planes[row], masks[row], a, logp, float(values[row])))
            states[g] = states[g].apply(a)
            if not states[g].is_terminal:
                still.append(g)
        active = still
    rows: list[tuple[np.ndarray, np.ndarray, int, float]] = []
    advantages, returns = [], []
    wins = 0
    for g in range(n_games):
        won = states[g].winner == AGENTS[learner_seat]
        wins += won
        if not steps[g]:
            continue
        values = np.array([s[4] for s in steps[g]], np.float32)
        rewards = np.zeros(len(values), np.float32)
        rewards[-1] = 1.0 if won else -1.0
        adv = gae(rewards, values, PPO_GAMMA, PPO_GAE_LAMBDA)
        advantages.append(adv)
        returns.append(adv + values)
        rows.extend((s[0], s[1], s[2], s[3]) for s in steps[g])
    return Rollout(
        planes=np.stack([r[0] for r in rows]),
        masks=np.stack([r[1] for r in rows]),
        actions=np.array([r[2] for r in rows], np.int64),
        log_probs=np.array([r[3] for r in rows], np.float32),
        advantages=np.concatenate(advantages),
        returns=np.concatenate(returns),
        learner_wins=wins,
        games=n_games,
        moves=sum(s.num_stones for s in states),
    )


class PPOTrainer(Trainer):
    """PPO self-play of one network per role against pools of past opponents."""

    algorithm = "ppo"

    def __init__(self, config: Any, run_dir: Any) -> None:
        super().__init__(config, run_dir)
        self.pool: dict[str, list[dict[str, torch.Tensor]]] = {role: [] for role in AGENTS}
        net_cfg = config.network
        self.opponent = build_network(net_cfg).to(self.device)

    def extra_state(self) -> dict[str, Any]:
        """The opponent pools."""
        return {"pool": self.pool}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore the opponent pools."""
        self.pool = {role: list(state["pool"][role]) for role in AGENTS}

    def _pick_opponent(self, role: str) -> PolicyValueNet:
        pool = self.pool[role]
        if not pool or self.rng.random() < PPO_LATEST_FRACTION:
            return self.nets[role]
        self.opponent.load_state_dict(pool[int(self.rng.integers(len(pool)))])
        return self.opponent

    def update(self, role: str, rollout: Rollout) -> dict[str, float]:
        """Clipped PPO epochs over the rollout for ``role``'s network."""
        cfg = self.config.ppo
        net, opt = self.nets[role], self.optimizers[role]
        net.train()
        dev = self.device
        planes = torch.from_numpy(rollout.planes).to(dev)
        masks = torch.from_numpy(rollout.masks).to(dev).bool()
        actions = torch.from_numpy(rollout.actions).to(dev)
        old_logp = torch.from_numpy(rollout.log_probs).to(dev)
        adv = torch.from_numpy(rollout.advantages).to(dev)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(adv) > 1 else adv
        returns = torch.from_numpy(rollout.returns).to(dev)
        n = len(actions)
        totals = np.zeros(5)
        steps = 0
        for _ in range(cfg.epochs):
            order = self.rng.permutation(n)
            for start in range(0, n, cfg.minibatch):
                idx = torch.from_numpy(order[start : start + cfg.minibatch]).to(dev)
                logits, values = net(planes[idx])
                logp_all = masked_log_softmax(logits, masks[idx])
                logp = logp_all.gather(1, actions[idx, None]).squeeze(1)
                ratio = torch.exp(logp - old_logp[idx])
                a = adv[idx]
                policy_loss = -torch.min(ratio * a, ratio.clamp(1 - PPO_CLIP, 1 + PPO_CLIP) * a).mean()
                value_loss = torch.mean((values - returns[idx]) ** 2)
                safe = logp_all.masked_fill(~masks[idx], 0.0)
                entropy = -(safe.exp() * safe).sum(1).mean()
                loss = policy_loss + PPO_VALUE_COEF * value_loss - PPO_ENTROPY_COEF * entropy
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if self.config.optim.grad_clip:
                    torch.nn.utils.clip_grad_norm_(net.parameters(), self.config.optim.grad_clip)
                opt.step()
                with torch.no_grad():
                    approx_kl = (old_logp[idx] - logp).mean()
                    clipped = ((ratio - 1).abs() > PPO_CLIP).float().mean()
                totals += (policy_loss.item(), value_loss.item(), entropy.item(), approx_kl.item(), clipped.item())
                steps += 1
        p, v, e, kl, cf = totals / max(1, steps)
        return {
            f"{role}/losses/policy": p,
            f"{role}/losses/value": v,
            f"{role}/losses/entropy": e,
            f"{role}/losses/approx_kl": kl,
            f"{role}/losses/clipfrac": cf,
        }

    def train_iteration(self) -> dict[str, float]:
        """Roll out and update each role in turn; snapshot into the pools at intervals."""
        cfg = self.config.ppo
        metrics: dict[str, float] = {}
        games = moves = 0
        play_seconds = 0.0
        for seat, role in enumerate(AGENTS):
            other = AGENTS[1 - seat]
            started = time.perf_counter()
            rollout = collect_rollout(
                self.nets[role], self._pick_opponent(other), seat, cfg.games, self.rng, self.device
            )
            play_seconds += time.perf_counter() - started
            games += rollout.games
            moves += rollout.moves
            metrics[f"{role}/rollout_winrate"] = rollout.learner_wins / rollout.games
            metrics.update(self.update(role, rollout))
        self.games_played += games
        if (self.iteration + 1) % cfg.snapshot_interval == 0:
            for role in AGENTS:
                snapshot = copy.deepcopy({k: v.detach().cpu() for k, v in self.nets[role].state_dict().items()})
                self.pool[role] = (self.pool[role] + [snapshot])[-cfg.pool_size :]
        metrics["charts/games_per_sec"] = games / play_seconds
        metrics["charts/SPS"] = moves / play_seconds
        metrics["charts/games_played"] = float(self.games_played)
        metrics["charts/pool_size"] = float(len(self.pool["order"]))
        return metrics
