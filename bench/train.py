"""``orderchaos bench train``: network evaluation throughput and self-play speed.

Prints positions per second of :class:`~orderchaos.agents.network_agent.NetworkEvaluator` (encoding, masking,
both role networks, softmax -- the whole leaf-evaluation path) next to the bare network
forward pass, as a torch module and compiled for inference as the evaluator runs it on CPU
(:class:`~orderchaos.agents.network.InferenceForward`), at a few batch sizes and network sizes, then self-play games per second with
batched PUCT search, the self-play of the shipped recipes side by side (games/s and
network evaluations per game), and the training backends side by side (local, Ray with 1 and 2
actors: self-play games/s, updates/s, Ray's overhead at one actor, and a projection, marked
as such, for 16 and 64 actors). Ratios compare each figure with its peer measured in the
same run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from orderchaos.agents.network import InferenceForward, PolicyValueNet
from orderchaos.agents.network_agent import NetworkEvaluator
from orderchaos.envs.encoding import encode_states
from orderchaos.envs.rules import AGENTS, State


def random_positions(n: int, seed: int = 0) -> list[State]:
    """``n`` non-terminal positions reached by uniformly random play (4..24 stones)."""
    rng = np.random.default_rng(seed)
    out: list[State] = []
    while len(out) < n:
        state = State()
        for _ in range(int(rng.integers(4, 25))):
            nxt = state.apply(int(rng.choice(state.legal_actions())))
            if nxt.is_terminal:
                break
            state = nxt
        out.append(state)
    return out


def _rate(fn: Any, items: int, min_seconds: float) -> float:
    fn()  # warm-up
    count, start = 0, time.perf_counter()
    while True:
        fn()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return count * items / elapsed


def network_throughput(
    channels: int, blocks: int, batch_sizes: list[int], min_seconds: float = 0.5
) -> list[dict[str, float]]:
    """Positions/s of the bare forward pass (the torch module, compiled as the evaluator
    runs it on CPU, and compiled in bfloat16) and of the full evaluator, per batch size."""
    torch.manual_seed(0)
    nets = {role: PolicyValueNet(channels, blocks).eval() for role in AGENTS}
    evaluator = NetworkEvaluator(nets)
    compiled = InferenceForward(nets["order"])
    low = InferenceForward(nets["order"], "bfloat16")
    rows = []
    for batch in batch_sizes:
        states = random_positions(batch, seed=batch)
        planes = torch.from_numpy(encode_states(states))

        def forward(module: Any = nets["order"]) -> None:
            with torch.inference_mode():
                module(planes)

        rows.append(
            {
                "net": f"{channels}x{blocks}",
                "batch": batch,
                "forward_pos_per_sec": _rate(forward, batch, min_seconds),
                "compiled_pos_per_sec": _rate(lambda: forward(compiled), batch, min_seconds),
                "bf16_pos_per_sec": _rate(lambda: forward(low), batch, min_seconds),
                "evaluator_pos_per_sec": _rate(lambda: evaluator.evaluate(states), batch, min_seconds),
            }
        )
    return rows


def selfplay_throughput(
    games: int, simulations: int, channels: int, blocks: int, seed: int = 0
) -> dict[str, float]:
    """Games/s and moves/s of one batch of self-play games with batched PUCT search."""
    from orderchaos.train.selfplay import play_selfplay_games

    torch.manual_seed(seed)
    nets = {role: PolicyValueNet(channels, blocks).eval() for role in AGENTS}
    evaluator = NetworkEvaluator(nets)
    start = time.perf_counter()
    logs = play_selfplay_games(
        evaluator, games, simulations=simulations, c_puct=1.5, dirichlet_alpha=0.3,
        dirichlet_fraction=0.25, temperature=1.0, temperature_moves=8,
        rng=np.random.default_rng(seed),
    )
    seconds = time.perf_counter() - start
    moves = sum(log.length for log in logs)
    return {
        "games": games,
        "simulations": simulations,
        "net": f"{channels}x{blocks}",
        "seconds": seconds,
        "games_per_sec": games / seconds,
        "moves_per_sec": moves / seconds,
        "leaf_evals_per_sec": evaluator.positions_evaluated / seconds,
    }


RECIPES: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("alphazero.yaml", (), False),
    ("alphazero.yaml", (), True),
    ("alphazero_selfplay.yaml", (), True),
    ("alphazero_selfplay.yaml", ("mcts.evaluation_cache=true",), True),
    ("alphazero_selfplay.yaml", ("mcts.prefetch=true",), True),
    ("alphazero_selfplay.yaml", ("mcts.prefetch=true", "mcts.evaluation_cache=true"), True),
    ("alphazero_selfplay_small.yaml", (), True),
    ("alphazero_selfplay_small.yaml", ("mcts.prefetch=true", "mcts.evaluation_cache=true"), True),
    ("alphazero_selfplay_fast.yaml", (), True),
)
"""The training configs whose self-play :func:`recipe_throughput` compares, each with its
overrides and whether the networks run compiled: the first row is the heuristic-assisted
recipe with the torch module's forward pass (the baseline self-play that throughput
ratios are measured against); then the shipped recipe, the same with the evaluation cache, with the
first round of each search prefetched in one batch, and with both (all three play the same
games); then the
same recipe with a 16-channel network, alone and with the cache and prefetching; last the
shipped recipe with the cache, prefetching and bfloat16 evaluation (docs/experiments.md has
the A/Bs)."""

TRAINED_NETWORKS: dict[str, str] = {"alphazero_selfplay_small.yaml": "selfplay_small"}
"""Configs whose network is not the shipped shape, and the folder of ``bench/data`` that holds
networks trained by them (``selfplay_small``: a run of ``alphazero_selfplay_small.yaml`` with a
budget of 2.4M evaluations, docs/experiments.md), for the recipe table's rows with trained
networks."""


def trained_networks(config_file: str) -> str:
    """What :func:`recipe_throughput` takes as ``networks`` for networks trained by
    ``config_file``: the shipped ones (``"pretrained"``), or those in ``bench/data`` for a
    config of another shape (:data:`TRAINED_NETWORKS`)."""
    from pathlib import Path

    folder = TRAINED_NETWORKS.get(config_file)
    return "pretrained" if folder is None else str(Path(__file__).resolve().parent / "data" / folder)


def recipe_throughput(
    config_file: str,
    games: int,
    seed: int = 0,
    networks: str = "fresh",
    overrides: Sequence[str] = (),
    compiled: bool = True,
) -> dict[str, Any]:
    """Games/s and network evaluations per game of one batch of ``games`` self-play games
    played as the config in ``configs/`` says (search, simulations, heuristic opponents,
    solver-ended games; the solver labelling of finished games is left out), timed as an
    iteration of a training run after its first: the compiled networks are traced before
    the timing and frozen again for new weights inside it.

    ``networks`` is ``"fresh"`` (untrained networks of the config's shape),
    ``"pretrained"`` (the shipped trained networks, whose games are as long as a trained
    run's) or a policy or run directory (its latest checkpoint); trained networks must have
    the config's shape. ``overrides`` are
    ``key=value`` changes to the config, as ``orderchaos train`` takes them. ``compiled``
    False runs the networks' torch modules instead of their compiled forward pass (see
    :class:`~orderchaos.agents.network_agent.NetworkEvaluator`); the games are the same.
    """
    from pathlib import Path

    from orderchaos.agents.policy_files import find_policy_dir, load_policy_dir, pretrained_dir
    from orderchaos.train.selfplay import play_training_games
    from orderchaos.train.config import load_config
    from orderchaos.train.trainer import build_network

    config = load_config(Path(__file__).resolve().parents[1] / "configs" / config_file, [*overrides, "device=cpu"])
    torch.manual_seed(seed)
    if networks == "fresh":
        nets = {role: build_network(config.network).eval() for role in AGENTS}
    else:
        if networks == "pretrained":
            source = pretrained_dir()
        elif Path(networks).is_dir():
            source = find_policy_dir(networks)
        else:
            raise ValueError(
                f"networks must be 'fresh' or 'pretrained' or a policy or run directory, not {networks!r}"
            )
        nets, _ = load_policy_dir(source)
        shape = build_network(config.network).architecture()
        if nets["order"].architecture() != shape:
            raise ValueError(
                f"the networks in {str(source)!r} are {nets['order'].architecture()}, but "
                f"{' '.join([config_file, *overrides])} plays with {shape}; give networks of its shape"
            )
    evaluator = NetworkEvaluator(nets, compiled=compiled, precision=config.run.inference_precision)
    # Time it as a training iteration after the first plays: the networks traced already
    # (once a run), but frozen again for the iteration's new weights, inside the timing.
    evaluator.evaluate([State(), State().apply(0)])
    with torch.no_grad():
        for net in nets.values():
            next(net.parameters()).add_(0.0)  # new weights, as far as the evaluator can tell
    evaluator.positions_evaluated = 0
    logs, _, seconds = play_training_games(evaluator, config, games, 0, np.random.default_rng(seed))
    return {
        "config": " ".join([config_file, *overrides]),
        "networks": networks,
        "compiled": compiled,
        "precision": evaluator.precision,
        "games": games,
        "seconds": seconds,
        "games_per_sec": games / seconds,
        "evals_per_game": evaluator.positions_evaluated / games,
        "mean_length": float(np.mean([log.length for log in logs])),
        "solver_ended": float(np.mean([log.solver_ended for log in logs])),
    }


def bfloat16_units() -> bool:
    """Whether oneDNN finds bfloat16 instructions on this CPU (AVX512-BF16 or AMX), without
    which bfloat16 evaluation is emulated and slower than float32."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch without the check
        return False


def print_recipe_table(rows: list[dict[str, Any]]) -> None:
    """The recipes side by side, with games/s as a ratio to the first row with the same
    networks."""
    if any(r["precision"] == "bfloat16" for r in rows):
        print(f"\n(bf16 rows: this CPU has bfloat16 units: {'yes' if bfloat16_units() else 'no, so they run slower'})")
    print(f"\n{'self-play recipe':>48} {'forward':>13} {'networks':>10} {'games':>6} {'games/s':>8} "
          f"{'evals/game':>11} {'length':>7} {'solver-ended':>12} {'games/s ratio':>14}")
    for r in rows:
        first = next(f for f in rows if f["networks"] == r["networks"])
        forward = ("compiled" if r["compiled"] else "module") + (" bf16" if r["precision"] == "bfloat16" else "")
        print(f"{r['config']:>48} {forward:>13} {r['networks']:>10} {r['games']:>6} {r['games_per_sec']:>8.2f} "
              f"{r['evals_per_game']:>11.0f} {r['mean_length']:>7.1f} {r['solver_ended']:>12.2f} "
              f"{r['games_per_sec'] / first['games_per_sec']:>13.2f}x")


def run(quick: bool = False, threads: int = 1) -> dict[str, Any]:
    """Measure and print; returns the figures. ``quick`` uses tiny budgets (seconds).

    ``threads`` torch CPU threads (default 1, as the training configs use: on a shared
    machine more intra-op threads mostly spin against other processes).
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _measure(quick)
    finally:
        torch.set_num_threads(previous)


def _measure(quick: bool) -> dict[str, Any]:
    batch_sizes = [1, 64, 256] if quick else [1, 16, 64, 256, 1024]
    nets = [(32, 4)] if quick else [(16, 4), (32, 4), (64, 6)]
    min_seconds = 0.1 if quick else 1.0
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, fp32 unless bf16; "
          f"bfloat16 units: {'yes' if bfloat16_units() else 'no'}")
    print(f"{'net':>6} {'batch':>6} {'forward pos/s':>14} {'compiled pos/s':>15} {'compiled/fwd':>12} "
          f"{'bf16 pos/s':>11} {'bf16/compiled':>13} {'evaluator pos/s':>16} {'eval/compiled':>13}")
    net_rows = []
    for channels, blocks in nets:
        for row in network_throughput(channels, blocks, batch_sizes, min_seconds):
            net_rows.append(row)
            speedup = row["compiled_pos_per_sec"] / row["forward_pos_per_sec"]
            ratio = row["evaluator_pos_per_sec"] / row["compiled_pos_per_sec"]
            low = row["bf16_pos_per_sec"] / row["compiled_pos_per_sec"]
            print(
                f"{row['net']:>6} {row['batch']:>6} {row['forward_pos_per_sec']:>14,.0f} "
                f"{row['compiled_pos_per_sec']:>15,.0f} {speedup:>11.2f}x "
                f"{row['bf16_pos_per_sec']:>11,.0f} {low:>12.2f}x "
                f"{row['evaluator_pos_per_sec']:>16,.0f} {ratio:>13.2f}"
            )
    plays = [(8, 8, 8, 1)] if quick else [(64, 32, 32, 4), (64, 64, 32, 4)]
    print(f"\n{'games':>6} {'sims':>5} {'net':>6} {'games/s':>8} {'moves/s':>8} {'leaf evals/s':>12}")
    play_rows = []
    for games, sims, channels, blocks in plays:
        row = selfplay_throughput(games, sims, channels, blocks)
        play_rows.append(row)
        print(
            f"{games:>6} {sims:>5} {row['net']:>6} {row['games_per_sec']:>8.2f} "
            f"{row['moves_per_sec']:>8.1f} {row['leaf_evals_per_sec']:>12,.0f}"
        )
    recipes = []
    for networks in ("fresh", "trained"):
        for name, overrides, compiled in RECIPES:
            source = networks if networks == "fresh" else trained_networks(name)
            row = recipe_throughput(name, 8 if quick else 128, networks=source, overrides=overrides, compiled=compiled)
            recipes.append({**row, "networks": networks})
    print_recipe_table(recipes)
    backends = backend_table(quick)
    print_backend_table(backends, quick)
    return {"network": net_rows, "selfplay": play_rows, "recipes": recipes, "backends": backends}


# ---------------------------------------------------------------------------------------
# Training backends side by side: local, and Ray with 1 and 2 actors.
# ---------------------------------------------------------------------------------------


def _bench_overrides(quick: bool) -> list[str]:
    """A training config for the backend table: self-play and learning only (no solver,
    warm-up, imitation or evaluation, which the backends share)."""
    if quick:
        size = ["network.channels=8", "network.blocks=1", "selfplay.games=4", "mcts.simulations=8",
                "optim.updates_per_iteration=4", "optim.batch_size=32", "replay.min_positions=16"]
    else:
        size = ["network.channels=32", "network.blocks=4", "selfplay.games=32", "mcts.simulations=32",
                "optim.updates_per_iteration=32", "optim.batch_size=256", "replay.min_positions=256"]
    return [*size, "eval.enabled=false", "selfplay.solver_depth=0", "selfplay.warmup_games=0",
            "selfplay.imitation_games=0", "selfplay.heuristic_fraction=0.5", "run.progress=false",
            "run.threads=1", "device=cpu", "seed=0"]


def _measure_backend(overrides: list[str], iterations: int) -> dict[str, float]:
    """Build a trainer, play and train one unmeasured iteration (actor start, compilation),
    then ``iterations`` measured ones: self-play games/s (the learner's wall time waiting
    for games), actor-side games/s per actor, and learner updates/s."""
    import tempfile

    from orderchaos.train.config import load_config
    from orderchaos.train.factory import make_trainer

    config = load_config(None, overrides)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = make_trainer(config, tmp)
        try:
            games = play_s = train_s = 0.0
            updates = 0
            actor_rates = []
            for it in range(iterations + 1):
                started = time.perf_counter()
                stats = trainer.generate()
                played = time.perf_counter()
                trained = [trainer.train_role(role) for role in AGENTS]
                done = time.perf_counter()
                trainer.iteration += 1
                if it == 0:
                    continue
                games += config.selfplay.games
                play_s += played - started
                train_s += done - played
                updates += sum(config.optim.updates_per_iteration for t in trained if t)
                actor_rates.append(stats.get("charts/actor_games_per_sec", stats.get("charts/games_per_sec", 0.0)))
        finally:
            trainer.close()
    return {
        "games_per_iteration": config.selfplay.games,
        "selfplay_games_per_sec": games / play_s,
        "actor_games_per_sec": float(np.mean(actor_rates)),
        "updates_per_sec": updates / train_s if train_s else 0.0,
        "learner_seconds_per_iteration": train_s / iterations,
        "selfplay_seconds_per_iteration": play_s / iterations,
    }


def backend_table(quick: bool = False, actors: tuple[int, ...] = (1, 2), iterations: int | None = None) -> list[dict[str, Any]]:
    """The local backend and the Ray backend with each of ``actors`` self-play actors (sync
    mode), on one config; rows of :func:`_measure_backend` figures. Ray rows need ray (a
    local instance is started for them unless this process is connected already); in
    ``quick`` mode without a connection they are left out."""
    iterations = iterations or (1 if quick else 3)
    overrides = _bench_overrides(quick)
    rows = [{"backend": "local", **_measure_backend(overrides, iterations)}]
    try:
        import ray
    except ImportError:
        print("(ray rows skipped: ray is not installed; pip install 'orderchaos[ray]')")
        return rows
    if quick and not ray.is_initialized():
        print("(ray rows skipped in --quick; run without --quick to measure them)")
        return rows
    from orderchaos.train.config import load_config
    from orderchaos.train.ray_backend import connect

    owns = connect(load_config(None, ["run.backend=ray"]).run)
    try:
        for n in actors:
            ray_overrides = [*overrides, "run.backend=ray", f"run.actors={n}", "run.sync=true"]
            rows.append({"backend": f"ray x{n}", "actors": n, **_measure_backend(ray_overrides, iterations)})
    finally:
        if owns:
            ray.shutdown()
    return rows


def projection(rows: list[dict[str, Any]], actors: int) -> dict[str, float]:
    """PROJECTED (not measured) games/s of the Ray backend with ``actors`` actors, each on
    its own core, from the Ray row with the best per-actor games/s ``g`` (the least
    contended), the learner's seconds per iteration ``L`` (fastest measured) and that row's
    Ray overhead per iteration ``o`` (the learner's wait beyond ``G / (n g)``), for ``G``
    games per iteration. Actor supply: ``N g``; sync: ``G / (G / (N g) + o + L)``; async:
    ``min(N g, G / L)`` (the learner's pace bounds it: it trains ``updates_per_iteration``
    steps for every ``G`` games)."""
    ray_rows = [r for r in rows if r["backend"].startswith("ray")]
    base = max(ray_rows, key=lambda r: r["actor_games_per_sec"])
    g, games = base["actor_games_per_sec"], base["games_per_iteration"]
    learner = min(r["learner_seconds_per_iteration"] for r in rows)
    overhead = max(0.0, base["selfplay_seconds_per_iteration"] - games / (base["actors"] * g))
    return {
        "actors": actors,
        "actor_games_per_sec": g,
        "ray_overhead_seconds": overhead,
        "learner_seconds_per_iteration": learner,
        "supply_games_per_sec": actors * g,
        "learner_bound_games_per_sec": games / learner if learner else float("inf"),
        "sync_games_per_sec": games / (games / (actors * g) + overhead + learner),
        "async_games_per_sec": min(actors * g, games / learner) if learner else actors * g,
    }


def print_backend_table(rows: list[dict[str, Any]], quick: bool = False) -> None:
    """The backend table, the overhead of Ray at one actor and the projection."""
    print(f"\n{'backend':>8} {'self-play games/s':>18} {'games/s per actor':>18} {'updates/s':>10} {'learner s/it':>13}")
    for r in rows:
        print(f"{r['backend']:>8} {r['selfplay_games_per_sec']:>18.2f} {r['actor_games_per_sec']:>18.2f} "
              f"{r['updates_per_sec']:>10.1f} {r['learner_seconds_per_iteration']:>13.2f}")
    local = rows[0]
    one = next((r for r in rows if r["backend"] == "ray x1"), None)
    if one is not None:
        overhead = local["selfplay_games_per_sec"] / one["selfplay_games_per_sec"] - 1
        print(f"overhead of Ray at 1 actor: {100 * overhead:+.0f}% self-play time per game against local")
    if any(r["backend"].startswith("ray") for r in rows):
        first = projection(rows, 16)
        print(f"PROJECTION (not measured): one core per actor, {first['actor_games_per_sec']:.2f} games/s "
              f"per actor, Ray overhead {first['ray_overhead_seconds']:.2f} s and learner "
              f"{first['learner_seconds_per_iteration']:.2f} s per iteration of {rows[0]['games_per_iteration']} games:")
        for n in (16, 64):
            p = projection(rows, n)
            print(f"  {n:>3} actors: actors supply {p['supply_games_per_sec']:.1f} games/s; sync "
                  f"~{p['sync_games_per_sec']:.1f}, async ~{p['async_games_per_sec']:.1f} games/s "
                  f"(learner bound {p['learner_bound_games_per_sec']:.1f})")
