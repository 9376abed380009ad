"""Round robins in both roles and role-aware Bradley-Terry ratings.

Every entrant plays as Order against every entrant as Chaos (itself included), ``games``
games per pairing. Pairing (i, j) plays exactly the games of ``play_match(spec_i, spec_j,
games, seed)``: all pairings share the same seeded openings, which makes their results
directly comparable (common random numbers).

Ratings: Order and Chaos are different jobs, so each entrant gets two ratings, ``a_i`` as
Order and ``b_j`` as Chaos, with

    P(Order entrant i beats Chaos entrant j) = sigmoid(a_i - b_j).

(An Order-side advantage term would only shift all ``a`` against all ``b``, which the gauge
below absorbs.) The ratings are the maximum a posteriori fit under an independent Gaussian
prior of standard deviation ``prior_sd`` logits (a ridge, so that all-win pairings do not
diverge), found with Newton's method. Shifting every rating by one constant changes no
probability; the gauge is fixed by mean rating zero (which the ridge solution satisfies by
itself) or, with ``anchor``, by the anchor's mean of its two ratings being zero. Standard
errors come from the inverse Hessian (observed Fisher information plus the prior) projected
onto the gauge. Elo = logit * 400 / ln 10.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from orderchaos.arena.matches import (
    GameTask,
    check_games,
    check_opening_plies,
    check_workers,
    run_tasks,
    wilson_interval,
)
from orderchaos.envs.rules import AGENTS

ELO_PER_LOGIT = 400.0 / math.log(10.0)
Z95 = 1.959964


@dataclass
class RatingFit:
    """Fitted role ratings in logits, with standard errors (same gauge as the ratings)."""

    order: np.ndarray
    chaos: np.ndarray
    order_se: np.ndarray
    chaos_se: np.ndarray
    iterations: int

    def order_elo(self) -> np.ndarray:
        """Order ratings on the Elo scale."""
        return self.order * ELO_PER_LOGIT

    def chaos_elo(self) -> np.ndarray:
        """Chaos ratings on the Elo scale."""
        return self.chaos * ELO_PER_LOGIT

    def win_probability(self, order_index: int, chaos_index: int) -> float:
        """The model's probability that Order entrant ``order_index`` beats ``chaos_index``."""
        return float(1.0 / (1.0 + math.exp(self.chaos[chaos_index] - self.order[order_index])))


