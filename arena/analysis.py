"""What a position and a game say to a player: the one place that the terminal game, the
web page and ``orderchaos mistakes`` get them from.

- :func:`board_facts`: the winning line (and its name, such as ``a1–e5``) and the fours, so
  that a page draws them without knowing the rules;
- :func:`hint`: the solver's verdict and winning moves when it proves the position in time,
  else the network's favourite moves and value;
- :func:`winning_move`: one move proven to keep the mover's win, trying likely moves first;
- :func:`study`: per position the solver's verdict, per move whether it kept or threw away
  the result (:func:`move_marks`), per Order move whether it kept the win that Order's
  central-pairing strategy proves (:func:`strategy_marks`), and the network's value curve;
- :func:`strategy_verdict`: for one Order move, whether it keeps the strategy's win and,
  where it does not, the strategy's own move.

Everything is data (winners, actions, numbers); wording is left to the caller
(:func:`hint_sentence` is the English one the terminal game prints).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orderchaos.envs.rules import AGENTS, CELLS, ORDER, SYMBOLS, State, action_name, cell_name, parse_cell

Solve = Callable[..., Any]
"""``solve(state, time_limit=..., node_limit=..., moves=...)`` returning a ``SolveResult``
(``orderchaos.agents.solver.Solver.solve``)."""



class MoveInputError(ValueError):
    """Text that is not a move here; the message says what was wrong and what is accepted."""


def parse_move(text: str, state: State) -> int:
    """The action for a typed move such as ``c3 X``, ``X c3`` or ``c3x`` (any case).

    Raises MoveInputError when the text is not a cell plus a symbol or the cell is taken.
    """
    tokens = text.replace(",", " ").lower().split()
    cell_text = symbol_text = None
    if len(tokens) == 2:
        if tokens[0] in ("x", "o"):
            symbol_text, cell_text = tokens
        elif tokens[1] in ("x", "o"):
            cell_text, symbol_text = tokens
    elif len(tokens) == 1 and len(tokens[0]) == 3:
        word = tokens[0]
        if word[0] in "xo":
            symbol_text, cell_text = word[0], word[1:]
        elif word[-1] in "xo":
            cell_text, symbol_text = word[:-1], word[-1]
    if cell_text is None or symbol_text is None:
        raise MoveInputError(
            f"could not read {text.strip()!r} as a move: type a cell (a-f, 1-6) and a "
            f"symbol (X or O), like 'c3 X' or 'X c3'; 'help' lists the commands"
        )
    try:
        cell = parse_cell(cell_text)
    except ValueError as exc:
        raise MoveInputError(f"could not read {text.strip()!r} as a move: {exc}") from None
    if (state.x | state.o) >> cell & 1:
        raise MoveInputError(
            f"{cell_name(cell)} already holds {state.cell(cell)}; choose an empty cell"
        )
    return 2 * cell + SYMBOLS.lower().index(symbol_text)


def board_facts(state: State) -> dict[str, Any]:
    """The facts a board view shows: ``board`` (36 cells, "X", "O" or ""), ``winning_line`` (cells of the fives, empty if none),
    ``line`` (its name from end to end, e.g. ``"a1–e5"``, or None), ``threats`` (for a live
    game, each empty cell where a symbol would make five: ``{"cell", "symbol"}``),
    ``to_play`` (None when over) and ``winner``."""
    line = list(state.winning_line)
    return {
        "board": ["" if state.cell(c) == "." else state.cell(c) for c in range(CELLS)],
        "to_play": None if state.is_terminal else state.to_play,
        "winner": state.winner,
        "winning_line": line,
        "line": f"{cell_name(min(line))}–{cell_name(max(line))}" if line else None,
        "threats": [] if state.is_terminal else [{"cell": c, "symbol": SYMBOLS[s]} for c, s in state.threats()],
    }


def move_list(actions: Sequence[int]) -> list[dict[str, Any]]:
    """A game's moves for a move list: ``{"ply", "side", "move"}`` each (ply from 1; Order
    makes the odd plies, as the side to move follows the stone count)."""
    return [{"ply": ply + 1, "side": AGENTS[ply % 2], "move": action_name(a)} for ply, a in enumerate(actions)]


def winning_move(state: State, solve: Solve, *, time_limit: float | None = None,
                 node_limit: int | None = None, candidates: Sequence[int] | None = None) -> int | None:
    """The first of ``candidates`` (default: a sensible move first, then every legal move)
    after which the mover provably still wins, within ``time_limit`` seconds in all or
    ``node_limit`` nodes per move; None when none is proven."""
    from orderchaos.agents.solver import fallback_action

    if candidates is None:
        first = fallback_action(state)
        candidates = [first] + [a for a in state.legal_actions() if a != first]
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    for action in candidates:
        child = state.apply(action)
        if child.winner == state.to_play:
            return int(action)
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            return None
        if solve(child, time_limit=left, node_limit=node_limit).winner == state.to_play:
            return int(action)
    return None


@dataclass
class Hint:
    """Advice for the side to move. ``source``: ``"solver"`` (``winner`` proven; ``actions``
    some winning moves when the mover wins, ``more`` how many others), ``"network"``
    (``actions`` its three favourite moves, ``value`` for the mover, -1..1) or ``"none"``."""

    winner: str | None
    actions: list[int] = field(default_factory=list)
    source: str = "none"
    more: int = 0
    value: float | None = None

    @property
    def action(self) -> int | None:
        """The first suggested move, if any."""
        return self.actions[0] if self.actions else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (moves also by name)."""
        return {"winner": self.winner, "actions": self.actions, "moves": [action_name(a) for a in self.actions],
                "source": self.source, "more": self.more, "value": self.value}


