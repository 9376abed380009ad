"""The single-game Gymnasium environment ``OrderChaos-v0`` and its incremental game core.

:class:`GameCore` keeps one game's bitboards together with its observation planes and
action mask and updates them one cell per move; :class:`OrderChaosEnv`, the PettingZoo
AEC env (:mod:`orderchaos.envs.aec`) and :class:`orderchaos.envs.single_seat.SingleSeatEnv` are thin adapters
over it. The rules themselves come from :mod:`orderchaos.envs.rules`.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from orderchaos.envs.encoding import OBS_SHAPE, action_mask, encode_state
from orderchaos.envs.render import render_rgb
from orderchaos.envs.rules import (
    ACTIONS,
    AGENTS,
    ALL_WINDOWS,
    CELL_WINDOW_SETS,
    CELLS,
    CHAOS,
    ORDER,
    BoardStringError,
    IllegalActionError,
    State,
    completes_five,
    parse_board,
    render_ascii,
    window_set,
)

ENV_ID = "OrderChaos-v0"
ILLEGAL_ACTION_MODES = ("raise", "lose")
RESET_OPTIONS = ("board",)


def observation_space() -> spaces.Dict:
    """The observation space of one game: encoding v1 planes and the action mask."""
    return spaces.Dict(
        {
            "observation": spaces.Box(0, 1, OBS_SHAPE, np.int8),
            "action_mask": spaces.Box(0, 1, (ACTIONS,), np.int8),
        }
    )


def position_from(board: object) -> State:
    """A State from a board string or a State, or a BoardStringError saying what is accepted."""
    if isinstance(board, State):
        return board
    if isinstance(board, str):
        return parse_board(board)
    raise BoardStringError(
        f"a board must be a 36-character string of 'X', 'O', '.' or a State, "
        f"got {type(board).__name__}"
    )


class GameCore:
    """One game with its observation planes and mask kept up to date move by move.

    :attr:`obs` is the int8 ``(3, 6, 6)`` encoding v1 and ``mask`` the int8 legal-action
    vector; both are updated in place (callers copy them). Two observation buffers are
    kept, one per side to move, with the to-move plane preset, so a move writes two
    cells instead of refilling a plane. ``touched_x`` / ``touched_o`` are the rules' window
    sets of the X and the O stones (:func:`orderchaos.envs.rules.window_set`), kept up to
    date move by move, so that "decided" is one comparison; the five test and the winning
    line are the rules' own. The hot path writes single cells through
    memoryviews of the buffers (about half the cost of numpy item assignment).
    """

    __slots__ = (
        "x",
        "o",
        "num_stones",
        "touched_x",
        "touched_o",
        "terminated",
        "winner",
        "last_action",
        "end_reason",
        "end_when_decided",
        "mask",
        "obs",
        "_obs_by_side",
        "_obs_flat_by_side",
        "_obs_cells_by_side",
        "_mask_cells",
        "_mask_pairs",
    )

    def __init__(self, end_when_decided: bool = False) -> None:
        self.end_when_decided = bool(end_when_decided)
        self._obs_by_side = (np.zeros(OBS_SHAPE, dtype=np.int8), np.zeros(OBS_SHAPE, dtype=np.int8))
        self._obs_by_side[1][2] = 1
        self._obs_flat_by_side = tuple(o.reshape(-1) for o in self._obs_by_side)
        self._obs_cells_by_side = tuple(memoryview(o) for o in self._obs_flat_by_side)
        self.mask = np.zeros(ACTIONS, dtype=np.int8)
        self._mask_cells = memoryview(self.mask)
        # Both mask entries of a cell as one int16, so a move clears them in one write.
        self._mask_pairs = memoryview(self.mask.view(np.int16))
        # ``obs``: the observation planes of the current position (a live buffer; copy it).
        self.load(State())

    @property
    def state(self) -> State:
        """The position as an immutable State."""
        return State(self.x, self.o)

    @property
    def decided(self) -> bool:
        """True once no five is possible any more."""
        return self.touched_x & self.touched_o == ALL_WINDOWS

    @property
    def to_play(self) -> str:
        """``"order"`` or ``"chaos"``."""
        return AGENTS[self.num_stones & 1]

    def is_over_at(self, state: State) -> bool:
        """Whether ``state`` already counts as finished under this core's options."""
        return state.is_terminal or (self.end_when_decided and state.decided)

    def load(self, state: State) -> None:
        """Set the position (finished positions are loaded as finished games)."""
        self.x, self.o = state.x, state.o
        self.last_action: int | None = None
        self.end_reason: str | None = None
        if state.x == 0 and state.o == 0:  # the common case (every reset): a fresh game
            self.num_stones = self.touched_x = self.touched_o = 0
            self.obs = self._obs_by_side[0]
            self.winner: str | None = None
            self.terminated = False
            for planes in self._obs_flat_by_side:
                planes[: 2 * CELLS] = 0
            self.mask.fill(1)
            return
        self.num_stones = state.num_stones
        self.obs = self._obs_by_side[self.num_stones & 1]
        self.touched_x = window_set(state.x)
        self.touched_o = window_set(state.o)
        winner = state.winner
        if winner is None and self.end_when_decided and self.decided:
            winner = CHAOS
            self.end_reason = "decided"
        self.winner = winner
        self.terminated = winner is not None
        for planes in self._obs_by_side:
            planes[:2] = encode_state(state)[:2]
        self.mask[:] = action_mask(state)
        if self.terminated:
            self.mask[:] = 0

    def require_reset(self) -> None:
        """Mark the game as not started: the next move raises ResetNeeded until
        :meth:`load` (a reset) sets a position (a finished game with no winner)."""
        self.terminated = True
        self.winner = None
        self.end_reason = None
        self.mask.fill(0)

    def check(self, action: object) -> int:
        """``action`` as an int if it is legal now, else IllegalActionError (nothing changes);
        ResetNeeded before the first reset."""
        if self.terminated:
            if self.winner is None:
                raise ResetNeeded("call reset() before step(): no game has been started")
            raise IllegalActionError(
                f"the game is over ({self.winner} won); no action is legal, call reset()"
            )
        # The rules build the precise message (type, range or occupied cell).
        return State(self.x, self.o).check_action(action)

    def play(self, action: Any) -> float:
        """Play ``action`` and return the reward for the mover; an illegal action raises
        IllegalActionError (see :meth:`check`) and changes nothing."""
        # The mask is 0 on occupied cells and once the game is over.
        if type(action) is not int or not 0 <= action < ACTIONS or not self._mask_cells[action]:
            action = self.check(action)  # raises unless it is a legal non-int integer
        cell = action >> 1
        windows = CELL_WINDOW_SETS[cell]
        if action & 1:
            self.o = mine = self.o | (1 << cell)
            self.touched_o |= windows
            open_windows = windows & ~self.touched_x
            plane_index = CELLS + cell
        else:
            self.x = mine = self.x | (1 << cell)
            self.touched_x |= windows
            open_windows = windows & ~self.touched_o
            plane_index = cell
        self.num_stones = num_stones = self.num_stones + 1
        self.last_action = action
        planes = self._obs_cells_by_side
        planes[0][plane_index] = 1
        planes[1][plane_index] = 1
        self.obs = self._obs_by_side[num_stones & 1]
        self._mask_pairs[cell] = 0
        mover_is_order = num_stones & 1 == 1  # odd count now: Order just moved
        # Only a window through the cell with none of the opponent's stones can be a five.
        if open_windows and completes_five(mine, cell):
            return self._finish(ORDER, "five", 1.0 if mover_is_order else -1.0)
        if num_stones == CELLS:
            return self._finish(CHAOS, "full", -1.0 if mover_is_order else 1.0)
        if self.end_when_decided and self.touched_x & self.touched_o == ALL_WINDOWS:
            return self._finish(CHAOS, "decided", -1.0 if mover_is_order else 1.0)
        return 0.0

    def forfeit(self, reason: str) -> float:
        """End the game as a loss for the side to move (an illegal action); reward -1."""
        return self._finish(AGENTS[1 - (self.num_stones & 1)], f"illegal action: {reason}", -1.0)

    def _finish(self, winner: str, reason: str, reward: float) -> float:
        self.terminated = True
        self.winner = winner
        self.end_reason = reason
        self.mask[:] = 0
        return reward

    def rewards(self) -> dict[str, int]:
        """Zero-sum rewards of both agents: +1/-1 once over, zeros before."""
        if self.winner is None:
            return {ORDER: 0, CHAOS: 0}
        return {ORDER: 1, CHAOS: -1} if self.winner == ORDER else {ORDER: -1, CHAOS: 1}

    def winning_line(self) -> tuple[int, ...]:
        """Cells of every complete window (empty unless Order has won by a five)."""
        if self.end_reason != "five":
            return ()
        return State(self.x, self.o).winning_line

    def info(self) -> dict[str, Any]:
        """The info dict shared by the envs (see :class:`OrderChaosEnv`)."""
        if not self.terminated:  # the hot path: a literal, no calls
            return {
                "to_play": AGENTS[self.num_stones & 1],
                "winner": None,
                "winning_line": (),
                "rewards": {ORDER: 0, CHAOS: 0},
                "decided": self.touched_x & self.touched_o == ALL_WINDOWS,
                "last_action": self.last_action,
                "end_reason": None,
            }
        return {
            "to_play": AGENTS[self.num_stones & 1],
            "winner": self.winner,
            "winning_line": self.winning_line(),
            "rewards": self.rewards(),
            "decided": self.decided,
            "last_action": self.last_action,
            "end_reason": self.end_reason,
        }

    def start(self, options: dict[str, Any] | None, strict: bool = True) -> None:
        """Load the start position of reset ``options`` (``{"board": ...}`` or None);
        unknown option keys raise unless ``strict`` is False."""
        board = board_option(options, strict)
        self.load(State() if board is None else playable_position(self, board))

    def step(self, action: Any, illegal_action: str) -> float:
        """Play ``action``, or under ``illegal_action="lose"`` forfeit on an illegal one
        (a move after the end always raises); the reward for the mover."""
        try:
            return self.play(action)
        except IllegalActionError as exc:
            if illegal_action == "raise" or self.terminated:
                raise
            return self.forfeit(str(exc))

    def observation(self) -> dict[str, np.ndarray]:
        """Fresh copies of the planes and the action mask."""
        return {"observation": self.obs.copy(), "action_mask": self.mask.copy()}

    def render(self, mode: str) -> str | np.ndarray | None:
        """``"ansi"``: the text; ``"human"``: print it; ``"rgb_array"``: an image."""
        if mode == "rgb_array":
            return self.render_rgb()
        text = self.render_ansi()
        if mode == "human":
            print(text)
            return None
        return text

    def render_ansi(self) -> str:
        """The ASCII board with the last move and winning line marked, plus a status line."""
        text = render_ascii(State(self.x, self.o), self.last_action)
        if self.terminated and self.end_reason not in ("five", "full"):
            text += f"\ngame over: {self.winner} wins ({self.end_reason})"
        return text

    def render_rgb(self) -> np.ndarray:
        """An RGB image (uint8) of the board with the last move and winning line marked."""
        return render_rgb(State(self.x, self.o), self.last_action, self.winning_line())


