"""Distributed self-play on Ray (``run.backend: ray``): the one module that imports ray.

Layout (after muzero-general's actors, with its memory kept bounded):

* **Self-play actors** (``run.actors``), each holding both role networks on CPU, play
  their share of an iteration's ``selfplay.games`` (and ``imitation_games``) with the batch
  engine and batched PUCT: :func:`orderchaos.train.selfplay.play_training_games`, the
  same function the local backend uses. They return compact game records: numpy arrays of
  bitboards, planes, masks and targets (:func:`pack_games`), never Python objects per move.
* **The learner** stays in the driver (on CUDA when ``device`` says so), owns the replay
  buffers and the mistake positions, trains, checkpoints and evaluates as the local trainer
  does. New weights are published once per iteration with a single ``ray.put``; every actor
  reads that one object.
* **Solver targets** are computed by a :class:`orderchaos.agents.solver_pool.SolverPool` of
  ``selfplay.solver_workers`` Ray actors instead of local worker processes; **the mistake hunt** (``mistakes``) runs on its own actor, overlapping
  the learner's training, and its rows join the learner one iteration later (or at the next
checkpoint, which waits for them).
* **Bounded memory**: a local instance gets an object store of ``run.object_store_mb``;
  at most ``run.actors x RAY_INFLIGHT`` (2) game batches (and as many weight objects) are
  unread at any time, whatever the number of actors.

``run.sync: true`` (the default): the learner waits for each iteration's games, all played
with its newest weights from seeds drawn from the run's generator, so a run with a fixed
``run.actors`` is reproducible from its seed (a lost batch, of course, breaks that).
``run.sync: false``: actors keep ``RAY_INFLIGHT`` (2) batches queued and go on playing while
the learner trains; each iteration takes the first ``run.actors`` batches that finish
(played with weights up to a few iterations old: ``charts/weights_lag``). Faster, not
reproducible.

Faults: an actor whose process dies is restarted by Ray (``max_restarts``) and its batch
replayed once (``max_task_retries``: same weights and seed, so even sync mode stays
reproducible), with a warning; a batch whose replay dies too, or that raised an exception,
is lost with a warning (``RayActorError`` / ``RayTaskError``), and the run goes on. A killed driver
resumes with ``--resume`` as ever (the checkpoints are the local backend's). A wrong or
unreachable ``run.ray_address`` gives one error after at most :data:`CONNECT_TIMEOUT_S`.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from typing import Any

import numpy as np
import ray
import torch
from ray.exceptions import RayError

from orderchaos.agents.network_agent import NetworkEvaluator
from orderchaos.envs.encoding import OBS_SHAPE
from orderchaos.envs.rules import ACTIONS, AGENTS, State
from orderchaos.ray_setup import CONNECT_TIMEOUT_S, RayBackendError, connect_ray, shutdown_ray  # noqa: F401 (re-exported)
from orderchaos.train.alphazero import AlphaZeroTrainer, MistakeSettings, TrainingRows, mistake_hunt_rows
from orderchaos.train.selfplay import SelfPlayGame, play_training_games
from orderchaos.train.config import TrainConfig, config_from_dict, config_to_dict
from orderchaos.train.config_schema import COMPILED_INFERENCE, RAY_INFLIGHT
from orderchaos.train.solver_targets import SolverWorker
from orderchaos.train.trainer import build_network

MAX_CONSECUTIVE_FAILURES = 5
"""Batches in a row an actor may lose before the run stops (a crash loop, not bad luck)."""


# ---------------------------------------------------------------------------------------
# Compact records: what travels between actors and the learner.
# ---------------------------------------------------------------------------------------


def pack_games(logs: list[SelfPlayGame], imitation: list[SelfPlayGame]) -> dict[str, np.ndarray]:
    """The training rows of ``logs`` and ``imitation`` (in that order) as arrays: bitboards
    ``x``/``o`` (int64), ``planes``, ``masks``, ``policies``, ``values``, and per self-play
    game its ``winners`` (0 Order, 1 Chaos) and ``lengths``."""
    rows = TrainingRows.from_logs(logs + imitation)
    if rows is None:
        record = {
            "x": np.zeros(0, np.int64),
            "o": np.zeros(0, np.int64),
            "planes": np.zeros((0, *OBS_SHAPE), np.int8),
            "masks": np.zeros((0, ACTIONS), np.int8),
            "policies": np.zeros((0, ACTIONS), np.float32),
            "values": np.zeros(0, np.float32),
        }
    else:
        record = {
            "x": np.array([s.x for s in rows.states], np.int64),
            "o": np.array([s.o for s in rows.states], np.int64),
            "planes": rows.planes,
            "masks": rows.masks,
            "policies": rows.policies,
            "values": rows.values,
        }
    record["winners"] = np.array([AGENTS.index(log.winner) for log in logs], np.int8)
    record["lengths"] = np.array([log.length for log in logs], np.int16)
    return record


def unpack_rows(records: list[dict[str, np.ndarray]]) -> TrainingRows | None:
    """The training rows of ``records`` in order (None when they hold none)."""
    records = [r for r in records if len(r["values"])]
    if not records:
        return None

    def cat(key: str) -> np.ndarray:
        return np.concatenate([r[key] for r in records])

    x, o = cat("x"), cat("o")
    return TrainingRows(
        states=[State(int(a), int(b)) for a, b in zip(x, o)],
        planes=cat("planes"),
        masks=cat("masks"),
        policies=cat("policies").copy(),  # object-store arrays are read-only; solver targets write
        values=cat("values").copy(),
    )


def weights_of(nets: dict[str, torch.nn.Module]) -> dict[str, dict[str, np.ndarray]]:
    """Both networks' state dicts as CPU numpy arrays (read zero-copy from the object store)."""
    return {
        role: {k: v.detach().cpu().numpy() for k, v in net.state_dict().items()}
        for role, net in nets.items()
    }


