"""A Gymnasium env in which the learner plays one seat against a fixed opponent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np

from orderchaos.envs.order_chaos import OrderChaosEnv
from orderchaos.envs.rules import AGENTS, IllegalActionError, State

Opponent = Callable[[State], int] | Any
"""A callable ``f(state) -> action`` or any object with ``act(state) -> action``."""


class SingleSeatEnv(OrderChaosEnv):
    """Order and Chaos from one seat: the learner plays ``role`` (``"order"`` or
    ``"chaos"``); after each learner move the ``opponent`` replies at once.

    Observations, actions and the info dict are those of :class:`OrderChaosEnv`
    (encoding v1 with the action mask). The reward is the learner's: +1 when the game
    ends in its favour, -1 when it ends against it (also when the opponent's reply ends
    the game), 0 otherwise. If the learner is Chaos, ``reset`` already plays the
    opponent's first move. ``info["opponent_action"]`` holds the reply (None if none).

    The opponent is a callable ``f(state) -> action`` or an object with
    ``act(state) -> action`` (e.g. any :class:`orderchaos.agents.base.Agent`); it is handed the
    immutable :class:`State`. An illegal reply raises :class:`IllegalActionError`
    naming the opponent. ``illegal_action`` (``"raise"``/``"lose"``) applies to the
    learner's actions; ``end_when_decided`` and ``render_mode`` are as in the single env.
    """

    def __init__(
        self,
        role: str,
        opponent: Opponent,
        *,
        illegal_action: str = "raise",
        end_when_decided: bool = False,
        render_mode: str | None = None,
    ) -> None:
        if role not in AGENTS:
            raise ValueError(f"role must be one of {AGENTS}, got {role!r}")
        act = getattr(opponent, "act", None)
        if callable(act):
            self._reply: Callable[[State], int] = act
        elif callable(opponent):
            self._reply = opponent
        else:
            raise TypeError(
                f"opponent must be a callable f(state) -> action or have an act(state) "
                f"method, got {type(opponent).__name__}"
            )
        super().__init__(render_mode, illegal_action, end_when_decided)
        self.role = role
        self.opponent = opponent

    def _info(self, opponent_action: int | None) -> dict[str, Any]:
        info = self.core.info()
        info["opponent_action"] = opponent_action
        return info

    def _opponent_moves(self) -> int | None:
        """Let the opponent reply if the game goes on and it is its turn."""
        core = self.core
        if core.terminated or core.to_play == self.role:
            return None
        action = self._reply(core.state)
        try:
            core.play(action)
        except IllegalActionError as exc:
            raise IllegalActionError(f"the opponent {self.opponent!r} chose an illegal action: {exc}") from None
        return int(action)

    def _learner_reward(self) -> float:
        if not self.core.terminated:
            return 0.0
        return 1.0 if self.core.winner == self.role else -1.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start a game (``options={"board": ...}`` as in the single env); the opponent
        moves first when it is to move there. A start position where the opponent's
        reply ends the game is rejected."""
        gymnasium.Env.reset(self, seed=seed)  # seeding only: the start differs from the base env
        self.core.start(options)
        reply = self._opponent_moves()
        if self.core.terminated:
            raise ValueError(
                "the opponent's first reply ended the game; choose a start position "
                "with a move left for the learner"
            )
        if self.render_mode == "human":
            self.render()
        return self.core.observation(), self._info(reply)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Play the learner's ``action``, then the opponent's reply."""
        core = self.core
        core.step(action, self.illegal_action)
        reply = self._opponent_moves()
        if self.render_mode == "human":
            self.render()
        return core.observation(), self._learner_reward(), core.terminated, False, self._info(reply)
