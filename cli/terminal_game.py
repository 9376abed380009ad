"""A human against any agent in the terminal, and text replays of finished games.

:func:`play_session` reads commands from any text stream and writes to another, so tests
drive it with scripted input. Nothing the human types can crash it or lose the game by a
typo: bad input gets a message and a new prompt, and end of input means quit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from orderchaos.agents.base import Agent
from orderchaos.envs.rules import (
    AGENTS,
    ORDER,
    IllegalActionError,
    State,
    action_name,
    render_ascii,
)
from orderchaos.arena.analysis import Hint, MoveInputError, hint, hint_sentence, parse_move
from orderchaos.arena.game_files import GameRecord

HELP_TEXT = """\
Moves: a cell (column a-f, row 1-6) and a symbol, in either order: 'c3 X', 'X c3', 'c3x'.
Either side may place X or O. Order wins with five in a row of one symbol (whoever placed
them); Chaos wins if the board fills up without one.
Commands:
  undo   take back your last move and the agent's reply
  hint   ask the solver who wins from here and for a best move (short time limit)
  board  show the board again
  help   show this text
  quit   leave the game (end of input also quits)"""

QUIT_WORDS = {"quit", "exit", "q"}


def solver_hint(state: State, time_limit: float) -> Hint:
    """The exact solver's verdict and winning moves within ``time_limit`` seconds
    (:func:`orderchaos.arena.analysis.hint` without a network)."""
    from orderchaos.agents.solver import default_solver

    return hint(state, default_solver().solve, time_limit)


def play_session(
    agent: Agent,
    human: str = ORDER,
    *,
    stdin: TextIO,
    stdout: TextIO,
    agent_label: str | None = None,
    hint_time: float = 1.0,
    hint_fn: Callable[[State, float], Hint] = solver_hint,
) -> str | None:
    """Play one game, the human as ``human`` ("order" or "chaos") against ``agent``.

    Reads commands line by line from ``stdin`` and writes boards and messages to
    ``stdout``. Returns the winner, or None when the human quits before the end.
    ``hint_fn`` answers ``hint`` (the exact solver by default).
    """
    if human not in AGENTS:
        raise ValueError(f"the human plays 'order' or 'chaos', got {human!r}")
    label = agent_label or getattr(agent, "name", "agent")
    session = _Session(agent, human, label, stdin, stdout, hint_time, hint_fn)
    return session.run()


class _Session:
    """The state of one interactive game: the moves so far and who made them."""

    def __init__(
        self,
        agent: Agent,
        human: str,
        label: str,
        stdin: TextIO,
        stdout: TextIO,
        hint_time: float,
        hint_fn: Callable[[State, float], Hint],
    ) -> None:
        self.agent, self.human, self.label = agent, human, label
        self.stdin, self.stdout = stdin, stdout
        self.hint_time, self.hint_fn = hint_time, hint_fn
        self.history: list[tuple[int, bool]] = []  # (action, made by the human)
        self.state = State()

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def show(self) -> None:
        last = self.history[-1][0] if self.history else None
        self.say(render_ascii(self.state, last))

    def read(self, prompt: str) -> str | None:
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if line == "":
            self.say("")
            return None
        return line.strip()

    def run(self) -> str | None:
        self.say(
            f"You play {self.human} against {self.label}. Order moves first; either side may "
            f"place X or O. Type 'help' for commands."
        )
        self.show()
        announced = False
        while True:
            if self.state.is_terminal:
                if not announced:
                    self.announce_result()
                    announced = True
                prompt = "game over (undo or quit)> "
            else:
                announced = False
                if self.state.to_play != self.human:
                    if not self.agent_move():
                        return None
                    continue
                prompt = f"{self.human} to move> "
            line = self.read(prompt)
            if line is None or line.lower() in QUIT_WORDS:
                self.say("bye")
                return self.state.winner
            self.handle(line)

    def announce_result(self) -> None:
        winner = self.state.winner
        verdict = "you win!" if winner == self.human else f"{self.label} wins."
        self.say(f"game over: {winner} wins -- {verdict}")

    def agent_move(self) -> bool:
        try:
            action = self.agent.act(self.state)
            self.state = self.state.apply(action)
        except IllegalActionError as exc:
            self.say(f"the agent {self.label} made an illegal move ({exc}); stopping")
            return False
        self.history.append((int(action), False))
        self.say(f"{self.label} plays {action_name(action)}")
        self.show()
        return True

    def handle(self, line: str) -> None:
        word = line.lower()
        if not word:
            return
        if word in ("help", "?", "h"):
            self.say(HELP_TEXT)
        elif word == "board":
            self.show()
        elif word == "undo":
            self.undo()
        elif word == "hint":
            self.hint()
        elif self.state.is_terminal:
            self.say("the game is over: type 'undo' to take back your last move, or 'quit'")
        else:
            try:
                action = parse_move(line, self.state)
            except MoveInputError as exc:
                self.say(str(exc))
                return
            self.state = self.state.apply(action)
            self.history.append((action, True))
            self.show()

    def undo(self) -> None:
        if not any(by_human for _, by_human in self.history):
            self.say("nothing to undo: you have not moved yet")
            return
        while True:
            action, by_human = self.history.pop()
            self.state = _without(self.state, action)
            if by_human:
                break
        self.say(f"took back your move {action_name(action)} and the reply after it")
        self.show()

    def hint(self) -> None:
        if self.state.is_terminal:
            self.say("the game is over; no hint needed")
            return
        found = self.hint_fn(self.state, self.hint_time)
        self.say(hint_sentence(self.state, found, self.hint_time))


def _without(state: State, action: int) -> State:
    """``state`` with the stone that ``action`` placed removed again."""
    bit = 1 << (action >> 1)
    return State(state.x & ~bit, state.o & ~bit)


def format_replay(record: GameRecord) -> str:
    """Every position of a game as an ASCII board, one after each move, last move marked."""
    state = State()
    blocks = [render_ascii(state)]
    for ply, action in enumerate(record.actions, 1):
        mover = state.to_play
        state = state.apply(action)
        tag = " (opening)" if ply <= record.opening_plies else ""
        blocks.append(f"ply {ply}: {mover} plays {action_name(action)}{tag}\n"
                      + render_ascii(state, action))
    return "\n\n".join(blocks)