def load_weights(nets: dict[str, torch.nn.Module], weights: dict[str, dict[str, np.ndarray]]) -> None:
    """Copy :func:`weights_of` arrays into ``nets``."""
    for role, net in nets.items():
        net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights[role].items()})
        net.eval()


# ---------------------------------------------------------------------------------------
# Actors and tasks.
# ---------------------------------------------------------------------------------------


class SelfPlayActor:
    """Both role networks on CPU; plays batches of games (and mistake hunts) with the
    weights it is handed. Holds no state that a restart could lose beyond a cache."""

    def __init__(self, config: dict[str, Any]) -> None:
        torch.set_num_threads(1)  # one core per actor: more intra-op threads only contend
        self.config: TrainConfig = config_from_dict(config)
        self.nets = {role: build_network(self.config.network) for role in AGENTS}
        self.evaluator = NetworkEvaluator(
            self.nets, compiled=COMPILED_INFERENCE, precision=self.config.run.inference_precision
        )
        self.version = -1

    def pid(self) -> int:
        """The actor's process id (tests kill it)."""
        return os.getpid()

    def _use(self, weights: dict[str, dict[str, np.ndarray]], version: int) -> None:
        if version != self.version:
            load_weights(self.nets, weights)
            self.version = version

    def play(
        self, weights: dict, version: int, seed: int, games: int, imitation: int
    ) -> dict[str, Any]:
        """``games`` self-play and ``imitation`` imitation games with the weights of
        iteration ``version``, sampled from ``seed``: a :func:`pack_games` record plus
        ``version`` and the actor's ``seconds`` of self-play."""
        self._use(weights, version)
        logs, imitated, seconds = play_training_games(
            self.evaluator, self.config, games, imitation, np.random.default_rng(seed)
        )
        return {**pack_games(logs, imitated), "version": version, "seconds": seconds, "pid": os.getpid()}

    def hunt(self, weights: dict, version: int, seed: int, settings: MistakeSettings) -> tuple[dict, dict[str, float]]:
        """One :func:`mistake_hunt_rows` with the weights of iteration ``version``."""
        self._use(weights, version)
        started = time.perf_counter()
        rows, metrics = mistake_hunt_rows(self.evaluator, self.config.mistakes, np.random.default_rng(seed), settings)
        metrics["charts/mistake_seconds"] = time.perf_counter() - started
        return rows, metrics


# ---------------------------------------------------------------------------------------
# Connecting.
# ---------------------------------------------------------------------------------------


def connect(run: Any) -> bool:
    """Make sure this process is connected to Ray as ``run`` (a RunConfig) says
    (:func:`orderchaos.ray_setup.connect_ray`); True when this call started or joined it
    (the trainer disconnects at the end), False when the process was connected already (a
    notebook, the tests): then the connection is used as it is and left open. Raises
    :class:`RayBackendError` with one line on failure."""
    return connect_ray(
        run.ray_address,
        object_store_mb=run.object_store_mb,
        setting="run.ray_address",
        purpose="run.backend=ray",
    )


