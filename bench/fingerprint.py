"""A deterministic fingerprint of what the engines, players and trainer compute.

A refactor that should change no result can be checked by comparing this output before and
after it, byte for byte::

    python -m orderchaos.bench.fingerprint > before.txt   # on the old commit
    python -m orderchaos.bench.fingerprint > after.txt    # on the new one
    cmp before.txt after.txt

It covers the three rules engines (``State`` through the Gymnasium env, the batch engine, the
compiled kernels through the solver and MCTS), the encoding, the heuristic, MCTS visits and
values, solver verdicts and node counts, the prover (inline and in worker processes), the
mistake finder, seeded matches (with and without the network-plus-solver player) and a seeded
smoke training run's losses. Every section is seeded; no timing enters the output. It runs in
about a minute on one CPU core.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from orderchaos.envs.rules import State

FINGERPRINT_BOARDS = (
    "XXXX.O/OX..../.O.X../....../....../......",
    "..X.....O...O.X..........OX.........",
    "XO.X.O/.X..O./..X.../O...X./....../.O....",
    "X..O../.X..O./..XO../..OX../....../......",
)
"""Fixed positions for the search and solver sections."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _random_positions(seed: int, count: int) -> list[State]:
    """``count`` non-terminal positions from seeded uniform random games."""
    rng = np.random.default_rng(seed)
    out: list[State] = []
    while len(out) < count:
        state = State()
        plies = int(rng.integers(0, 30))
        for _ in range(plies):
            if state.is_terminal:
                break
            legal = state.legal_actions()
            state = state.apply(legal[int(rng.integers(len(legal)))])
        if not state.is_terminal:
            out.append(state)
    return out


def envs_section() -> Iterator[str]:
    """Whole random games through the Gymnasium env and the batch engine, and encodings."""
    import gymnasium as gym

    import orderchaos  # noqa: F401  (registers the env)
    from orderchaos.envs.batch import BatchGame
    from orderchaos.envs.encoding import action_masks, encode_states

    for decided in (False, True):
        env = gym.make("OrderChaos-v0", end_when_decided=decided)
        rng = np.random.default_rng(7)
        trace = hashlib.sha256()
        for game in range(40):
            obs, info = env.reset(seed=game)
            done = False
            while not done:
                action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
                obs, reward, done, _, info = env.step(action)
                trace.update(obs["observation"].tobytes() + obs["action_mask"].tobytes())
                trace.update(repr((reward, info["decided"], info["winner"], info["winning_line"],
                                   info["end_reason"])).encode())
        yield f"env end_when_decided={decided}: {trace.hexdigest()[:16]}"
    for decided in (False, True):
        game = BatchGame(64, end_when_decided=decided)
        rng = np.random.default_rng(11)
        trace = hashlib.sha256()
        for _ in range(200):
            masks = game.action_masks()
            actions = np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])
            step = game.step(actions)
            trace.update(np.asarray(step.reward).tobytes() + np.asarray(step.terminated).tobytes())
            trace.update(np.asarray(game.observations()).tobytes())
            trace.update(np.asarray(game.winning_lines()).tobytes())
            done = np.flatnonzero(np.asarray(step.terminated))
            if done.size:
                game.reset(done)
        yield f"batch end_when_decided={decided}: {trace.hexdigest()[:16]}"
    states = _random_positions(3, 300)
    yield f"encoding: {_digest(encode_states(states).tobytes())} masks {_digest(action_masks(states).tobytes())}"


def heuristic_section() -> Iterator[str]:
    """The heuristic's chosen moves on random positions."""
    from orderchaos.agents.simple import HeuristicAgent

    agent = HeuristicAgent(seed=0)
    picks = [tuple(agent.best_actions(s)) for s in _random_positions(5, 300)]
    yield f"heuristic best actions: {_digest(repr(picks).encode())}"


def search_section() -> Iterator[str]:
    """MCTS with rollouts on the fixed boards: visits, values, proofs."""
    from orderchaos.agents.mcts import MCTS, RolloutEvaluator

    for board in FINGERPRINT_BOARDS:
        state = State.from_string(board)
        result = MCTS(RolloutEvaluator(), simulations=600, seed=1).search(state)
        visited = {int(a): int(result.visits[a]) for a in np.flatnonzero(result.visits)}
        yield (
            f"mcts {state.to_string()}: best {result.best_action} value {result.value!r} "
            f"proven {result.proven} sims {result.simulations} visits {_digest(repr(visited).encode())} "
            f"q {_digest(result.q.tobytes())} proofs {_digest(result.action_proven.tobytes())}"
        )


