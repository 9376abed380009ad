"""Glicko-2 ratings (Glickman, "Example of the Glicko-2 system", 2013), for puzzles and players.

A rating is a :class:`Rating`: the rating ``r`` (1500 for a newcomer), its deviation ``rd``
(350: nothing known yet) and the volatility ``sigma`` (0.06). :func:`update` runs one rating
period: the player's rating after the games of the period against opponents whose ratings
are taken as they stood at its start. It follows the paper's steps 1-8 exactly, the new
volatility found by the Illinois variant of regula falsi (the paper's step 5.1-5.5).

A puzzle site treats every attempt as a game between the player and the puzzle in a
period of one game each (:func:`rate_attempt`): solving it is the player's win, failing it
the puzzle's. A new puzzle starts from a difficulty estimate (:func:`puzzle_start_rating`).

The PyPI package ``glicko2`` (one class, no volatility tolerance setting, last released
2024) does not fit well enough to add a dependency for about sixty lines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SCALE = 173.7178
"""The factor between the Glicko scale (r, RD) and the Glicko-2 scale (mu, phi): 400 / ln 10."""
DEFAULT_RATING = 1500.0
DEFAULT_DEVIATION = 350.0
DEFAULT_VOLATILITY = 0.06
DEFAULT_TAU = 0.5
"""The system constant: how much the volatility may change in a period (the paper's 0.3-1.2)."""
CONVERGENCE = 1e-6
"""The paper's convergence tolerance for the new volatility."""
MIN_DEVIATION = 30.0
"""Deviations never fall below this, so that a much-played rating can still move."""


@dataclass(frozen=True)
class Rating:
    """A Glicko-2 rating in the Glicko scale: rating, rating deviation and volatility."""

    r: float = DEFAULT_RATING
    rd: float = DEFAULT_DEVIATION
    sigma: float = DEFAULT_VOLATILITY

    @property
    def mu(self) -> float:
        """The rating in the Glicko-2 scale."""
        return (self.r - DEFAULT_RATING) / SCALE

    @property
    def phi(self) -> float:
        """The deviation in the Glicko-2 scale."""
        return self.rd / SCALE

    @classmethod
    def from_glicko2(cls, mu: float, phi: float, sigma: float) -> "Rating":
        """A rating from Glicko-2-scale values (the paper's step 8)."""
        return cls(DEFAULT_RATING + SCALE * mu, SCALE * phi, sigma)

    def to_dict(self) -> dict[str, float]:
        """A JSON-ready dict."""
        return {"r": self.r, "rd": self.rd, "sigma": self.sigma}


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _expected(mu: float, mu_j: float, phi_j: float) -> float:
    return 1.0 / (1.0 + math.exp(-_g(phi_j) * (mu - mu_j)))


def expected_score(player: Rating, opponent: Rating) -> float:
    """The player's expected score (0..1) against ``opponent`` (the paper's E)."""
    return _expected(player.mu, opponent.mu, opponent.phi)


def _new_volatility(phi: float, sigma: float, v: float, delta: float, tau: float) -> float:
    """Step 5: the new volatility, by the Illinois algorithm on f(x) = 0, x = ln sigma'^2."""
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex) ** 2) - (x - a) / (
            tau * tau
        )

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > CONVERGENCE:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


@dataclass(frozen=True)
class PeriodDetail:
    """The paper's intermediate quantities of one period: v (step 3) and delta (step 4)."""

    v: float
    delta: float


def period_detail(player: Rating, games: Sequence[tuple[Rating, float]]) -> PeriodDetail:
    """The estimated variance ``v`` and improvement ``delta`` of a period with ``games``."""
    if not games:
        raise ValueError("a rating period with games needs at least one (opponent, score)")
    inv_v = 0.0
    total = 0.0
    for opponent, score in games:
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"a score must be from 0 (loss) to 1 (win), got {score!r}")
        g = _g(opponent.phi)
        e = _expected(player.mu, opponent.mu, opponent.phi)
        inv_v += g * g * e * (1.0 - e)
        total += g * (score - e)
    v = 1.0 / inv_v
    return PeriodDetail(v, v * total)


def update(
    player: Rating, games: Sequence[tuple[Rating, float]], *, tau: float = DEFAULT_TAU
) -> Rating:
    """The player's rating after one rating period (the paper's steps 2-8).

    ``games`` holds ``(opponent's rating at the start of the period, score)`` with score 1
    for a win, 0.5 a draw, 0 a loss. A period without games only widens the deviation.
    """
    if not tau > 0:
        raise ValueError(f"tau must be positive, got {tau!r}")
    mu, phi, sigma = player.mu, player.phi, player.sigma
    if not games:
        return Rating.from_glicko2(mu, math.sqrt(phi * phi + sigma * sigma), sigma)
    detail = period_detail(player, games)
    new_sigma = _new_volatility(phi, sigma, detail.v, detail.delta, tau)
    phi_star = math.sqrt(phi * phi + new_sigma * new_sigma)
    new_phi = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / detail.v)
    new_mu = mu + new_phi * new_phi * detail.delta / detail.v
    return Rating.from_glicko2(new_mu, new_phi, new_sigma)


def rate_attempt(player: Rating, puzzle: Rating, solved: bool, *, tau: float = DEFAULT_TAU) -> tuple[Rating, Rating]:
    """New ratings of the player and the puzzle after one attempt, each a one-game period
    against the other's rating before the attempt (solved: the player's win). Deviations
    are kept at least :data:`MIN_DEVIATION`."""
    score = 1.0 if solved else 0.0
    new_player = _floor_deviation(update(player, [(puzzle, score)], tau=tau))
    new_puzzle = _floor_deviation(update(puzzle, [(player, 1.0 - score)], tau=tau))
    return new_player, new_puzzle


def _floor_deviation(rating: Rating) -> Rating:
    return rating if rating.rd >= MIN_DEVIATION else Rating(rating.r, MIN_DEVIATION, rating.sigma)


PUZZLE_BASE_RATING = 800.0
PLY_WEIGHT = 50.0
"""Rating points per ply to the end: a longer line is more to read."""
TEMPTING_WEIGHT = 60.0
"""Rating points per tempting wrong move (counted up to :data:`TEMPTING_CAP`)."""
TEMPTING_CAP = 12
PUZZLE_RATING_RANGE = (600.0, 2600.0)
PUZZLE_START_DEVIATION = 250.0
"""A difficulty estimate is a guess: a puzzle's rating starts less certain than an
established one, more certain than a newcomer's."""


def puzzle_start_rating(plies: int, tempting: int) -> Rating:
    """A new puzzle's rating from its difficulty: ``plies`` to the end of its line and the
    number of ``tempting`` wrong moves (:func:`orderchaos.learn.puzzles.tempting_moves`),
    ``800 + 50 plies + 60 min(tempting, 12)`` clamped to 600..2600, deviation 250."""
    if plies < 1 or tempting < 0:
        raise ValueError(f"plies must be at least 1 and tempting at least 0, got {plies} and {tempting}")
    low, high = PUZZLE_RATING_RANGE
    r = PUZZLE_BASE_RATING + PLY_WEIGHT * plies + TEMPTING_WEIGHT * min(tempting, TEMPTING_CAP)
    return Rating(min(high, max(low, r)), PUZZLE_START_DEVIATION, DEFAULT_VOLATILITY)