def check_render_mode(mode: str | None, modes: list[str]) -> str | None:
    """Validate a ``render_mode`` against the env's ``modes``."""
    if mode is not None and mode not in modes:
        raise ValueError(f"render_mode must be one of {modes} or None, got {mode!r}")
    return mode


def render_with(env: Any, core: GameCore) -> str | np.ndarray | None:
    """``env.render()`` for the envs built on ``core``: warn and return None without a mode."""
    if env.render_mode is None:
        gymnasium.logger.warn(
            "render() called without a render_mode; pass render_mode='ansi', 'human' "
            "or 'rgb_array' to the constructor"
        )
        return None
    return core.render(env.render_mode)


def check_illegal_action_mode(mode: str) -> str:
    """Validate the ``illegal_action`` option."""
    if mode not in ILLEGAL_ACTION_MODES:
        raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {mode!r}")
    return mode


def board_option(options: dict[str, Any] | None, strict: bool = True) -> Any:
    """The ``"board"`` entry of reset ``options`` (None when absent); rejects options
    that are not a dict and (when ``strict``) unknown keys, naming the accepted ones."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
    unknown = set(options) - set(RESET_OPTIONS)
    if unknown and strict:
        raise ValueError(f"unknown reset option(s) {sorted(unknown)}; accepted: {list(RESET_OPTIONS)}")
    return options.get("board")


def playable_position(core: GameCore, board: object) -> State:
    """The State of ``board`` (a board string or State), rejected with BoardStringError
    when the game would already be over there under ``core``'s options."""
    state = position_from(board)
    if core.is_over_at(state):
        if state.has_five:
            why = "a five stands"
        elif state.is_full:
            why = "the board is full"
        else:
            why = "no five is possible any more and end_when_decided is set"
        raise BoardStringError(
            f"the board {state.to_string()!r} is already over ({why}); "
            "give a position with a move left to play"
        )
    return state


