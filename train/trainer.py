"""What every training algorithm shares: the run directory, the two role networks and their
optimisers, the iteration loop with time limit, checkpoints and resume, logging, and the
periodic evaluation against fixed opponents and the solver-labelled positions.

An algorithm subclasses :class:`Trainer` and implements :meth:`Trainer.train_iteration`
(returning the scalars to log) plus, for extra resumable state,
:meth:`Trainer.extra_state` / :meth:`Trainer.load_extra_state`.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from orderchaos.agents.network import PolicyValueNet, deepened, resolve_device
from orderchaos.agents.network_agent import NetworkEvaluator, NeuralAgent
from orderchaos.agents.policy_files import (
    CheckpointError,
    find_policy_dir,
    latest_checkpoint,
    load_latest_good_checkpoint,
    load_policy_dir,
    pretrained_dir,
    save_checkpoint,
)
from orderchaos.envs.rules import AGENTS
from orderchaos.files import check_output_dir
from orderchaos.train.config import NetworkConfig, TrainConfig, config_to_dict, save_config
from orderchaos.train.config_schema import EVAL_OPENINGS, WINDOW_FEATURES
from orderchaos.train.run_logger import RunLogger

CONFIG_FILE = "config.yaml"


def tag_name(spec: str) -> str:
    """An agent spec as a TensorBoard-safe tag fragment: ``mcts:sims=200`` -> ``mcts_sims200``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", spec.replace("=", "")).strip("_")


def evaluate_policies(
    nets: dict[str, PolicyValueNet],
    config: TrainConfig,
    seed: int,
    device: str | torch.device = "cpu",
) -> dict[str, float]:
    """Evaluate the networks alone (greedy, no search) and return ``eval/...`` scalars.

    For each opponent spec: ``eval/order_vs_<spec>_winrate`` (our Order against their Chaos)
    and ``eval/chaos_vs_<spec>_winrate`` (our Chaos's win rate against their Order); then the
    optimal-move accuracy on each shipped solver-labelled set (one per stage of the game,
    ``SHIPPED_SETS`` in :mod:`orderchaos.arena.positions`; the first
    ``eval.positions_limit`` positions of each when that is set): ``eval/accuracy_<set>``
    and per side to move ``eval/accuracy_<set>_order`` / ``_chaos`` for the sets ``12_18``,
    ``19_22``, ``23_26`` and ``27_30``, ``eval/accuracy_all`` over all of them pooled, and
    ``eval/positions_accuracy`` (and ``_order`` / ``_chaos``), which stays the 12-18 set's
    figure under its older tag name. A set file that is missing is skipped with a warning.
    """
    from orderchaos.arena.matches import play_match
    from orderchaos.arena.positions import SHIPPED_SETS, pooled_accuracy, stage_accuracies

    cfg = config.eval
    evaluator = NetworkEvaluator(nets, device=device)
    agent = NeuralAgent(evaluator, sims=0, temp=0.0, seed=seed, name="trained")
    out: dict[str, float] = {}
    for k, spec in enumerate(cfg.opponents):
        name = tag_name(spec)
        as_order = play_match(agent, spec, cfg.games, seed=seed + 2 * k, openings=EVAL_OPENINGS)
        as_chaos = play_match(spec, agent, cfg.games, seed=seed + 2 * k + 1, openings=EVAL_OPENINGS)
        out[f"eval/order_vs_{name}_winrate"] = as_order.order_win_rate
        out[f"eval/chaos_vs_{name}_winrate"] = 1.0 - as_chaos.order_win_rate
    sets = {}
    for name, path in SHIPPED_SETS.items():
        if Path(path).is_file():
            sets[name] = path
        else:
            warnings.warn(f"positions accuracy on {name} skipped: {path} is missing", stacklevel=2)
    results = stage_accuracies(agent, sets, seed=seed, limit=cfg.positions_limit) if sets else {}
    for name, result in results.items():
        out[f"eval/accuracy_{name}"] = result.accuracy
        for side, stats in result.by_side.items():
            if stats["positions"]:
                out[f"eval/accuracy_{name}_{side}"] = float(stats["accuracy"])
    if results:
        out["eval/accuracy_all"] = pooled_accuracy(list(results.values())).accuracy
    # The older tag name of the 12-18 set's figure, so that older runs' curves go on.
    for suffix in ("", "_order", "_chaos"):
        if f"eval/accuracy_12_18{suffix}" in out:
            out[f"eval/positions_accuracy{suffix}"] = out[f"eval/accuracy_12_18{suffix}"]
    return out


