"""The lesson "how Order always wins": its steps, and one learner's move in a step judged by
the central-pairing strategy (:mod:`orderchaos.agents.strategy`) and answered by a Chaos that
looks for the learner's mistakes.

Each step is one idea with a board to try it on (:data:`STEPS`): a six counts; the open
four; the ten pairs of border cells; the border rule; why a central four then always wins;
the centre game; and a whole game from the empty board. The learner plays Order; after every
move :func:`lesson_turn` says whether it keeps the win the strategy proves (and if not, the
strategy's move), then plays Chaos's reply (:func:`chaos_reply`).

Wording is left to the page: a step is named by its id, and its texts live in the page's
catalogues under ``learn.<id>_title`` and ``learn.<id>_text``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from orderchaos.agents import strategy
from orderchaos.arena.analysis import STRATEGY_KEEPS, board_facts, strategy_verdict
from orderchaos.envs.rules import CHAOS, ORDER, IllegalActionError, State, action_name, cell_name, parse_action_name

Solve = Callable[..., Any]
"""``solve(state, time_limit=..., moves=...)`` returning a ``SolveResult``."""

GOAL_FIVE = "five"
"""The step is done when Order has five in a row."""
GOAL_KEEP = "keep"
"""The step is done after one move that keeps the strategy's win."""
GOAL_PAIRS = "pairs"
"""A quiz on the board's pairs: the page asks for the partners of :attr:`Step.quiz`."""
BORDER_MOVE_SHARE = 1 / 3
"""How often the lesson's Chaos tests the border rule when it could play in the centre."""
SOLVE_TIME = 1.0
"""Seconds the solver gets for a Chaos reply once Order has left the strategy."""


@dataclass(frozen=True)
class Step:
    """One step of the lesson: ``id`` (its catalogue keys), the moves from the empty board
    to its board (Order to move after them), its goal, and for a pairs quiz the cells
    whose partners are asked for."""

    id: str
    moves: tuple[str, ...]
    goal: str
    quiz: tuple[str, ...] = ()
    marked: tuple[str, ...] = ()
    """Cells the page points out on the step's board (the line or the cell the text is about)."""

    def start(self) -> State:
        """The step's board."""
        state = State()
        for name in self.moves:
            state = state.apply(parse_action_name(name))
        return state


STEPS: tuple[Step, ...] = (
    Step("six", ("a3 X", "c5 O", "b3 X", "e2 O", "c3 X", "b6 O", "e3 X", "d5 X", "f3 X", "a5 O"), GOAL_FIVE,
         marked=("a3", "b3", "c3", "d3", "e3", "f3")),
    Step("open_four", ("c4 X", "c2 O", "d4 X", "e2 X", "e4 X", "d2 O"), GOAL_FIVE,
         marked=("a4", "b4", "c4", "d4", "e4", "f4")),
    Step("pairs", (), GOAL_PAIRS, quiz=("c1", "a5", "f1")),
    Step("border", ("c3 X", "d4 O", "b2 X", "e1 X"), GOAL_KEEP, marked=("e1", "e6")),
    Step("central_four", ("b3 X", "c5 O", "c3 X", "d5 X", "d3 X", "b5 O", "e3 X", "a3 O"), GOAL_FIVE,
         marked=("a3", "b3", "c3", "d3", "e3", "f3")),
    Step("centre", ("c3 X", "d4 X"), GOAL_FIVE, marked=tuple(f"{c}{r}" for r in "2345" for c in "bcde")),
    Step("win", (), GOAL_FIVE),
)
"""The lesson, in order."""
STEP_IDS: tuple[str, ...] = tuple(step.id for step in STEPS)


def step_by_id(step_id: object) -> Step:
    """The step named ``step_id``; ValueError naming the steps otherwise."""
    for step in STEPS:
        if step.id == step_id:
            return step
    raise ValueError(f"no lesson step {str(step_id)[:40]!r}; the steps are {', '.join(STEP_IDS)}")


def _rng(state: State, seed: int) -> np.random.Generator:
    """A generator fixed by the seed and the position: the same game gets the same replies."""
    return np.random.default_rng([seed, state.x, state.o])


def defence_score(after: State) -> tuple[int, int]:
    """How well a Chaos move that led to ``after`` (Order to move) defends, lower better:
    the number of Order moves that keep the strategy's win, then minus the plies Order
    needs in the centre game to make a line of four (the solved centre game's value; a
    longer road leaves more room for a slip)."""
    plies = int(strategy.centre_table()[strategy.centre_index(after)])
    return len(strategy.keeping_moves(after)), -plies


