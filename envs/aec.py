"""The PettingZoo AEC env of Order and Chaos: agents ``"order"`` and ``"chaos"`` take
turns, each observing ``{"observation", "action_mask"}`` like PettingZoo's classic games.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from orderchaos.envs.order_chaos import (
    GameCore,
    check_illegal_action_mode,
    check_render_mode,
    observation_space,
    render_with,
)
from orderchaos.envs.rules import ACTIONS, AGENTS


class OrderChaosAECEnv(AECEnv):
    """Order and Chaos as a PettingZoo AEC game.

    * Agents ``"order"`` (moves first from the empty board) and ``"chaos"``; after a
      ``reset`` with ``options={"board": ...}`` the side to move follows the stone count.
    * ``observe(agent)``: ``{"observation": (3, 6, 6) int8, "action_mask": (72,) int8}``,
      observation encoding v1 (absolute: X plane, O plane, Chaos-to-move plane); the mask
      is all zeros for the agent that is not to move and once the game is over.
    * Rewards: zero-sum +1/-1 for both agents when the game ends, 0 before.
    * ``infos``: empty dicts during the game; at the end both hold the single env's info
      (``winner``, ``winning_line``, ``rewards``, ``decided``, ``end_reason``, ...).
    * ``illegal_action``: ``"raise"`` (IllegalActionError, nothing changes) or ``"lose"``
      (the mover loses). ``end_when_decided`` ends the game as a Chaos win once no five
      is possible. ``render_mode``: ``"ansi"``, ``"human"`` or ``"rgb_array"``.
    """

    metadata = {
        "name": "order_chaos_v0",
        "render_modes": ["human", "ansi", "rgb_array"],
        "render_fps": 4,
        "is_parallelizable": False,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        illegal_action: str = "raise",
        end_when_decided: bool = False,
    ) -> None:
        super().__init__()
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.illegal_action = check_illegal_action_mode(illegal_action)
        self.core = GameCore(end_when_decided)
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        self.action_spaces = {agent: spaces.Discrete(ACTIONS) for agent in AGENTS}
        self.observation_spaces = {agent: observation_space() for agent in AGENTS}
        self._no_moves = np.zeros(ACTIONS, dtype=np.int8)
        self._start_episode()

    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of ``agent`` (the same for both)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of ``agent``: ``Discrete(72)``."""
        return self.action_spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """The planes and ``agent``'s legal-action mask (fresh copies)."""
        core = self.core
        if agent == self.agent_selection:
            mask = core.mask.copy()
        elif agent in AGENTS:
            mask = self._no_moves.copy()
        else:
            raise ValueError(f"unknown agent {agent!r}; the agents are {', '.join(AGENTS)}")
        return {"observation": core.obs.copy(), "action_mask": mask}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a game, from ``options["board"]`` if given (board string or State);
        other option keys are ignored."""
        if seed is not None:
            self.np_random_seed = seed  # the game is deterministic; kept for the API
        # PettingZoo's api_test passes arbitrary options, so unknown keys are ignored here.
        self.core.start(options, strict=False)
        self._start_episode()
        if self.render_mode == "human":
            self.render()

    def _start_episode(self) -> None:
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: {} for agent in self.agents}
        self.agent_selection = self.core.to_play

    def step(self, action: Any) -> None:
        """Play ``action`` for ``agent_selection`` (None for an agent that is done)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        core = self.core
        core.step(action, self.illegal_action)
        self._cumulative_rewards[agent] = 0
        if core.terminated:
            self.rewards = core.rewards()
            self.terminations = dict.fromkeys(self.agents, True)
            info = core.info()
            self.infos = {name: dict(info) for name in self.agents}
            self._accumulate_rewards()
            self.agent_selection = AGENTS[1 - AGENTS.index(agent)]
        else:
            self.agent_selection = core.to_play
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | np.ndarray | None:
        """Render per ``render_mode`` (``"human"`` prints the ASCII board)."""
        return render_with(self, self.core)

    def close(self) -> None:
        """Nothing to release."""


def raw_aec_env(**kwargs: Any) -> OrderChaosAECEnv:
    """The AEC env without PettingZoo's order-enforcing wrapper (fastest)."""
    return OrderChaosAECEnv(**kwargs)


def aec_env(**kwargs: Any) -> AECEnv:
    """The AEC env wrapped like PettingZoo's classic envs (errors on calls out of order).
    Keyword arguments go to :class:`OrderChaosAECEnv`."""
    return wrappers.OrderEnforcingWrapper(OrderChaosAECEnv(**kwargs))