def build_network(net_cfg: NetworkConfig) -> PolicyValueNet:
    """A freshly initialised policy-value network of the configured shape."""
    return PolicyValueNet(net_cfg.channels, net_cfg.blocks, net_cfg.value_hidden, WINDOW_FEATURES)


class Trainer:
    """Base class of the training algorithms; see the module docstring.

    Build it with :meth:`create` (a new run) or :meth:`resume` (continue a run directory).
    """

    algorithm = "base"

    def __init__(self, config: TrainConfig, run_dir: str | Path) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.device = resolve_device(config.device)
        if config.run.threads:
            torch.set_num_threads(config.run.threads)
        torch.manual_seed(config.seed)  # network initialisation only; all sampling uses self.rng
        self.rng = np.random.default_rng(config.seed)
        net_cfg = config.network
        self.nets = {role: build_network(net_cfg).to(self.device) for role in AGENTS}
        if net_cfg.init_from:
            self._init_from(net_cfg.init_from)
        self.optimizers = {
            role: torch.optim.AdamW(
                net.parameters(), lr=config.optim.lr, weight_decay=config.optim.weight_decay
            )
            for role, net in self.nets.items()
        }
        self.iteration = 0
        self.elapsed = 0.0
        self.games_played = 0
        self.network_evaluations = 0
        self.last_eval: dict[str, float] = {}

    def _init_from(self, source: str) -> None:
        """Copy the weights of the policy named by ``network.init_from`` into both networks."""
        try:
            where = pretrained_dir() if source == "pretrained" else find_policy_dir(source)
            nets, _ = load_policy_dir(where)
        except CheckpointError as exc:
            raise ValueError(f"network.init_from: {exc}") from None
        wanted = self.nets["order"].architecture()
        found = nets["order"].architecture()
        if {**found, "blocks": wanted["blocks"]} != wanted or found["blocks"] > wanted["blocks"]:
            raise ValueError(
                f"network.init_from: the policy in {str(where)!r} has network {found}, but this "
                f"config builds {wanted}; set the network section to match it (more blocks "
                f"than the policy's are accepted)"
            )
        for role in AGENTS:
            self.nets[role].load_state_dict(deepened(nets[role], wanted["blocks"]).state_dict())

    # -- construction ------------------------------------------------------------------
    @classmethod
    def create(cls, config: TrainConfig, run_dir: str | Path) -> "Trainer":
        """A new run in ``run_dir`` (created; refused if it already holds checkpoints)."""
        run_dir = Path(run_dir)
        if latest_checkpoint(run_dir) is not None:
            raise FileExistsError(
                f"run directory {str(run_dir)!r} already holds checkpoints; continue it with "
                f"--resume {run_dir} or choose another --run-dir"
            )
        check_output_dir(run_dir, "run directory")  # raises OutputPathError (a ValueError)
        trainer = cls(config, run_dir)  # first, so that a refused config writes nothing
        run_dir.mkdir(parents=True, exist_ok=True)
        save_config(config, run_dir / CONFIG_FILE)
        return trainer

    @classmethod
    def resume(cls, config: TrainConfig, run_dir: str | Path) -> "Trainer":
        """Continue ``run_dir`` from its latest checkpoint (from scratch if it has none yet)."""
        check_output_dir(run_dir, "run directory")
        trainer = cls(config, run_dir)
        save_config(config, Path(run_dir) / CONFIG_FILE)
        loaded = load_latest_good_checkpoint(run_dir, device=trainer.device)
        if loaded is None:
            return trainer
        for bad, reason in loaded.skipped:
            warnings.warn(f"skipping checkpoint {bad.name}: {reason}", stacklevel=2)
        if loaded.skipped:
            warnings.warn(f"resuming from {loaded.path.name}, the newest checkpoint that verifies",
                          stacklevel=2)
        checkpoint, nets, meta, state = loaded.path, loaded.nets, loaded.meta, loaded.trainer_state
        if meta.get("algorithm") != cls.algorithm:
            raise ValueError(
                f"checkpoint {checkpoint} was written by {meta.get('algorithm')!r}, not {cls.algorithm!r}"
            )
        for role in AGENTS:
            trainer.nets[role].load_state_dict(nets[role].state_dict())
        if state is not None:
            trainer.load_state(state)
        else:
            trainer.iteration = int(meta["step"])
        return trainer

    # -- state -------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Everything needed to continue: optimisers, counters, RNG, algorithm extras."""
        return {
            "iteration": self.iteration,
            "elapsed": self.elapsed,
            "games_played": self.games_played,
            "network_evaluations": self.network_evaluations,
            "optimizers": {r: opt.state_dict() for r, opt in self.optimizers.items()},
            "rng": self.rng.bit_generator.state,
            "last_eval": self.last_eval,
            "extra": self.extra_state(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state`."""
        self.iteration = int(state["iteration"])
        self.elapsed = float(state["elapsed"])
        self.games_played = int(state["games_played"])
        self.network_evaluations = int(state.get("network_evaluations", 0))
        for role, opt in self.optimizers.items():
            opt.load_state_dict(state["optimizers"][role])
        self.rng.bit_generator.state = state["rng"]
        self.last_eval = dict(state.get("last_eval", {}))
        self.load_extra_state(state["extra"])

    def close(self) -> None:
        """Release algorithm resources such as worker processes (override)."""

    def extra_state(self) -> dict[str, Any]:
        """Algorithm-specific resumable state (override)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`extra_state` (override)."""

    # -- the loop ----------------------------------------------------------------------
    def train_iteration(self) -> dict[str, float]:
        """One iteration of the algorithm; returns the scalars to log."""
        raise NotImplementedError

    def learning_rate(self) -> float:
        """The learning rate for the current iteration under ``optim.lr_schedule``."""
        base = self.config.optim.lr
        if self.config.optim.lr_schedule == "cosine":
            frac = min(1.0, self.progress())
            return base * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))
        return base

    def progress(self) -> float:
        """How far the run is, 0..1: by iterations, or by time or network evaluations when
        such a limit comes first."""
        run = self.config.run
        frac = self.iteration / run.iterations
        if run.time_limit_minutes:
            frac = max(frac, self.elapsed / (run.time_limit_minutes * 60.0))
        if run.evaluation_budget:
            frac = max(frac, self.network_evaluations / run.evaluation_budget)
        return frac

    def set_learning_rate(self) -> float:
        """Apply :meth:`learning_rate` to both optimisers and return it."""
        lr = self.learning_rate()
        for opt in self.optimizers.values():
            for group in opt.param_groups:
                group["lr"] = lr
        return lr

    def checkpoint(self) -> Path:
        """Save the current networks and trainer state as the latest checkpoint."""
        meta = {"algorithm": self.algorithm, "config": config_to_dict(self.config), "games_played": self.games_played}
        return save_checkpoint(
            self.run_dir,
            self.iteration,
            self.nets,
            meta,
            self.state(),
            keep=self.config.run.keep_checkpoints,
        )

    def evaluate(self) -> dict[str, float]:
        """Run the configured evaluation now; the networks are left in training mode."""
        seed = self.config.seed * 1_000_003 + self.iteration
        metrics = evaluate_policies(self.nets, self.config, seed=seed, device=self.device)
        for net in self.nets.values():
            net.train()
        self.last_eval = metrics
        return metrics

    def exploit(self) -> dict[str, float]:
        """The exact exploit figure of the Order network now (:mod:`.exploit_probe`); the
        networks are left in training mode."""
        from orderchaos.train.exploit_probe import exploit_scalars

        budget = self.config.eval.exploit_max_positions
        metrics = exploit_scalars(self.nets, device=self.device, max_positions=budget)
        for net in self.nets.values():
            net.train()
        return metrics

    def fit(self) -> dict[str, float]:
        """Train until ``run.iterations`` or the time limit; checkpoint every
        ``run.checkpoint_interval`` iterations and at the end; evaluate and walk the exploit
        figure at their intervals and at the end. Returns the last evaluation's scalars.

        A periodic checkpoint is written after that iteration's evaluation and walk, so a run
        killed during one resumes from the checkpoint before and does it again."""
        cfg = self.config
        logger = RunLogger(
            self.run_dir, config_to_dict(cfg), self.progress(), self.iteration, cfg.run.progress
        )
        evaluated_at = walked_at = -1
        try:
            logger.message(f"{self.algorithm} run in {self.run_dir} from iteration {self.iteration}")
            while self.progress() < 1.0:
                started = time.perf_counter()
                lr = self.set_learning_rate()
                metrics = self.train_iteration()
                self.iteration += 1
                self.elapsed += time.perf_counter() - started
                metrics["charts/learning_rate"] = lr
                metrics["charts/elapsed_minutes"] = self.elapsed / 60.0
                logger.scalars(metrics, self.iteration)
                logger.show(**self.progress_fields(metrics))
                logger.set_progress(self.progress())
                if cfg.eval.enabled and cfg.eval.interval and self.iteration % cfg.eval.interval == 0:
                    self._evaluate_and_log(logger)
                    evaluated_at = self.iteration
                if cfg.eval.exploit_interval and self.iteration % cfg.eval.exploit_interval == 0:
                    logger.scalars(self.exploit(), self.iteration)
                    walked_at = self.iteration
                if self.iteration % cfg.run.checkpoint_interval == 0:
                    self.checkpoint()
            if cfg.eval.enabled and evaluated_at != self.iteration:
                self._evaluate_and_log(logger)
            if cfg.eval.exploit_interval and walked_at != self.iteration:
                logger.scalars(self.exploit(), self.iteration)
            self.checkpoint()
            logger.message(f"finished at iteration {self.iteration} ({self.elapsed / 60:.1f} min)")
        finally:
            logger.close()
            self.close()
        return self.last_eval

    def _evaluate_and_log(self, logger: RunLogger) -> None:
        metrics = self.evaluate()
        logger.scalars(metrics, self.iteration)
        summary = " ".join(f"{k.removeprefix('eval/')}={v:.3f}" for k, v in metrics.items())
        logger.message(f"eval @ {self.iteration}: {summary}")
        # The bar shows the accuracy over every stage pooled (the 12-18 set alone is near 1.0
        # for a decent policy) and the hardest, earliest stage's.
        if "eval/accuracy_all" in metrics:
            logger.show(acc=metrics["eval/accuracy_all"])
        if "eval/accuracy_27_30" in metrics:
            logger.show(acc27=metrics["eval/accuracy_27_30"])

    def progress_fields(self, metrics: dict[str, float]) -> dict[str, float | int]:
        """What the progress bar shows after an iteration."""
        shown = {
            "it": self.iteration,
            "min": self.elapsed / 60.0,
            "games/s": metrics.get("charts/games_per_sec", 0.0),
            "Lp_o": metrics.get("order/losses/policy", float("nan")),
            "Lv_o": metrics.get("order/losses/value", float("nan")),
            "Lp_c": metrics.get("chaos/losses/policy", float("nan")),
            "Lv_c": metrics.get("chaos/losses/value", float("nan")),
        }
        return {k: v for k, v in shown.items() if not math.isnan(v)}

