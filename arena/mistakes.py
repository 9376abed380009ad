"""Learning from lost games: the move that lost a game, and the moves that would have won.

A network playing alone (greedy, no search) against a fixed opponent loses in a few
recurring ways, and self-play with search rarely visits the positions where it does. So,
DAgger-style, :func:`collect_mistakes` plays the network greedily against opponents, and for
every game it lost :func:`find_mistake` walks the game backwards with the exact solver to
the last position the network provably won: the move it played there provably lost. That
position, with the solver's winning moves as policy target and a won value, becomes a
training row (:func:`mistake_rows`).

Most Chaos positions are lost against perfect play, so the solver rarely places a Chaos
mistake; Chaos loses to a fallible Order by missing the moves that Order would fail to
answer. With ``rollouts``, a lost game the solver cannot explain is searched for a
*practical* mistake instead (:func:`find_practical_mistake`): the latest position where
another of the network's favourite moves wins greedy play-outs against the same opponent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from orderchaos.agents.base import Agent
from orderchaos.envs.encoding import action_masks, encode_states
from orderchaos.envs.rules import ACTIONS, AGENTS, ORDER, State

if TYPE_CHECKING:
    from orderchaos.agents.solver import SolveResult, Solver
    from orderchaos.arena.game_files import GameRecord
    from orderchaos.arena.positions import LabelledPosition

Preferences = Callable[[State], Sequence[int]]
"""The moves a player likes best in a position, most favoured first."""


@dataclass(frozen=True)
class Mistake:
    """A losing move: in ``state`` the mover played ``played`` and lost.

    ``proven``: the mover provably won ``state`` and provably lost after ``played``;
    ``winning`` lists proven winning moves: all of them, or (where listing them all
    exceeded the budget) the first proven one among the player's preferred moves.
    Otherwise a practical mistake: ``winning`` are moves after which the player won every
    play-out against the opponent that beat it (:func:`find_practical_mistake`)."""

    state: State
    played: int
    winning: tuple[int, ...]
    proven: bool = True


def _alternatives(state: State, preferences: Preferences, played: int) -> list[int]:
    """The legal moves among ``preferences(state)`` other than ``played``, in order."""
    legal = set(state.legal_actions())
    return [int(a) for a in preferences(state) if int(a) != played and int(a) in legal]


def ranked_moves(priors: np.ndarray, count: int) -> list[int]:
    """The ``count`` most probable actions of a 72-way policy, most probable first: a
    player's :data:`Preferences` from its policy (the finders skip illegal ones)."""
    return [int(a) for a in np.argsort(-priors, kind="stable")[:count]]


def _lost_game(actions: Sequence[int], role: str, start_ply: int) -> tuple[list[State], list[int]] | None:
    """For a game ``role`` lost: the position before each action (and the final one), and
    the plies from ``start_ply`` on where ``role`` moved, latest first. None when the game
    is unfinished or ``role`` won it."""
    if role not in AGENTS:
        raise ValueError(f"role must be one of {AGENTS}, got {role!r}")
    states = [State()]
    for action in actions:
        states.append(states[-1].apply(action))
    if states[-1].winner in (None, role):
        return None
    return states, [ply for ply in reversed(range(start_ply, len(actions))) if states[ply].to_play == role]


def _walk(
    solve: Callable[..., "SolveResult"], actions: Sequence[int], role: str, node_limit: int, start_ply: int
) -> tuple[State, int, list[int]] | None:
    """The walk of :func:`find_mistake`: the position of ``role``'s losing move, the move
    played there and the winning moves the solver listed (empty when listing them all
    exceeded the budget); None when there is none to place."""
    game = _lost_game(actions, role, start_ply)
    if game is None:
        return None
    states, plies = game
    for ply in plies:
        state = states[ply]
        result = solve(state, node_limit=node_limit, moves=True)
        if result.winner is None:
            return None
        if result.winner != role:
            continue
        return state, int(actions[ply]), [int(a) for a in result.best_actions or ()]
    return None


