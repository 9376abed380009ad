"""Role-aware rating fits (synthetic players of known strength) and the tournament runner."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.registry import SpecError
from orderchaos.arena.matches import play_match
from orderchaos.arena.tournament import (
    ELO_PER_LOGIT,
    fit_ratings,
    run_tournament,
    write_outputs,
)


def _simulate(order_true: np.ndarray, chaos_true: np.ndarray, games: int, seed: int):
    rng = np.random.default_rng(seed)
    p = 1.0 / (1.0 + np.exp(-(order_true[:, None] - chaos_true[None, :])))
    counts = np.full(p.shape, games)
    return rng.binomial(counts, p), counts


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_fit_recovers_known_strengths(seed: int) -> None:
    order_true = np.array([-1.5, -0.5, 0.4, 1.6])
    chaos_true = np.array([1.2, -1.4, 0.0, 2.4])
    wins, games = _simulate(order_true, chaos_true, 400, seed)
    fit = fit_ratings(wins, games, prior_sd=10.0)
    assert list(np.argsort(fit.order)) == list(np.argsort(order_true))
    assert list(np.argsort(fit.chaos)) == list(np.argsort(chaos_true))
    # same gauge as the fit (mean of all ratings 0), then within 4.5 standard errors
    shift = np.concatenate([order_true, chaos_true]).mean()
    assert np.all(np.abs(fit.order - (order_true - shift)) < 4.5 * fit.order_se)
    assert np.all(np.abs(fit.chaos - (chaos_true - shift)) < 4.5 * fit.chaos_se)
    assert abs(fit.order.sum() + fit.chaos.sum()) < 1e-9


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 5), st.integers(2, 5))
def test_fit_solves_the_score_equations(seed: int, n_order: int, n_chaos: int) -> None:
    """With a negligible prior the fitted model's expected wins match the observed totals
    of every Order entrant (rows) and every Chaos entrant (columns)."""
    rng = np.random.default_rng(seed)
    wins, games = _simulate(rng.normal(size=n_order), rng.normal(size=n_chaos), 50, seed)
    wins = np.clip(wins, 1, 49)  # no all-win pairing: a finite maximum likelihood exists
    fit = fit_ratings(wins, games, prior_sd=1e4)
    expected = games / (1.0 + np.exp(-(fit.order[:, None] - fit.chaos[None, :])))
    assert np.allclose(expected.sum(axis=1), wins.sum(axis=1), atol=1e-4)
    assert np.allclose(expected.sum(axis=0), wins.sum(axis=0), atol=1e-4)


def test_one_pairing_gives_the_logit_of_the_win_rate() -> None:
    fit = fit_ratings(np.array([[30]]), np.array([[40]]), prior_sd=1e4)
    assert fit.order[0] - fit.chaos[0] == pytest.approx(np.log(30 / 10), abs=1e-5)
    assert fit.win_probability(0, 0) == pytest.approx(0.75, abs=1e-6)


def test_all_wins_stay_finite_thanks_to_the_prior() -> None:
    wins = np.array([[10, 10], [0, 0]])
    fit = fit_ratings(wins, np.full((2, 2), 10))
    assert np.all(np.isfinite(fit.order)) and np.all(np.isfinite(fit.order_se))
    assert fit.order[0] > fit.order[1]
    assert fit.order[0] - fit.order[1] < 20  # bounded by the ridge


def test_anchor_moves_the_gauge_only() -> None:
    wins, games = _simulate(np.array([0.0, 1.0, -1.0]), np.array([0.5, -0.5, 0.0]), 100, 7)
    free = fit_ratings(wins, games)
    anchored = fit_ratings(wins, games, anchor=1)
    assert anchored.order[1] + anchored.chaos[1] == pytest.approx(0.0, abs=1e-12)
    shift = anchored.order - free.order
    assert np.allclose(shift, shift[0]) and np.allclose(anchored.chaos - free.chaos, shift[0])
    # the anchor is now the reference, so its own uncertainty shrinks
    assert anchored.order_se[1] < free.order_se[1]


@pytest.mark.parametrize(
    "wins, games, message",
    [
        (np.array([[1, 2]]), np.array([[2, 2], [2, 2]]), "one shape"),
        (np.array([[3]]), np.array([[2]]), "wins <= games"),
    ],
)
def test_fit_rejects_bad_counts(wins, games, message) -> None:
    with pytest.raises(ValueError, match=message):
        fit_ratings(wins, games)


def test_tournament_pairings_are_the_matching_eval_matches(tmp_path) -> None:
    result = run_tournament(["random", "heuristic"], games=4, seed=3, openings=1)
    assert result.order_wins.shape == (2, 2)
    for i, order in enumerate(result.entrants):
        for j, chaos in enumerate(result.entrants):
            match = play_match(order, chaos, 4, seed=3, openings=1)
            assert result.order_wins[i, j] == match.order_wins
    rows = result.rating_rows()
    assert {r["entrant"] for r in rows} == {"random", "heuristic"}
    paths = write_outputs(result, tmp_path / "out")
    names = {p.name for p in paths}
    assert names == {"pairings.csv", "ratings.csv", "tournament.json", "tournament.md",
                     "heatmap.png", "ratings.png"}
    for p in paths:
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((tmp_path / "out" / "tournament.json").read_text())
    assert data["order_wins"] == result.order_wins.tolist()
    assert len((tmp_path / "out" / "pairings.csv").read_text().splitlines()) == 1 + 4
    elo = rows[0]["order_elo"]
    assert elo == pytest.approx(result.fit.order[0] * ELO_PER_LOGIT)


@pytest.mark.parametrize(
    "specs, kwargs, error, message",
    [
        (["random"], {}, ValueError, "at least two"),
        (["random", "random"], {}, ValueError, "distinct"),
        (["random", "bogus"], {}, SpecError, "unknown agent 'bogus'"),
        (["random", "heuristic"], {"games": 0}, ValueError, "integer from 1"),
        (["random", "heuristic"], {"games": 3_000_000}, ValueError, "entrants squared"),
        (["random", "heuristic"], {"anchor": "mcts"}, ValueError, "not an entrant"),
    ],
)
def test_bad_tournaments_are_refused(specs, kwargs, error, message) -> None:
    args = {"games": 2, **kwargs}
    with pytest.raises(error, match=message):
        run_tournament(specs, **args)