def _share(count: int, parts: int) -> list[int]:
    """``count`` dealt out as evenly as possible among ``parts``."""
    return [count // parts + (k < count % parts) for k in range(parts)]


# ---------------------------------------------------------------------------------------
# The trainer.
# ---------------------------------------------------------------------------------------


class RayAlphaZeroTrainer(AlphaZeroTrainer):
    """:class:`AlphaZeroTrainer` with self-play, solver targets and the mistake hunt on
    Ray (see the module docstring). Checkpoints are the same as the local backend's, so a
    run can switch backends on ``--resume``."""

    def __init__(self, config: TrainConfig, run_dir: Any) -> None:
        if config.run.evaluation_budget:
            raise RayBackendError(
                "run.evaluation_budget counts the learner's own network evaluations and is not "
                "supported with run.backend: ray; limit the run with run.iterations or "
                "run.time_limit_minutes"
            )
        self._owns_ray = connect(config.run)
        self.actors: list[Any] = []
        self.hunter: Any = None
        try:
            super().__init__(config, run_dir)
        except BaseException:
            self._disconnect()
            raise
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        users = config.run.actors + (1 if config.mistakes.games else 0)
        if config.selfplay.solver_depth and config.selfplay.solver_process:
            users += config.selfplay.solver_workers
        # Fractional CPUs when the cluster has fewer than are asked for: the OS shares the
        # cores instead of Ray queueing solver tasks behind actors that never finish.
        self.cpus_per_worker = min(1.0, math.floor(1e4 * cpus / users) / 1e4)
        if config.selfplay.solver_depth and config.selfplay.solver_process:
            self.solver.close()
            self.solver = SolverWorker(config.selfplay.solver_workers, kind="ray", num_cpus=self.cpus_per_worker)
        self._weights_ref: Any = None
        self._weights_version = -1
        self._inflight: list[tuple[Any, int]] = []  # (ObjectRef, actor index), oldest first
        self._hunt: Any = None
        self._late_metrics: dict[str, float] = {}  # of a hunt collected at a checkpoint
        self._failures: list[int] = []  # per actor: batches lost in a row
        self.lost_batches = 0
        self.restarts = 0
        self._last_collect: float | None = None

    # -- actors ---------------------------------------------------------------------------
    def _new_actor(self) -> Any:
        return ray.remote(SelfPlayActor).options(**self._actor_options()).remote(config_to_dict(self.config))

    def _actor_options(self) -> dict[str, Any]:
        # Ray restarts a dead actor and replays the batch it was playing (or that waited
        # for it) once: same weights, same seed, so nothing is lost; a second death loses
        # the batch (a warning), and MAX_CONSECUTIVE_FAILURES in a row stop the run.
        return {"num_cpus": self.cpus_per_worker, "num_gpus": 0, "max_restarts": -1, "max_task_retries": 1}

    def _ensure_actors(self) -> None:
        if not self.actors:
            self.actors = [self._new_actor() for _ in range(self.config.run.actors)]
            self._failures = [0] * len(self.actors)
            self._pids: list[int | None] = [None] * len(self.actors)

    def _publish(self) -> Any:
        """The object holding the current weights: one ``ray.put`` per iteration."""
        if self._weights_version != self.iteration or self._weights_ref is None:
            self._weights_ref = ray.put(weights_of(self.nets))
            self._weights_version = self.iteration
        return self._weights_ref

    def _submit(self, k: int, games: int, imitation: int) -> Any:
        seed = int(self.rng.integers(2**31))
        return self.actors[k].play.remote(self._publish(), self.iteration, seed, games, imitation)

    def _receive(self, k: int, ref: Any) -> dict[str, Any] | None:
        """The record of actor ``k``'s batch, or None (with a warning) if it was lost."""
        try:
            record = ray.get(ref)
        except RayError as exc:
            self._failures[k] += 1
            self.lost_batches += 1
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            if self._failures[k] >= MAX_CONSECUTIVE_FAILURES:
                raise RuntimeError(
                    f"self-play actor {k} lost {self._failures[k]} batches in a row; last: "
                    f"{type(exc).__name__}: {reason}"
                ) from exc
            warnings.warn(
                f"self-play actor {k} failed ({type(exc).__name__}: {reason[:200]}); its batch "
                f"is lost, Ray restarts it and the run goes on",
                stacklevel=2,
            )
            return None
        self._failures[k] = 0
        if self._pids[k] is not None and record["pid"] != self._pids[k]:
            self.restarts += 1
            warnings.warn(
                f"self-play actor {k} was restarted (process {self._pids[k]} ended); Ray "
                f"replayed its batch and the run goes on",
                stacklevel=2,
            )
        self._pids[k] = record["pid"]
        return record

    def _play_sync(self) -> list[dict[str, Any]]:
        cfg = self.config
        shares = zip(_share(cfg.selfplay.games, len(self.actors)), _share(cfg.selfplay.imitation_games, len(self.actors)))
        refs = [(k, self._submit(k, g, i)) for k, (g, i) in enumerate(shares) if g or i]
        records = [self._receive(k, ref) for k, ref in refs]
        return [r for r in records if r is not None]

    def _play_async(self) -> list[dict[str, Any]]:
        cfg = self.config
        shares = list(zip(_share(cfg.selfplay.games, len(self.actors)), _share(cfg.selfplay.imitation_games, len(self.actors))))
        busy = [k for k, (g, i) in enumerate(shares) if g or i]
        queued = {k: sum(1 for _, j in self._inflight if j == k) for k in busy}
        for k in busy:  # top up: at most RAY_INFLIGHT batches per actor, ever
            for _ in range(RAY_INFLIGHT - queued[k]):
                self._inflight.append((self._submit(k, *shares[k]), k))
        records: list[dict[str, Any]] = []
        for _ in range(len(busy)):  # one iteration's worth: as many batches as actors
            ready, _ = ray.wait([ref for ref, _ in self._inflight], num_returns=1)
            at = next(i for i, (ref, _) in enumerate(self._inflight) if ref == ready[0])
            ref, k = self._inflight.pop(at)
            record = self._receive(k, ref)
            if record is not None:
                records.append(record)
            self._inflight.append((self._submit(k, *shares[k]), k))  # keep the actor busy
        return records

    # -- the iteration --------------------------------------------------------------------
    def generate(self) -> dict[str, float]:
        """Collect one iteration's games from the actors and store their rows; statistics."""
        cfg = self.config
        self._ensure_actors()
        started = time.perf_counter()
        records = self._play_sync() if cfg.run.sync else self._play_async()
        now = time.perf_counter()
        wall = now - started if cfg.run.sync or self._last_collect is None else now - self._last_collect
        self._last_collect = now
        metrics = self._collect_hunt(block=cfg.run.sync)
        metrics.update(self._late_metrics)
        self._late_metrics = {}
        metrics.update(self.flush())
        metrics.update(self.store_rows(unpack_rows(records)))
        winners = np.concatenate([r["winners"] for r in records]) if records else np.zeros(0)
        lengths = np.concatenate([r["lengths"] for r in records]) if records else np.zeros(0)
        games = len(winners)
        self.games_played += games
        metrics["charts/games_played"] = float(self.games_played)
        metrics["charts/lost_batches"] = float(self.lost_batches)
        metrics["charts/actor_restarts"] = float(self.restarts)
        if not games:
            return metrics
        played = [r for r in records if len(r["winners"])]
        return {
            **metrics,
            "charts/games_per_sec": games / wall,
            "charts/SPS": float(lengths.sum()) / wall,
            "charts/actor_games_per_sec": float(np.mean([len(r["winners"]) / r["seconds"] for r in played])),
            "charts/weights_lag": float(np.mean([self.iteration - r["version"] for r in played])),
            "charts/selfplay_order_winrate": float(np.mean(winners == 0)),
            "charts/mean_game_length": float(lengths.mean()),
        }

    def hunt_mistakes(self) -> dict[str, float]:
        """Start a round of the mistake hunt on the hunter actor with the current weights;
        its rows join the learner after the next iteration's games (returns the metrics of
        a previous round still out, if any)."""
        metrics = self._collect_hunt(block=True)
        if self.hunter is None:
            self.hunter = ray.remote(SelfPlayActor).options(**self._actor_options()).remote(config_to_dict(self.config))
        seed = int(self.rng.integers(2**31))
        self._hunt = self.hunter.hunt.remote(self._publish(), self.iteration, seed, self.mistake_settings)
        return metrics

    def _collect_hunt(self, block: bool) -> dict[str, float]:
        if self._hunt is None:
            return {}
        if not block and not ray.wait([self._hunt], timeout=0)[0]:
            return {}
        ref, self._hunt = self._hunt, None
        try:
            rows, metrics = ray.get(ref)
        except RayError as exc:
            warnings.warn(f"the mistake hunt failed ({type(exc).__name__}); that round is lost", stacklevel=2)
            return {}
        return self.add_mistakes(rows, metrics)

    def extra_state(self) -> dict[str, Any]:
        """As the local trainer's, after the mistake hunt still out has joined (so that a
        resumed run goes on exactly as an uninterrupted one)."""
        self._late_metrics.update(self._collect_hunt(block=True))
        return super().extra_state()

    def train_iteration(self) -> dict[str, float]:
        """As the local trainer, plus ``charts/learner_updates_per_sec``."""
        metrics = super().train_iteration()
        trained = sum(f"{role}/losses/policy" in metrics for role in AGENTS)
        seconds = metrics.get("charts/train_seconds", 0.0)
        if trained and seconds > 0:
            metrics["charts/learner_updates_per_sec"] = trained * self.config.optim.updates_per_iteration / seconds
        return metrics

    # -- the end --------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the actors, and Ray itself if this trainer started it."""
        super().close()
        for actor in [*self.actors, *([self.hunter] if self.hunter is not None else [])]:
            try:
                ray.kill(actor, no_restart=True)
            except RayError:
                pass
        self.actors, self.hunter, self._inflight, self._hunt = [], None, [], None
        self._weights_ref = None
        self._disconnect()

    def _disconnect(self) -> None:
        if self._owns_ray and ray.is_initialized():
            shutdown_ray()
        self._owns_ray = False