def _placed(
    solve: Callable[..., "SolveResult"], walked: tuple[State, int, list[int]], node_limit: int, others: list[int] | None
) -> Mistake | None:
    """The mistake at a position found by :func:`_walk`: its listed winning moves, else the
    first of ``others`` proven to win within a quarter of the budget; None when neither."""
    from orderchaos.arena.analysis import winning_move

    state, played, winning = walked
    if not winning and others is not None:
        found = winning_move(state, solve, node_limit=max(1, node_limit // 4), candidates=others)
        winning = [] if found is None else [found]
    return Mistake(state, played, tuple(winning)) if winning else None


def find_mistake(
    actions: Sequence[int],
    role: str,
    *,
    node_limit: int,
    start_ply: int = 0,
    preferences: Preferences | None = None,
    solver: "Solver | None" = None,
) -> Mistake | None:
    """The losing move of ``role`` in a game it lost (``actions`` from the empty board), or
    None when the solver cannot place one within ``node_limit`` nodes per position (or the
    game is unfinished or was not lost).

    Walks ``role``'s positions from the end back to ply ``start_ply`` (e.g. after a random
    opening): while the solver proves them lost it goes on; the first one it proves won is
    the position of the mistake (the next one was lost, so the move played there lost); an
    unproven one ends the walk with None. Then the winning moves are listed, or, if that
    exceeds the budget, the first of ``preferences(state)`` (other than the move played)
    proven to win within a quarter of it. ``solver`` defaults to the module-wide one.
    """
    from orderchaos.agents.solver import default_solver

    solve = (solver or default_solver()).solve
    walked = _walk(solve, actions, role, node_limit, start_ply)
    if walked is None:
        return None
    state, played, winning = walked
    others = None if winning or preferences is None else _alternatives(state, preferences, played)
    return _placed(solve, walked, node_limit, others)


@dataclass(frozen=True)
class Unlisted:
    """What :func:`mistake_job` returns for a position the player provably won (``state``,
    where it played ``played``) whose winning moves the solver could not list within the
    budget: the caller may run the job again with the player's preferred moves."""

    state: State
    played: int


def mistake_job(
    solver: "Solver",
    actions: Sequence[int],
    role: str,
    node_limit: int,
    start_ply: int,
    others: list[int] | None = None,
) -> Mistake | Unlisted | None:
    """:func:`find_mistake` for one lost game on ``solver`` (the first argument, as a
    :class:`~orderchaos.agents.solver_pool.SolverPool` job takes it). The solver is cleared
    first, so the result does not depend on what it solved before. Without ``others``, a won position whose
    winning moves were not listed comes back :class:`Unlisted`; run again with ``others``
    (the player's preferred moves there, other than the one played: the same walk is
    repeated), the first of them proven to win becomes the winning move."""
    solver.clear()
    walked = _walk(solver.solve, actions, role, node_limit, start_ply)
    if walked is None:
        return None
    if not walked[2] and others is None:
        return Unlisted(walked[0], walked[1])
    return _placed(solver.solve, walked, node_limit, others)


def play_out(state: State, role: str, learner: Agent, opponent: Agent) -> str:
    """The winner when ``learner`` plays ``role`` and ``opponent`` the other side from
    ``state`` to the end."""
    while not state.is_terminal:
        state = state.apply(learner.act(state) if state.to_play == role else opponent.act(state))
    return state.winner


def find_practical_mistake(
    actions: Sequence[int],
    role: str,
    *,
    learner: Agent,
    opponent: Callable[[int], Agent],
    preferences: Preferences,
    start_ply: int = 0,
    rollouts: int = 2,
    seed: int = 0,
) -> Mistake | None:
    """The latest move of ``role`` in a lost game that a move it also liked would have
    turned into wins against this opponent, or None.

    Walks ``role``'s positions from the end back to ply ``start_ply``; at each it tries
    ``preferences(state)`` other than the move played, and keeps those after which
    ``learner`` (deterministic, e.g. a greedy network) beats ``opponent(seed + k)`` in all
    of ``rollouts`` play-outs, k = 0, 1, ... The first position with any becomes a
    practical :class:`Mistake` (``proven=False``)."""
    if rollouts < 1:
        raise ValueError(f"rollouts must be at least 1, got {rollouts}")
    game = _lost_game(actions, role, start_ply)
    if game is None:
        return None
    states, plies = game
    for ply in plies:
        state, played = states[ply], int(actions[ply])
        winning = [
            a
            for a in _alternatives(state, preferences, played)
            if all(play_out(state.apply(a), role, learner, opponent(seed + k)) == role for k in range(rollouts))
        ]
        if winning:
            return Mistake(state, played, tuple(winning), proven=False)
    return None


@dataclass
class MistakeHunt:
    """What :func:`collect_mistakes` found: the mistakes (proven ones and practical
    ones), and the games behind them."""

    mistakes: list[Mistake]
    games: int
    lost: int

    @property
    def practical(self) -> int:
        """How many of the mistakes are practical rather than proven."""
        return sum(not m.proven for m in self.mistakes)


def collect_mistakes(
    learner: Agent,
    role: str,
    opponents: Sequence[str],
    games: int,
    seed: int,
    *,
    openings: int,
    node_limit: int,
    preferences: Preferences | None = None,
    rollouts: int = 0,
) -> MistakeHunt:
    """Play ``learner`` as ``role`` against each opponent spec for ``games`` games
    (``orderchaos.arena.matches.play_match`` with ``openings`` random plies, seeds from ``seed``) and
    return the mistake (:func:`find_mistake`) of every game it lost where one is found;
    with ``rollouts`` (and ``preferences``), a practical one
    (:func:`find_practical_mistake`) where the solver finds none.

    The lost games are walked by :func:`mistake_job` in this process; each walk starts from
    a cleared solver, so what is found does not depend on what was solved before (a
    node-limited proof depends on the transposition table's contents). The mistakes come in
    the order of the games.
    """
    from orderchaos.agents.registry import make
    from orderchaos.agents.solver import Solver
    from orderchaos.arena.matches import play_match

    played = 0
    lost: list[tuple[int, str, int, GameRecord]] = []  # (opponent index, spec, game index, record)
    for k, spec in enumerate(opponents):
        pair = (learner, spec) if role == ORDER else (spec, learner)
        match = play_match(*pair, games, seed=seed + k, openings=openings, keep_games=True)
        played += len(match.records)
        lost.extend((k, spec, index, r) for index, r in enumerate(match.records) if r.winner != role)
    solver = Solver()
    walks = [mistake_job(solver, r.actions, role, node_limit, r.opening_plies) for _, _, _, r in lost]
    for i, walk in enumerate(walks):
        if isinstance(walk, Unlisted):
            walks[i] = None if preferences is None else mistake_job(
                solver, lost[i][3].actions, role, node_limit, lost[i][3].opening_plies,
                _alternatives(walk.state, preferences, walk.played))
    found: list[Mistake] = []
    for (k, spec, index, record), mistake in zip(lost, walks):
        if mistake is None and rollouts and preferences is not None:
            mistake = find_practical_mistake(
                record.actions,
                role,
                learner=learner,
                opponent=lambda s, spec=spec: make(spec, seed=s),
                preferences=preferences,
                start_ply=record.opening_plies,
                rollouts=rollouts,
                seed=(seed + k) * 1_000_003 + index * rollouts,
            )
        if mistake is not None:
            found.append(mistake)
    return MistakeHunt(found, played, len(lost))


def mistake_rows(mistakes: Sequence[Mistake]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training rows ``(planes, masks, policies, values)`` for mistakes: each position with
    a uniform policy over its winning moves and value +1 (the mover wins, in theory or, for
    a practical mistake, against that opponent)."""
    return winning_rows([m.state for m in mistakes], [list(m.winning) for m in mistakes])


def winning_rows(
    states: Sequence[State], winning: Sequence[Sequence[int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training rows ``(planes, masks, policies, values)`` for positions the mover wins:
    a uniform policy over ``winning[i]``, the moves that keep the win, and value +1."""
    states = list(states)
    policies = np.zeros((len(states), ACTIONS), np.float32)
    for row, moves in enumerate(winning):
        policies[row, list(moves)] = 1.0 / len(moves)
    return encode_states(states), action_masks(states), policies, np.ones(len(states), np.float32)


def labelled_rows(positions: Sequence["LabelledPosition"]) -> dict[str, tuple[np.ndarray, ...]]:
    """:func:`winning_rows` for solver-labelled positions (``orderchaos.arena.positions``),
    split by the side to move; a role with no position is left out."""
    out: dict[str, tuple[np.ndarray, ...]] = {}
    for role in AGENTS:
        mine = [p for p in positions if p.state.to_play == role]
        if mine:
            out[role] = winning_rows([p.state for p in mine], [p.good_actions for p in mine])
    return out