def hint(state: State, solve: Solve, time_limit: float, evaluator: Any = None, shown: int = 3,
         node_limit: int | None = None) -> Hint:
    """The solver's answer for the side to move within ``time_limit`` seconds (up to
    ``shown`` winning moves), else the network's (``evaluator.evaluate``), else nothing.
    A ``node_limit`` bounds each solver call by nodes instead of the time limit: the same
    answer however busy the machine is."""
    if state.is_terminal:
        raise ValueError("the game is over; there is nothing to hint")
    mover = state.to_play
    seconds = None if node_limit is not None else time_limit
    result = solve(state, time_limit=seconds, node_limit=node_limit, moves=True)
    if result.winner is not None:
        best = list(result.best_actions or [])
        if result.winner == mover and not best:
            found = winning_move(state, solve, time_limit=seconds, node_limit=node_limit)
            best = [] if found is None else [found]
        if result.winner != mover:
            best = []
        return Hint(result.winner, [int(a) for a in best[:shown]], "solver", max(0, len(best) - shown))
    if evaluator is None:
        return Hint(None)
    priors, values = evaluator.evaluate([state])
    top = [int(a) for a in priors[0].argsort()[::-1][:shown]]
    return Hint(None, top, "network", value=float(values[0]))


def hint_sentence(state: State, found: Hint, time_limit: float) -> str:
    """The hint as one English sentence for the side to move (the terminal game's)."""
    if found.winner is None:
        return f"hint: unknown (the solver could not prove a result within {time_limit:g} s)"
    if found.winner == state.to_play:
        move = f"; a winning move: {action_name(found.action)}" if found.action is not None else ""
        return f"hint: you ({state.to_play}) can force a win{move}"
    return f"hint: {found.winner} wins with perfect play from here; every move loses"


def move_marks(verdicts: Sequence[str | None]) -> list[str | None]:
    """For each move between positions with these solver verdicts (a game's positions in
    order, Order to move at even plies): ``"throws"`` when the mover had a proven win and
    lost it, ``"keeps"`` when the proven result stayed, None when either is unproven."""
    marks: list[str | None] = []
    for ply, (before, after) in enumerate(zip(verdicts, verdicts[1:])):
        mover = AGENTS[ply % 2]
        if before is None or after is None:
            marks.append(None)
        else:
            marks.append("throws" if before == mover and after != mover else "keeps")
    return marks


