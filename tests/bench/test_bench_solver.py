"""The solver benchmark (bench/solver.py): its positions need search, and its pure-Python
baseline is an exact solver too (else the speed-up it reports would mean nothing)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.solver import Solver
from orderchaos.bench.solver import MIN_NODES, baseline_solve, hard_positions
from orderchaos.envs.rules import threat_pairs

from helpers import brute_force, random_board


def test_benchmark_positions_need_search() -> None:
    picked, stats = hard_positions(3, (24, 26), seed=2024, node_cap=100_000, per_level=25)
    # of the 50 seeded candidates most are easy or hold a four: they are left out, and the
    # three that need search are all kept (no spreading over difficulty needed)
    assert stats == {"candidates": 50, "with_a_four": 6, "easy": 40, "over_cap": 1}
    assert len(picked) == 3
    nodes = [n for _, n in picked]
    assert nodes == sorted(nodes) and nodes[0] >= MIN_NODES
    for state, n in picked:
        assert not threat_pairs(state.x, state.o)  # no four already on the board
        result = Solver(tt_bits=20).solve(state, node_limit=100_000)
        assert (result.winner, result.nodes) == ("order", n)  # proven, with the reported count


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 7))
def test_the_baseline_is_exact(seed: int, empties: int) -> None:
    state = random_board(seed, empties)
    winner, nodes = baseline_solve(state)
    assert winner == brute_force(state)
    assert baseline_solve(state, time_limit=1e-9)[0] in (None, winner)
