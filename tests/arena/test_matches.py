"""Matches: Wilson intervals, openings, seeded reproducibility (1 and 2 workers)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.registry import SpecError
from orderchaos.agents.simple import RandomAgent
from orderchaos.arena.matches import (
    play_game,
    play_match,
    random_opening,
    wilson_interval,
)
from orderchaos.envs.rules import IllegalActionError, State

# Reference values: R binom::binom.confint(x, n, methods="wilson") / statsmodels
# proportion_confint(x, n, method="wilson"), rounded to 4 decimals.
WILSON_REFERENCE = [
    (0, 10, 0.0, 0.2775),
    (5, 10, 0.2366, 0.7634),
    (10, 10, 0.7225, 1.0),
    (81, 100, 0.7222, 0.8749),
    (1, 20, 0.0089, 0.2361),
]


@pytest.mark.parametrize("k,n,low,high", WILSON_REFERENCE)
def test_wilson_matches_reference(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_bounds_solve_the_score_equation(kn: tuple[int, int]) -> None:
    k, n = kn
    z = 1.959964
    lo, hi = wilson_interval(k, n)
    p_hat = k / n
    assert 0.0 <= lo <= p_hat <= hi <= 1.0
    # Wilson's bounds are the p with (p_hat - p)^2 = z^2 p (1 - p) / n
    for p in (lo, hi):
        assert (p_hat - p) ** 2 == pytest.approx(z * z * p * (1 - p) / n, abs=1e-9)
    # mirror symmetry: k successes is n - k failures
    mlo, mhi = wilson_interval(n - k, n)
    assert lo == pytest.approx(1 - mhi, abs=1e-12) and hi == pytest.approx(1 - mlo, abs=1e-12)


def test_wilson_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError):
        wilson_interval(-1, 10)
    assert wilson_interval(0, 0) == (0.0, 1.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 30))
def test_random_opening_is_legal_and_never_ends_the_game(seed: int, plies: int) -> None:
    actions = random_opening(plies, np.random.default_rng(seed))
    assert len(actions) == plies
    state = State()
    for a in actions:
        state = state.apply(a)
    assert not state.is_terminal
    assert actions == random_opening(plies, np.random.default_rng(seed))


def test_play_game_keeps_the_opening_and_reaches_the_end() -> None:
    opening = [0, 3, 20]
    record = play_game(RandomAgent(seed=1), RandomAgent(seed=2), opening)
    assert record.actions[:3] == opening
    assert record.opening_plies == 3 and record.length == len(record.actions)
    state = State()
    for a in record.actions:
        state = state.apply(a)
    assert state.is_terminal and state.winner == record.winner


class _Stubborn:
    """Always plays action 0, which becomes illegal once a1 is taken."""

    name = "stubborn"

    def act(self, state: State) -> int:
        return 0


def test_play_game_names_the_agent_that_moves_illegally() -> None:
    with pytest.raises(IllegalActionError, match="chaos agent 'stubborn'.*ply 2"):
        play_game(_Stubborn(), _Stubborn())
    with pytest.raises(IllegalActionError, match="opening ply 2"):
        play_game(_Stubborn(), _Stubborn(), opening=[0, 0])


def _games(result) -> list[tuple]:
    return [(r.actions, r.winner, r.opening_plies) for r in result.records]


def test_match_is_reproducible_and_independent_of_workers() -> None:
    kwargs = dict(n=6, seed=11, openings=3, keep_games=True)
    one = play_match("heuristic", "random", **kwargs)
    again = play_match("heuristic", "random", **kwargs)
    two = play_match("heuristic", "random", workers=2, **kwargs)
    assert _games(one) == _games(again) == _games(two)
    assert (one.order_wins, one.chaos_wins) == (two.order_wins, two.chaos_wins)
    other_seed = play_match("heuristic", "random", n=6, seed=12, openings=3, keep_games=True)
    assert _games(other_seed) != _games(one)


def test_game_i_does_not_depend_on_the_number_of_games() -> None:
    short = play_match("random", "random", n=3, seed=4, keep_games=True)
    long = play_match("random", "random", n=7, seed=4, keep_games=True)
    assert _games(short) == _games(long)[:3]


def test_openings_differ_between_games() -> None:
    result = play_match("heuristic", "heuristic", n=8, seed=2, openings=2, keep_games=True)
    openings = {tuple(r.actions[:2]) for r in result.records}
    assert len(openings) > 1
    assert all(r.opening_plies == 2 for r in result.records)


def test_match_figures_are_consistent() -> None:
    start = time.perf_counter()
    result = play_match("random", "heuristic", n=10, seed=0, keep_games=True)
    wall = time.perf_counter() - start
    assert result.games == 10 == len(result.records)
    assert result.order_wins == sum(r.winner == "order" for r in result.records)
    assert result.chaos_wins == sum(r.winner == "chaos" for r in result.records)
    assert result.order_win_rate == result.order_wins / 10
    assert result.ci95 == wilson_interval(result.order_wins, 10)
    assert math.isclose(result.mean_length, sum(r.length for r in result.records) / 10)
    assert 0 < result.seconds <= wall  # seconds of this match, not milliseconds or a total
    assert play_match("random", "heuristic", n=10, seed=0).records == []  # not kept by default
    d = result.to_dict()
    assert d["ci95"] == list(result.ci95) and d["order_wins"] == result.order_wins
    assert d["order"] == "random" and d["chaos"] == "heuristic"


def test_agent_objects_play_with_one_worker_only() -> None:
    result = play_match(RandomAgent(seed=3), "heuristic", n=3, seed=0)
    assert result.games == 3 and result.order == "random"
    with pytest.raises(ValueError, match="spec strings"):
        play_match(RandomAgent(seed=3), "heuristic", n=3, workers=2)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(order_agent="nonsense"), SpecError, "accepted"),
        (dict(chaos_agent="mcts:sims=lots"), SpecError, "sims"),
        (dict(n=0), ValueError, "integer from 1 to"),
        (dict(n=10**20), ValueError, "integer from 1 to 10,000,000"),
        (dict(openings=31), ValueError, "0..30"),
        (dict(workers=0), ValueError, "workers"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(order_agent=42), TypeError, "spec string"),
    ],
)
def test_bad_match_arguments_are_refused_clearly(kwargs, error, message) -> None:
    args = dict(order_agent="random", chaos_agent="random", n=2)
    args.update(kwargs)
    with pytest.raises(error, match=message):
        play_match(**args)