STRATEGY_KEEPS = "keeps"
"""Strategy mark of an Order move after which the strategy still proves Order's win."""
STRATEGY_LEAVES = "leaves"
"""Strategy mark of an Order move that gives up the win the strategy proved before it."""


@dataclass(frozen=True)
class StrategyVerdict:
    """What :mod:`orderchaos.agents.strategy` says of one Order move. ``mark``:
    :data:`STRATEGY_KEEPS`, :data:`STRATEGY_LEAVES`, or None when the strategy proved no win
    before the move (off the strategy, only a five Order can complete at once is proven
    again). ``strategy_move``: the strategy's own move
    in the position (None when it proved no win there); ``keeping``: every move that keeps
    the win, ascending."""

    mark: str | None
    strategy_move: int | None
    keeping: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (moves also by name)."""
        return {"mark": self.mark,
                "strategy_move": None if self.strategy_move is None else action_name(self.strategy_move),
                "keeping": [action_name(a) for a in self.keeping]}


def strategy_verdict(state: State, action: int) -> StrategyVerdict:
    """The strategy's verdict on Order playing ``action`` in ``state`` (Order to move, the
    action legal; IllegalActionError otherwise, ValueError with Chaos to move)."""
    from orderchaos.agents import strategy

    action = state.check_action(action)
    if state.to_play != ORDER:
        raise ValueError("the strategy judges Order's moves only; here Chaos is to move")
    if not strategy.covers(state):
        return StrategyVerdict(None, None)
    keeping = tuple(strategy.keeping_moves(state))
    mark = STRATEGY_KEEPS if action in keeping else STRATEGY_LEAVES
    return StrategyVerdict(mark, strategy.move(state), keeping)


def strategy_marks(actions: Sequence[int]) -> list[str | None]:
    """Per move of a game from the empty board: for Order's moves (even plies) the mark of
    :func:`strategy_verdict`, for Chaos's moves None."""
    from orderchaos.agents import strategy

    marks: list[str | None] = []
    state = State()
    for ply, action in enumerate(actions):
        if ply % 2 == 0 and strategy.covers(state):
            marks.append(STRATEGY_KEEPS if strategy.keeps_win(state, action) else STRATEGY_LEAVES)
        else:
            marks.append(None)
        state = state.apply(action)
    return marks


def study(actions: Sequence[int], solve: Solve, time_limit: float, evaluator: Any = None,
          node_limit: int | None = None) -> dict[str, Any]:
    """A game's analysis: ``verdicts`` (per position, the solver's winner or None when not
    proven within ``time_limit`` seconds, or within ``node_limit`` nodes when one is given),
    ``marks`` (per move, :func:`move_marks`),
    ``strategy`` (per move, :func:`strategy_marks`) and ``values``
    (per position, the network's value for Order, None without an evaluator; ±1 at the end)."""
    seconds = None if node_limit is not None else time_limit
    states = [State()]
    for a in actions:
        states.append(states[-1].apply(a))
    verdicts: list[str | None] = [None] * len(states)
    for i in reversed(range(len(states))):  # late positions first: their proofs help earlier ones
        verdicts[i] = solve(states[i], time_limit=seconds, node_limit=node_limit).winner
    live = [s for s in states if not s.is_terminal]
    net_values = iter(evaluator.evaluate(live)[1].tolist() if evaluator is not None and live else [])
    values: list[float | None] = []
    for s in states:
        if s.is_terminal:
            values.append(1.0 if s.winner == ORDER else -1.0)
        elif evaluator is None:
            values.append(None)
        else:
            v = next(net_values)
            values.append(v if s.to_play == ORDER else -v)
    return {"verdicts": verdicts, "marks": move_marks(verdicts), "strategy": strategy_marks(actions),
            "values": values}