class OrderChaosEnv(gymnasium.Env):
    """Order and Chaos on a 6x6 board, both seats played through one env.

    ## Description
    Each move the player to move places an X or an O on any empty cell. Order (moving
    first) wins as soon as five identical symbols stand in a row, column or diagonal (a
    six counts; it does not matter who placed them, so a Chaos move that completes a
    five loses). Chaos wins when the board fills with no five. There are no draws.

    ## Action Space
    ``Discrete(72)``: action ``a = 2 * cell + symbol`` with ``cell = row * 6 + col`` and
    symbol 0 for X, 1 for O. Only actions on empty cells are legal (see the mask).

    ## Observation Space
    ``Dict(observation=Box(0, 1, (3, 6, 6), int8), action_mask=Box(0, 1, (72,), int8))``,
    observation encoding v1 (:mod:`orderchaos.envs.encoding`): plane 0 marks X stones, plane 1 O
    stones, plane 2 is all ones when Chaos is to move. ``action_mask`` is 1 for legal
    actions and all zeros once the game is over. Returned arrays are fresh copies.

    ## Rewards
    ``step`` returns the reward of the player who just moved: +1 if the move won, -1 if
    it lost (a Chaos move completing a five, an Order move that left the game decided
    with ``end_when_decided``, or an illegal action in ``"lose"`` mode), 0 otherwise.
    ``info["rewards"]`` holds the zero-sum rewards of both agents.

    ## Starting State
    The empty board with Order to move, or ``options={"board": "<36 chars>"}`` (a board
    string or a State; side to move by stone-count parity). A board that is already over
    (a five, a full board, or decided with ``end_when_decided``) is rejected with
    :class:`BoardStringError`.

    ## Episode End
    ``terminated`` becomes True when a five stands, when the board is full, when the
    game is decided (with ``end_when_decided=True``), or after an illegal action in
    ``"lose"`` mode. ``truncated`` is always False (a game lasts at most 36 moves).
    ``info`` holds ``to_play`` (``"order"``/``"chaos"``), ``winner`` (None until the end),
    ``winning_line`` (cells of the complete windows), ``rewards`` (both agents),
    ``decided`` (no five possible any more), ``last_action`` and ``end_reason``
    (``"five"``, ``"full"``, ``"decided"``, ``"illegal action: ..."`` or None).

    ## Arguments

    * ``render_mode``: ``"ansi"`` (a string), ``"human"`` (prints it) or ``"rgb_array"``.
    * ``illegal_action``: ``"raise"`` (default) raises :class:`IllegalActionError` (a
      ValueError) and leaves the state exactly unchanged; ``"lose"`` ends the game as a
      loss for the mover (no stone is placed; ``info["end_reason"]`` says why). A step
      after the end raises in both modes.
    * ``end_when_decided``: end the game as a Chaos win as soon as no five is possible.

    ## Version History

    * v0: initial version (observation encoding v1).
    """

    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        render_mode: str | None = None,
        illegal_action: str = "raise",
        end_when_decided: bool = False,
    ) -> None:
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.illegal_action = check_illegal_action_mode(illegal_action)
        self.action_space = spaces.Discrete(ACTIONS)
        self.observation_space = observation_space()
        self.core = GameCore(end_when_decided)
        self.core.require_reset()  # as the order-enforcing wrapper does, also unwrapped

    @property
    def state(self) -> State:
        """The current position."""
        return self.core.state

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start a game (see Starting State); returns the observation and info."""
        super().reset(seed=seed)
        self.core.start(options)
        if self.render_mode == "human":
            self.render()
        return self.core.observation(), self.core.info()

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Play ``action`` for the side to move; see the class docstring."""
        core = self.core
        try:
            reward = core.play(action)
        except IllegalActionError:
            # Off the hot path: raise again, or forfeit in "lose" mode.
            reward = core.step(action, self.illegal_action)
        if self.render_mode == "human":
            self.render()
        observation = {"observation": core.obs.copy(), "action_mask": core.mask.copy()}
        return observation, reward, core.terminated, False, core.info()

    def render(self) -> str | np.ndarray | None:
        """Render per ``render_mode`` (None, with a warning, when no mode was chosen)."""
        return render_with(self, self.core)


def register_envs() -> None:
    """Register ``OrderChaos-v0`` (single and native vector entry points) once."""
    if ENV_ID in gymnasium.registry:
        return
    gymnasium.register(
        id=ENV_ID,
        entry_point="orderchaos.envs.order_chaos:OrderChaosEnv",
        vector_entry_point="orderchaos.envs.vector:OrderChaosVectorEnv",
    )


__all__ = [
    "ENV_ID",
    "GameCore",
    "OrderChaosEnv",
    "observation_space",
    "register_envs",
]
