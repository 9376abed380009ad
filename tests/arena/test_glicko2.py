"""Glicko-2 against the worked example of Glickman's paper, and the puzzle helpers."""

from __future__ import annotations

import math

import pytest

from orderchaos.arena.glicko2 import (
    MIN_DEVIATION,
    Rating,
    expected_score,
    period_detail,
    puzzle_start_rating,
    rate_attempt,
    update,
)

# The paper's example: a player rated 1500 (RD 200, volatility 0.06, tau 0.5) beats a 1400
# (RD 30) and loses to a 1550 (RD 100) and a 1700 (RD 300).
PLAYER = Rating(1500, 200, 0.06)
GAMES = [(Rating(1400, 30), 1.0), (Rating(1550, 100), 0.0), (Rating(1700, 300), 0.0)]


def test_paper_worked_example_in_the_glicko2_scale() -> None:
    # The paper prints v = 1.7785 and delta = -0.4834 from g and E rounded to four places;
    # unrounded they are 1.77898 and -0.48393.
    detail = period_detail(PLAYER, GAMES)
    assert detail.v == pytest.approx(1.7785, abs=1e-3)
    assert detail.delta == pytest.approx(-0.4834, abs=1e-3)
    new = update(PLAYER, GAMES, tau=0.5)
    assert round(new.mu, 4) == -0.2069
    assert round(new.phi, 4) == 0.8722
    assert new.sigma == pytest.approx(0.05999, abs=1e-5)  # the paper truncates 0.059996


def test_paper_worked_example_in_the_glicko_scale() -> None:
    new = update(PLAYER, GAMES, tau=0.5)
    # the paper's 1464.06 and 151.52 are r' and RD' from mu' and phi' rounded to four places
    assert new.r == pytest.approx(1464.06, abs=0.01)
    assert new.rd == pytest.approx(151.52, abs=0.01)


def test_a_period_without_games_only_widens_the_deviation() -> None:
    new = update(PLAYER, [])
    assert new.r == PLAYER.r and new.sigma == PLAYER.sigma
    assert new.phi == pytest.approx(math.sqrt(PLAYER.phi**2 + 0.06**2))


def test_expected_score_is_symmetric_for_equal_deviations() -> None:
    a, b = Rating(1600, 80), Rating(1400, 80)
    assert expected_score(a, b) + expected_score(b, a) == pytest.approx(1.0)
    assert expected_score(a, b) > 0.5


def test_an_attempt_moves_player_and_puzzle_opposite_ways() -> None:
    player, puzzle = Rating(1500, 200), Rating(1500, 250)
    won_player, won_puzzle = rate_attempt(player, puzzle, solved=True)
    lost_player, lost_puzzle = rate_attempt(player, puzzle, solved=False)
    assert won_player.r > player.r > lost_player.r
    assert won_puzzle.r < puzzle.r < lost_puzzle.r
    # each side is one game against the other's rating before the attempt
    assert won_player == update(player, [(puzzle, 1.0)])
    assert lost_puzzle == update(puzzle, [(player, 1.0)])


def test_deviation_has_a_floor() -> None:
    player, puzzle = Rating(1500, 31, 0.0001), Rating(1500, 31, 0.0001)
    for _ in range(50):
        player, puzzle = rate_attempt(player, puzzle, solved=True)
    assert player.rd == MIN_DEVIATION and puzzle.rd == MIN_DEVIATION


def test_puzzle_start_rating_grows_with_plies_and_tempting_moves() -> None:
    assert puzzle_start_rating(1, 0).r == 850
    assert puzzle_start_rating(5, 0).r < puzzle_start_rating(9, 0).r
    assert puzzle_start_rating(5, 0).r < puzzle_start_rating(5, 3).r
    assert puzzle_start_rating(5, 12).r == puzzle_start_rating(5, 40).r
    assert puzzle_start_rating(80, 40).r == 2600
    with pytest.raises(ValueError):
        puzzle_start_rating(0, 0)


def test_bad_scores_are_refused() -> None:
    with pytest.raises(ValueError, match="score"):
        update(PLAYER, [(Rating(), 2.0)])
