"""A native Gymnasium vector env over the batch engine (:class:`orderchaos.envs.batch.BatchGame`).

``gymnasium.make_vec("OrderChaos-v0", num_envs=N, vectorization_mode="vector_entry_point")``
returns :class:`OrderChaosVectorEnv`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from orderchaos.envs.batch import ORDER_WINS, BatchGame
from orderchaos.envs.order_chaos import (
    GameCore,
    board_option,
    check_illegal_action_mode,
    check_render_mode,
    observation_space,
    playable_position,
)
from orderchaos.envs.render import render_rgb
from orderchaos.envs.rules import ACTIONS, CELLS, State, render_ascii

# The (Order, Chaos) rewards for winner 0, 1 and -1 (none yet; the last entry, so the
# winner itself is the index), each pair as one int64 holding two float32 bit patterns:
# a single 1-D gather then builds the (N, 2) rewards.
_REWARD_PAIRS = np.array([[1, -1], [-1, 1], [0, 0]], dtype=np.float32).view(np.int64)[:, 0]


class OrderChaosVectorEnv(VectorEnv):
    """N games of Order and Chaos stepped together by the array batch engine.

    Observations, masks and rewards are exactly those of :class:`OrderChaosEnv`,
    batched: ``{"observation": (N, 3, 6, 6) int8, "action_mask": (N, 72) int8}``;
    rewards ``(N,)`` float32 for the player who just moved in each game; ``terminated``
    ``(N,)`` bool; ``truncated`` all False.

    Info (arrays, one entry per game):

    * ``to_play``: int8, side to move, 0 Order, 1 Chaos;
    * ``winner``: int8, -1 none yet, 0 Order, 1 Chaos;
    * ``rewards``: float32 ``(N, 2)``, zero-sum rewards of (Order, Chaos);
    * ``decided``: bool, no five possible any more;
    * ``winning_line``: bool ``(N, 36)``, the cells of the complete windows;
    * ``illegal``: bool, the action was illegal and lost (``illegal_action="lose"``);
    * ``last_action``: int64, -1 before a game's first move.

    Autoreset: ``AutoresetMode.NEXT_STEP`` (Gymnasium's default). The step that ends a
    game returns its final observation with ``terminated`` True; on the next ``step``
    that game ignores its action, restarts and returns the fresh observation with
    reward 0 and ``terminated`` False. A game restarts from the position it was last
    reset to: the empty board, or ``options["board"]`` (one board for all, or one per
    game) of the latest ``reset``.

    Arguments: ``num_envs``; ``illegal_action`` (``"raise"``: raise
    :class:`IllegalActionError` and change no game; ``"lose"``: each game given an
    illegal action ends as a loss for its mover); ``end_when_decided``; ``backend``
    (``"numpy"`` or ``"torch"``) and ``device`` (``"cpu"``, ``"cuda"``, ...). With the
    torch backend every returned array is a torch tensor on ``device`` and actions may
    be given as tensors there (no host copies on the hot path).
    """

    metadata = {
        "render_modes": ["ansi", "rgb_array"],
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        num_envs: int = 1,
        *,
        illegal_action: str = "raise",
        end_when_decided: bool = False,
        backend: str = "numpy",
        device: str = "cpu",
        render_mode: str | None = None,
    ) -> None:
        check_render_mode(render_mode, self.metadata["render_modes"])
        self.game = BatchGame(
            num_envs,
            backend,
            device,
            end_when_decided=end_when_decided,
            illegal_action=check_illegal_action_mode(illegal_action),
        )
        self.num_envs = self.game.n
        self.render_mode = render_mode
        self.single_observation_space = observation_space()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = spaces.Discrete(ACTIONS)
        self.action_space = spaces.MultiDiscrete(np.full(self.num_envs, ACTIONS))
        self._rules_check = GameCore(end_when_decided)
        self._start_boards: list[State] | None = None
        self._needs_reset: Any = None  # None until the first reset: step() raises ResetNeeded
        self._reward_pairs = self.game.xp.asarray(_REWARD_PAIRS)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset every game (to ``options["board"]`` if given: one board string or State
        for all games, or a sequence with one per game); returns observations and info."""
        super().reset(seed=seed)
        self._start_boards = self._boards_from(options)
        self.game.reset(boards=self._start_boards)
        # A new array: the previous one was handed out as ``terminated`` by the last step.
        self._needs_reset = self.game.xp.zeros((self.num_envs,), self.game.xp.bool_)
        return self._observations(), self._info(self.game.terminated, None)

    def _boards_from(self, options: dict[str, Any] | None) -> list[State] | None:
        """Validated start positions, one per game, or None for empty boards."""
        board = board_option(options)
        if board is None:
            return None
        if isinstance(board, (str, State)):
            return [playable_position(self._rules_check, board)] * self.num_envs
        boards = list(board)
        if len(boards) != self.num_envs:
            raise ValueError(
                f"options['board'] holds {len(boards)} boards for {self.num_envs} games; "
                "give one board (string or State) for all, or one per game"
            )
        return [playable_position(self._rules_check, b) for b in boards]

    def step(self, actions: Any) -> tuple[dict[str, Any], Any, Any, Any, dict[str, Any]]:
        """Step every game (games that ended last step restart instead; see autoreset)."""
        game, xp = self.game, self.game.xp
        restarting = self._needs_reset
        if restarting is None:
            raise ResetNeeded("call reset() before step(): no games have been started")
        if not bool(restarting.any()):
            result = game.step(actions)
        elif self._start_boards is None:
            result = game.step(actions, restart=restarting)
        else:
            result = game.step(actions, active=~restarting)
            rows = xp.to_numpy(xp.nonzero(restarting))
            game.reset(idx=restarting, boards=[self._start_boards[int(i)] for i in rows])
        self._needs_reset = result.terminated
        truncated = xp.zeros((self.num_envs,), xp.bool_)
        info = self._info(result.terminated, result.illegal)
        return self._observations(), result.reward, result.terminated, truncated, info

    def _observations(self) -> dict[str, Any]:
        return {"observation": self.game.observations(), "action_mask": self.game.action_masks()}

    def _info(self, ended: Any, illegal: Any) -> dict[str, Any]:
        """Info arrays (see the class docstring) after a step with these results."""
        game, xp = self.game, self.game.xp
        winner = xp.copy(game.winner)
        # One 8-byte gather per game (both float32 rewards at once): numpy is slow at
        # filling or gathering rows of length 2.
        rewards = xp.take(self._reward_pairs, winner).view(xp.float32).reshape(self.num_envs, 2)
        winning_line = xp.zeros((self.num_envs, CELLS), xp.bool_)
        rows = xp.nonzero(ended & (winner == ORDER_WINS))
        if rows.shape[0]:
            # These games just ended, so their five runs through their last move.
            winning_line[rows] = game._last_move_lines(rows)
        return {
            "to_play": xp.astype(game.num_stones, xp.int8) & 1,  # int8 first: cheaper
            "winner": winner,
            "rewards": rewards,
            "decided": game.decided,
            "winning_line": winning_line,
            "illegal": illegal if illegal is not None else xp.zeros((self.num_envs,), xp.bool_),
            "last_action": xp.copy(game.last_action),
        }

    def render(self) -> tuple[Any, ...] | None:
        """One frame per game: ASCII text (``"ansi"``) or an RGB array (``"rgb_array"``)."""
        if self.render_mode is None:
            return None
        last = self.game.xp.to_numpy(self.game.last_action)
        frames = []
        for state, action in zip(self.game.states(), last):
            last_action = None if action < 0 else int(action)
            if self.render_mode == "ansi":
                frames.append(render_ascii(state, last_action))
            else:
                frames.append(render_rgb(state, last_action))
        return tuple(frames)