def chaos_reply(state: State, solve: Solve, seed: int = 0) -> int:
    """Chaos's move in ``state`` (Chaos to move, game not over), looking for Order's mistakes.

    Where the strategy proves Order's win, Chaos never hands Order a five; of the centre
    moves it plays one that leaves Order the fewest moves keeping the strategy's win, the
    longest centre game breaking ties (:func:`defence_score`), and
    about one time in three (:data:`BORDER_MOVE_SHARE`) a border move instead, which only
    the border rule answers. When Order threatens a five, every move is weighed that way,
    so Chaos blocks where a block leaves the fewest wins. Once Order has left the strategy, Chaos plays a move that keeps
    its win when the solver proves one within :data:`SOLVE_TIME` seconds, else the fallback
    move (block a four). Deterministic for a given ``seed`` and position."""
    from orderchaos.agents.fallback import fallback_action

    if state.is_terminal or state.to_play != CHAOS:
        raise ValueError("chaos_reply needs a live position with Chaos to move")
    rng = _rng(state, seed)
    if strategy.covers(state):
        quiet = [a for a in state.legal_actions() if not state.apply_unchecked(a).has_five]
        border = [a for a in quiet if a >> 1 not in strategy.CENTRE_CELLS]
        candidates = [a for a in quiet if a >> 1 in strategy.CENTRE_CELLS]
        if state.threats():  # Order threatens a five: every move is weighed, blocks included
            candidates = quiet
        elif border and (not candidates or rng.random() < BORDER_MOVE_SHARE):
            return int(rng.choice(border))
        scores = [defence_score(state.apply_unchecked(a)) for a in candidates]
        best = min(scores)
        return int(rng.choice([a for a, score in zip(candidates, scores) if score == best]))
    result = solve(state, time_limit=SOLVE_TIME, moves=True)
    if result.winner == CHAOS and result.best_actions:
        return int(rng.choice(result.best_actions))
    return fallback_action(state)


def replay(step: Step, moves: Sequence[object]) -> State:
    """The step's board after ``moves`` (action numbers, both sides, from the step's start);
    ValueError (IllegalActionError) naming the first bad one."""
    if not isinstance(moves, (list, tuple)) or len(moves) > 36:
        raise ValueError("moves must be a list of at most 36 action numbers")
    state = step.start()
    for i, action in enumerate(moves):
        try:
            state = state.apply(action)  # type: ignore[arg-type]
        except IllegalActionError as exc:
            raise IllegalActionError(f"move {i + 1} of the list: {exc}") from None
    return state


def lesson_turn(step_id: object, moves: Sequence[object], action: object, solve: Solve,
                seed: int = 0) -> dict[str, Any]:
    """The learner (Order) plays ``action`` after ``moves`` in step ``step_id``: the
    strategy's verdict on it (:class:`~orderchaos.arena.analysis.StrategyVerdict` as a dict,
    under ``verdict``), Chaos's reply (``reply``: action and ``reply_name``, None when the
    game ended or the step is done), the board after both (``board_facts``), the full move
    list (``moves``: actions from the step's start) and ``done`` (the step's goal reached).
    ValueError (or IllegalActionError) for a bad step, move list or action, or a position
    where Chaos is to move."""
    step = step_by_id(step_id)
    if step.goal == GOAL_PAIRS:
        raise ValueError(f"the step {step.id!r} is a quiz on the pairs; it has no moves")
    state = replay(step, moves)
    if state.is_terminal:
        raise ValueError("this exercise is over; start it again")
    if state.to_play != ORDER:
        raise ValueError("the learner plays Order, and here Chaos is to move")
    action = state.check_action(action)
    verdict = strategy_verdict(state, action)
    after = state.apply(action)
    played = [*(int(a) for a in moves), action]  # type: ignore[call-overload]
    done = after.winner == ORDER if step.goal == GOAL_FIVE else verdict.mark == STRATEGY_KEEPS
    reply = None
    if not done and not after.is_terminal:
        reply = chaos_reply(after, solve, seed)
        after = after.apply(reply)
        played.append(reply)
        done = step.goal == GOAL_FIVE and after.winner == ORDER  # Chaos itself completed a five
    return {
        "step": step.id,
        "played": action_name(action),
        "verdict": verdict.to_dict(),
        "reply": reply,
        "reply_name": None if reply is None else action_name(reply),
        "moves": played,
        "done": done,
        **board_facts(after),
    }


def lesson_outline() -> dict[str, Any]:
    """What the page needs to draw the lesson: each step's id, goal, board (board facts),
    its quiz cells with their partners, and the cells it points out; and the ten pairs
    (:func:`~orderchaos.agents.strategy.pair_names`), each with a letter A-J."""
    partner = {a: b for a, b in strategy.pair_names()} | {b: a for a, b in strategy.pair_names()}
    return {
        "steps": [{"id": s.id, "goal": s.goal, "marked": list(s.marked),
                   "quiz": [{"cell": c, "partner": partner[c]} for c in s.quiz],
                   **board_facts(s.start())} for s in STEPS],
        "pairs": [{"letter": "ABCDEFGHIJ"[i], "cells": cells} for i, cells in enumerate(strategy.pair_names())],
        "centre": [cell_name(c) for c in strategy.CENTRE_CELLS],
    }