def solver_section() -> Iterator[str]:
    """Solver verdicts, node counts and keeping moves on the fixed and on random boards."""
    from orderchaos.agents.solver import Solver

    solver = Solver(tt_bits=18)
    boards = [State.from_string(b) for b in FINGERPRINT_BOARDS]
    boards += [s for s in _random_positions(9, 200) if s.num_empty <= 14][:8]
    for state in boards:
        solver.clear()
        r = solver.solve(state, node_limit=3_000_000, moves=True)
        yield f"solve {state.to_string()}: {r.winner} nodes {r.nodes} keep {r.best_actions}"


def prover_section() -> Iterator[str]:
    """The prover on small boards, inline and with two worker processes."""
    from orderchaos.agents.proof_book import ProofBook
    from orderchaos.proof.prove import ProveConfig, Prover

    tiny = ProveConfig(first_budget=1, growth=2, cap=1, tt_bits=14)
    for state in [s for s in _random_positions(13, 400) if 8 <= s.num_empty <= 10][:4]:
        book = ProofBook()
        r = Prover(state, book, config=tiny).run()
        yield f"prove {state.to_string()}: {r.winner} tasks {r.tasks} nodes {r.solver_nodes} entries {r.book_entries}"
    with tempfile.TemporaryDirectory() as tmp:
        state = State.from_string(FINGERPRINT_BOARDS[1])
        small = ProveConfig(first_budget=2000, cap=8000, tt_bits=16, workers=2)
        book = ProofBook()
        r = Prover(state, book, config=small, book_path=Path(tmp) / "b.ocb").run(600)
        # With two workers the order results arrive in may vary; the verdict may not.
        yield f"prove (2 workers) {state.to_string()}: {r.winner}"


def match_section() -> Iterator[str]:
    """Seeded matches: search against the heuristic, and the network-plus-solver player."""
    from orderchaos.arena.matches import play_match

    for order, chaos in (("mcts:sims=60", "heuristic"), ("heuristic", "mcts:sims=60"),
                         ("pretrained:sims=16,solver=12", "heuristic"), ("random", "pretrained:sym=8")):
        result = play_match(order, chaos, 3, seed=5, openings=2, keep_games=True)
        for i, record in enumerate(result.records):
            yield f"match {order} vs {chaos} game {i}: {record.winner} {list(record.actions)}"


def mistakes_section() -> Iterator[str]:
    """The mistake finder on a few games the heuristic loses as Chaos."""
    from orderchaos.agents.registry import make
    from orderchaos.arena.mistakes import collect_mistakes

    hunt = collect_mistakes(make("heuristic", seed=0), "chaos", ["heuristic"], 6, 2,
                            openings=2, node_limit=200_000)
    yield f"mistakes: games {hunt.games} lost {hunt.lost}"
    for m in hunt.mistakes:
        yield f"mistake {m.state.to_string()} played {m.played} winning {list(m.winning)} proven {m.proven}"


def training_section() -> Iterator[str]:
    """Three iterations of the smoke config, with the solver labels in the training process
    and in a worker process: the loss scalars."""
    import torch

    from orderchaos.train.config import load_config
    from orderchaos.train.factory import make_trainer

    torch.set_num_threads(1)
    config_path = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    if not config_path.exists():
        raise SystemExit(f"configs/smoke.yaml not found at {config_path}; run from a source checkout")
    for solver_process in ("false", "true"):
        with tempfile.TemporaryDirectory() as tmp:
            overrides = ["eval.enabled=false", f"selfplay.solver_process={solver_process}"]
            trainer = make_trainer(load_config(config_path, overrides), Path(tmp) / "run")
            try:
                for it in range(3):
                    metrics = trainer.train_iteration()
                    for key in sorted(metrics):
                        if "loss" in key or key.endswith(("replay_size", "solver_positions")):
                            yield f"train solver_process={solver_process} iteration {it} {key} {float(metrics[key])!r}"
            finally:
                trainer.close()


SECTIONS = (envs_section, heuristic_section, search_section, solver_section, prover_section,
            match_section, mistakes_section, training_section)


def main() -> None:
    """Print every section's lines."""
    for section in SECTIONS:
        for line in section():
            print(line, flush=True)


if __name__ == "__main__":
    main()