def _check_counts(wins: np.ndarray, games: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    wins = np.asarray(wins, dtype=np.float64)
    games = np.asarray(games, dtype=np.float64)
    if wins.ndim != 2 or wins.shape != games.shape:
        raise ValueError(
            f"wins and games must be 2-D arrays of one shape (Order rows x Chaos columns), "
            f"got {wins.shape} and {games.shape}"
        )
    if np.any(games < 0) or np.any(wins < 0) or np.any(wins > games):
        raise ValueError("need 0 <= wins <= games in every cell")
    return wins, games


def fit_ratings(
    wins: np.ndarray,
    games: np.ndarray,
    *,
    prior_sd: float = 3.0,
    anchor: int | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> RatingFit:
    """Fit Order ratings (rows) and Chaos ratings (columns) to a matrix of Order wins.

    ``wins[i, j]`` of ``games[i, j]`` games were won by Order entrant ``i`` against Chaos
    entrant ``j``. ``prior_sd`` is the ridge prior's standard deviation in logits.
    ``anchor`` (an index valid for both roles) sets that entrant's mean rating to zero;
    otherwise the mean of all ratings is zero. See the module docstring for the model.
    """
    wins, games = _check_counts(wins, games)
    if not prior_sd > 0:
        raise ValueError(f"prior_sd must be positive, got {prior_sd}")
    n_order, n_chaos = wins.shape
    if anchor is not None and not 0 <= anchor < min(n_order, n_chaos):
        raise ValueError(f"anchor {anchor} is not an entrant index in both roles")
    ridge = 1.0 / prior_sd**2
    theta = np.zeros(n_order + n_chaos)

    def split(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return t[:n_order], t[n_order:]

    def objective(t: np.ndarray) -> float:
        a, b = split(t)
        logits = a[:, None] - b[None, :]
        # -log-likelihood of binomial outcomes, written stably with logaddexp
        nll = np.sum(wins * np.logaddexp(0.0, -logits) + (games - wins) * np.logaddexp(0.0, logits))
        return float(nll + 0.5 * ridge * t @ t)

    iterations = 0
    value = objective(theta)
    for iterations in range(1, max_iter + 1):
        grad, hess = _gradient_hessian(theta, wins, games, n_order, ridge)
        step = np.linalg.solve(hess, grad)
        scale = 1.0
        while scale > 1e-8:  # backtracking keeps Newton monotone far from the optimum
            candidate = theta - scale * step
            new_value = objective(candidate)
            if new_value <= value:
                break
            scale *= 0.5
        theta, value = candidate, new_value
        if float(np.max(np.abs(scale * step))) < tol:
            break
    _, hess = _gradient_hessian(theta, wins, games, n_order, ridge)
    gauge = np.full(theta.size, 1.0 / theta.size)
    if anchor is not None:
        gauge = np.zeros(theta.size)
        gauge[anchor] = gauge[n_order + anchor] = 0.5
    projection = np.eye(theta.size) - np.outer(np.ones(theta.size), gauge)
    theta = projection @ theta
    cov = projection @ np.linalg.inv(hess) @ projection.T
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    a, b = split(theta)
    a_se, b_se = split(se)
    return RatingFit(a.copy(), b.copy(), a_se.copy(), b_se.copy(), iterations)


def _gradient_hessian(
    theta: np.ndarray, wins: np.ndarray, games: np.ndarray, n_order: int, ridge: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of the penalised negative log-likelihood."""
    a, b = theta[:n_order], theta[n_order:]
    p = 1.0 / (1.0 + np.exp(-(a[:, None] - b[None, :])))
    residual = games * p - wins  # d nll / d logit
    weight = games * p * (1.0 - p)
    grad = np.concatenate([residual.sum(axis=1), -residual.sum(axis=0)]) + ridge * theta
    hess = np.zeros((theta.size, theta.size))
    hess[:n_order, :n_order] = np.diag(weight.sum(axis=1))
    hess[n_order:, n_order:] = np.diag(weight.sum(axis=0))
    hess[:n_order, n_order:] = -weight
    hess[n_order:, :n_order] = -weight.T
    hess += ridge * np.eye(theta.size)
    return grad, hess


# ---------------------------------------------------------------------------------------
# Tournaments
# ---------------------------------------------------------------------------------------


@dataclass
class TournamentResult:
    """Results of every Order-entrant x Chaos-entrant pairing, and the fitted ratings."""

    entrants: list[str]
    games: int
    seed: int
    openings: int
    order_wins: np.ndarray  # (K, K) int: row = Order entrant, column = Chaos entrant
    mean_length: np.ndarray  # (K, K) float
    fit: RatingFit
    seconds: float
    anchor: str | None = None
    played: np.ndarray | None = None
    """Games played per pairing when the tournament was stopped early (None: ``games`` each)."""
    stopped: BaseException | None = field(default=None, repr=False, compare=False)
    """The KeyboardInterrupt (Ctrl-C, or a signal turned into one) that stopped it; the
    figures and ratings are those of the games finished before it."""

    @property
    def games_played(self) -> np.ndarray:
        """Games played in every pairing (rows Order, columns Chaos)."""
        return self.played if self.played is not None else np.full(self.order_wins.shape, self.games)

    @property
    def win_rate(self) -> np.ndarray:
        """The Order win rate of every pairing (rows Order, columns Chaos); NaN for a
        pairing a stopped tournament never reached."""
        played = self.games_played
        return np.divide(self.order_wins, played, out=np.full(played.shape, np.nan), where=played > 0)

    def rating_rows(self) -> list[dict]:
        """One dict per entrant: Elo and 95% interval in each role, and overall win rates."""
        rows = []
        k = len(self.entrants)
        for i, name in enumerate(self.entrants):
            row: dict = {"entrant": name}
            for role, values, se in (
                ("order", self.fit.order_elo(), self.fit.order_se * ELO_PER_LOGIT),
                ("chaos", self.fit.chaos_elo(), self.fit.chaos_se * ELO_PER_LOGIT),
            ):
                row[f"{role}_elo"] = float(values[i])
                row[f"{role}_elo_se"] = float(se[i])
                row[f"{role}_elo_ci95"] = [float(values[i] - Z95 * se[i]), float(values[i] + Z95 * se[i])]
            as_order, as_chaos = self.games_played[i].sum(), self.games_played[:, i].sum()
            row["order_win_rate"] = float(self.order_wins[i].sum() / as_order) if as_order else math.nan
            row["chaos_win_rate"] = float(1.0 - self.order_wins[:, i].sum() / as_chaos) if as_chaos else math.nan
            rows.append(row)
        return rows

    def pairing_rows(self) -> list[dict]:
        """One dict per pairing with wins, rate, Wilson interval and mean length."""
        rows = []
        for i, order in enumerate(self.entrants):
            for j, chaos in enumerate(self.entrants):
                w, n = int(self.order_wins[i, j]), int(self.games_played[i, j])
                lo, hi = wilson_interval(w, n)
                rows.append(
                    {
                        "order": order,
                        "chaos": chaos,
                        "games": n,
                        "order_wins": w,
                        "chaos_wins": n - w,
                        "order_win_rate": w / n if n else None,
                        "ci95_low": lo,
                        "ci95_high": hi,
                        "mean_length": float(self.mean_length[i, j]),
                    }
                )
        return rows

    def to_dict(self) -> dict:
        """A JSON-ready dict: settings, the win matrix, pairings and ratings."""
        return {
            "entrants": self.entrants,
            "games_per_pairing": self.games,
            "seed": self.seed,
            "openings": self.openings,
            "seconds": self.seconds,
            "anchor": self.anchor,
            "model": "P(order i beats chaos j) = sigmoid(a_i - b_j); Elo = logit*400/ln10",
            "stopped": self.stopped is not None,
            "games_played": self.games_played.tolist(),
            "order_wins": self.order_wins.tolist(),
            "order_win_rate": [[None if math.isnan(r) else r for r in row] for row in self.win_rate.tolist()],
            "pairings": self.pairing_rows(),
            "ratings": self.rating_rows(),
        }

    def table(self) -> str:
        """Markdown tables: ratings (best Order first) and the Order win-rate matrix."""
        rows = sorted(self.rating_rows(), key=lambda r: -r["order_elo"])
        lines = [
            "| entrant | Order Elo (95% CI) | Chaos Elo (95% CI) | wins as Order | wins as Chaos |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in rows:
            lines.append(
                f"| {r['entrant']} | {_elo_cell(r['order_elo'], r['order_elo_ci95'])} "
                f"| {_elo_cell(r['chaos_elo'], r['chaos_elo_ci95'])} "
                f"| {_rate_cell(r['order_win_rate'], '.0%')} | {_rate_cell(r['chaos_win_rate'], '.0%')} |"
            )
        lines += ["", "Order win rate (rows: Order, columns: Chaos):", ""]
        lines.append("| Order \\ Chaos | " + " | ".join(self.entrants) + " |")
        lines.append("|---|" + "---:|" * len(self.entrants))
        for i, name in enumerate(self.entrants):
            cells = " | ".join(_rate_cell(rate, ".2f") for rate in self.win_rate[i])
            lines.append(f"| {name} | {cells} |")
        return "\n".join(lines)


def _rate_cell(rate: float, spec: str) -> str:
    """A win rate in a table, or ``-`` for a pairing no game of which was played."""
    return "-" if math.isnan(rate) else format(rate, spec)


def _elo_cell(value: float, ci: Sequence[float]) -> str:
    return f"{value:+.0f} ({ci[0]:+.0f} to {ci[1]:+.0f})"


def run_tournament(
    specs: Sequence[str],
    games: int,
    seed: int = 0,
    *,
    openings: int = 0,
    workers: int = 1,
    progress: bool = False,
    prior_sd: float = 3.0,
    anchor: str | None = None,
) -> TournamentResult:
    """Play every entrant as Order against every entrant as Chaos and fit role ratings.

    ``specs`` are agent spec strings (at least two, no repeats). ``anchor`` names an
    entrant whose mean rating is set to zero (default: mean of all ratings zero). A
    KeyboardInterrupt after some games ends it with those games rated and ``stopped`` set;
    before the first one it propagates.
    """
    from orderchaos.agents.registry import check_role

    entrants = list(specs)
    if len(entrants) < 2:
        raise ValueError(f"a tournament needs at least two entrants, got {len(entrants)}")
    if len(set(entrants)) != len(entrants):
        raise ValueError(f"entrants must be distinct specs, got {entrants}")
    for spec in entrants:
        if not isinstance(spec, str):
            raise ValueError(f"entrants must be agent spec strings, got {spec!r}")
        for role in AGENTS:  # every entrant plays both sides
            check_role(spec, role)
    check_games(games, "games per pairing")
    check_games(games * len(entrants) ** 2, "the games of all pairings (entrants squared times games)")
    check_opening_plies(openings)
    check_workers(workers)
    if anchor is not None and anchor not in entrants:
        raise ValueError(f"anchor {anchor!r} is not an entrant; entrants: {', '.join(entrants)}")
    k = len(entrants)
    start = time.perf_counter()
    tasks = (
        GameTask(entrants[i], entrants[j], seed, (g,), openings)
        for i in range(k)
        for j in range(k)
        for g in range(games)
    )
    wins = np.zeros((k, k), dtype=np.int64)
    played = np.zeros((k, k), dtype=np.int64)
    lengths = np.zeros((k, k))
    stopped: KeyboardInterrupt | None = None
    try:
        for n, record in enumerate(run_tasks(tasks, workers, progress, total=k * k * games)):
            i, j = divmod(n // games, k)
            wins[i, j] += record.winner == "order"
            lengths[i, j] += record.length
            played[i, j] += 1
    except KeyboardInterrupt as exc:  # Ctrl-C: rate the games finished before it
        if not played.any():
            raise
        stopped = exc
    fit = fit_ratings(
        wins,
        played,
        prior_sd=prior_sd,
        anchor=None if anchor is None else entrants.index(anchor),
    )
    return TournamentResult(
        entrants, games, seed, openings, wins, lengths / np.maximum(played, 1), fit,
        time.perf_counter() - start, anchor, played if stopped is not None else None, stopped,
    )


# ---------------------------------------------------------------------------------------
# Files and plots
# ---------------------------------------------------------------------------------------


def write_outputs(result: TournamentResult, out_dir: str | Path) -> list[Path]:
    """Write pairings.csv, ratings.csv, tournament.json, tournament.md, heatmap.png and
    ratings.png into ``out_dir`` (created if needed); returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [
        _write_csv(out / "pairings.csv", result.pairing_rows()),
        _write_csv(out / "ratings.csv", [_flat(r) for r in result.rating_rows()]),
    ]
    json_path = out / "tournament.json"
    json_path.write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    md_path = out / "tournament.md"
    md_path.write_text(_markdown_report(result))
    written += [json_path, md_path]
    written.append(plot_heatmap(result, out / "heatmap.png"))
    written.append(plot_ratings(result, out / "ratings.png"))
    return written


def _flat(row: dict) -> dict:
    flat = {}
    for key, value in row.items():
        if isinstance(value, list):
            flat[f"{key}_low"], flat[f"{key}_high"] = value
        else:
            flat[key] = value
    return flat


def _write_csv(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _markdown_report(result: TournamentResult) -> str:
    return (
        f"Tournament: {len(result.entrants)} entrants, {result.games} games per pairing"
        f"{_stopped_text(result)} "
        f"(every entrant as Order against every entrant as Chaos), seed {result.seed}, "
        f"{result.openings} random opening plies, {result.seconds:.0f} s.\n"
        f"Ratings: P(order i beats chaos j) = sigmoid(a_i - b_j), Elo = logit x 400/ln 10, "
        f"{_gauge_text(result)}, 95% intervals from the Fisher information.\n\n"
        f"{result.table()}\n"
    )


def _stopped_text(result: TournamentResult) -> str:
    if result.stopped is None:
        return ""
    return f" (stopped after {int(result.games_played.sum())} of {result.games * result.order_wins.size} games)"


def _gauge_text(result: TournamentResult) -> str:
    if result.anchor is None:
        return "mean rating 0"
    return f"{result.anchor}'s mean rating 0"


def _pyplot():  # -> matplotlib.pyplot with the file-only backend
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_heatmap(result: TournamentResult, path: str | Path) -> Path:
    """A heatmap of Order win rates: rows Order entrants, columns Chaos entrants."""
    plt = _pyplot()
    k = len(result.entrants)
    fig, ax = plt.subplots(figsize=(1.6 * k + 2.5, 1.2 * k + 1.8))
    image = ax.imshow(result.win_rate, vmin=0.0, vmax=1.0, cmap="RdBu_r")
    ax.set_xticks(range(k), result.entrants, rotation=30, ha="right")
    ax.set_yticks(range(k), result.entrants)
    ax.set_xlabel("Chaos entrant")
    ax.set_ylabel("Order entrant")
    for i in range(k):
        for j in range(k):
            rate = result.win_rate[i, j]
            if math.isnan(rate):  # a pairing a stopped tournament never reached
                continue
            ax.text(j, i, f"{rate:.2f}", ha="center", va="center",
                    color="white" if abs(rate - 0.5) > 0.3 else "black")
    fig.colorbar(image, ax=ax, label="Order win rate")
    ax.set_title(f"Order win rate ({result.games} games per pairing{_stopped_text(result)})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_ratings(result: TournamentResult, path: str | Path) -> Path:
    """Each entrant's Order and Chaos Elo with 95% error bars."""
    plt = _pyplot()
    k = len(result.entrants)
    positions = np.arange(k)
    fig, ax = plt.subplots(figsize=(1.4 * k + 2.5, 4.0))
    for offset, role, values, se in (
        (-0.1, "as Order", result.fit.order_elo(), result.fit.order_se),
        (0.1, "as Chaos", result.fit.chaos_elo(), result.fit.chaos_se),
    ):
        ax.errorbar(positions + offset, values, yerr=Z95 * se * ELO_PER_LOGIT,
                    fmt="o", capsize=4, label=role)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xticks(positions, result.entrants, rotation=30, ha="right")
    ax.set_ylabel(f"Elo ({_gauge_text(result)})")
    ax.set_title("Role ratings with 95% intervals")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
