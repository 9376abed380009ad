"""Order and Chaos as an OpenSpiel game, registered as ``python_order_chaos``.

Importing this module registers the game with OpenSpiel (it needs the ``open-spiel`` wheel:
``pip install 'orderchaos[openspiel]'``); ``import orderchaos`` never imports it. Then::

    import pyspiel
    import orderchaos.envs.openspiel  # registers python_order_chaos
    game = pyspiel.load_game("python_order_chaos")

The game wraps :class:`orderchaos.envs.rules.State`, so it follows the project's contracts:

* two players, ``0`` = Order (moves first) and ``1`` = Chaos; sequential, deterministic,
  perfect information, zero-sum, terminal rewards ``+1`` / ``-1`` (no draws);
* 72 distinct actions, our numbers (``a = 2 * cell + symbol``, symbol 0 X, 1 O), named in our
  notation by ``action_to_string`` (``"c3 X"``); at most 36 moves;
* ``observation_tensor`` is our encoding (:mod:`orderchaos.envs.encoding`, shape (3, 6, 6):
  X stones, O stones, ones when Chaos is to move), the same for both players;
  ``observation_string`` is the 36-character board string; ``information_state_string`` is
  the moves so far in our notation (``"c3 X, d4 O"``);
* serialization, cloning and pickling through OpenSpiel's Python-game machinery (the state's
  Python attributes are the two bitboards and the terminal flag).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyspiel

from orderchaos.envs.encoding import OBS_SHAPE, encode_state
from orderchaos.envs.rules import ACTIONS, CELLS, ORDER, State, action_name, legal_action_list, render_ascii

GAME_NAME = "python_order_chaos"
"""The name OpenSpiel knows the game by (``pyspiel.load_game(GAME_NAME)``)."""
ORDER_PLAYER, CHAOS_PLAYER = 0, 1

GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Order and Chaos",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification={},
)
GAME_INFO = pyspiel.GameInfo(
    num_distinct_actions=ACTIONS,
    max_chance_outcomes=0,
    num_players=2,
    min_utility=-1.0,
    max_utility=1.0,
    utility_sum=0.0,
    max_game_length=CELLS,
)


class OrderChaosGame(pyspiel.Game):
    """The OpenSpiel game object of Order and Chaos (no parameters)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        super().__init__(GAME_TYPE, GAME_INFO, params or {})

    def new_initial_state(self) -> "OrderChaosState":
        """The empty board, Order to move."""
        return OrderChaosState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: dict | None = None
    ) -> "BoardObserver | HistoryObserver":
        """The observer OpenSpiel asks for: the board (observations), or the move list
        (information states, which need perfect recall)."""
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return BoardObserver(params)
        return HistoryObserver(iig_obs_type, params)


class OrderChaosState(pyspiel.State):
    """An OpenSpiel state over our rules.

    Its Python attributes are kept to two ints and a bool: OpenSpiel clones and serializes a
    Python state by copying (or pickling) its ``__dict__``, and MCTS clones at every step.
    """

    def __init__(self, game: OrderChaosGame) -> None:
        super().__init__(game)
        self._x = 0
        self._o = 0
        self._terminal = False

    @property
    def board(self) -> State:
        """The position as our immutable :class:`State`."""
        return State(self._x, self._o)

    # -- the OpenSpiel API ---------------------------------------------------------------
    def current_player(self) -> int:
        """0 (Order) or 1 (Chaos) by the stone count; ``PlayerId.TERMINAL`` once over."""
        if self._terminal:
            return pyspiel.PlayerId.TERMINAL
        return (self._x | self._o).bit_count() & 1

    def _legal_actions(self, player: int) -> list[int]:
        """The legal actions of the player to move, ascending (OpenSpiel calls this only
        for that player, and never once the game is over)."""
        return legal_action_list(self._x, self._o)

    def _apply_action(self, action: int) -> None:
        """Play ``action``; an illegal one raises :class:`~orderchaos.envs.rules.IllegalActionError`."""
        after = State(self._x, self._o).apply(action)
        self._x, self._o = after.x, after.o
        self._terminal = after.is_terminal

    def _action_to_string(self, player: int, action: int) -> str:
        """Our notation, e.g. ``"c3 X"`` (the same for both players)."""
        return action_name(action)

    def is_terminal(self) -> bool:
        """True once a five stands or the board is full."""
        return self._terminal

    def returns(self) -> list[float]:
        """``[Order, Chaos]``: ``[1, -1]`` after a five, ``[-1, 1]`` on a full board without
        one, ``[0, 0]`` while the game goes on."""
        if not self._terminal:
            return [0.0, 0.0]
        return [1.0, -1.0] if self.board.winner == ORDER else [-1.0, 1.0]

    def __str__(self) -> str:
        return render_ascii(self.board)


class BoardObserver:
    """Observations (OpenSpiel's PyObserver interface): our encoding as the tensor, the board
    string as the string; both players see the same, the game has perfect information."""

    def __init__(self, params: dict | None) -> None:
        if params:
            raise ValueError(f"python_order_chaos observations take no parameters; got {params}")
        self.tensor = np.zeros(int(np.prod(OBS_SHAPE)), np.float32)
        self.dict = {"observation": self.tensor.reshape(OBS_SHAPE)}

    def set_from(self, state: OrderChaosState, player: int) -> None:
        """Write the observation of ``state`` (the same for either ``player``)."""
        self.dict["observation"][...] = encode_state(state.board)

    def string_from(self, state: OrderChaosState, player: int) -> str:
        """The 36-character board string of ``state`` (row-major ``X``, ``O``, ``.``)."""
        return state.board.to_string()


class HistoryObserver:
    """Information states: with perfect recall a player knows every move so far, so the
    string is the move list in our notation (no tensor)."""

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType, params: dict | None) -> None:
        if params:
            raise ValueError(f"python_order_chaos observations take no parameters; got {params}")
        self._public = iig_obs_type.public_info
        self.tensor = None
        self.dict: dict[str, np.ndarray] = {}

    def set_from(self, state: OrderChaosState, player: int) -> None:
        """No tensor to write."""

    def string_from(self, state: OrderChaosState, player: int) -> str:
        """The moves so far, e.g. ``"c3 X, d4 O"`` (empty for private information only:
        the game has none)."""
        if not self._public:
            return ""
        return ", ".join(action_name(a) for a in state.history())


def state_of(state: pyspiel.State) -> State:
    """Our :class:`State` for an OpenSpiel state of ``python_order_chaos`` (read from its
    board string, so it works whichever side of OpenSpiel's Python/C++ bridge made it).

    Raises ValueError, in one line, for a state of another game.
    """
    name = state.get_game().get_type().short_name
    if name != GAME_NAME:
        raise ValueError(f"expected a state of OpenSpiel game {GAME_NAME!r}, got one of {name!r}")
    if isinstance(state, OrderChaosState):
        return state.board
    return State.from_string(state.observation_string(ORDER_PLAYER))


pyspiel.register_game(GAME_TYPE, OrderChaosGame)
