"""Any of our players as an OpenSpiel bot, for the ``python_order_chaos`` game.

Needs the ``open-spiel`` wheel (``pip install 'orderchaos[openspiel]'``)::

    import pyspiel
    from open_spiel.python.algorithms.evaluate_bots import evaluate_bots
    from orderchaos.agents.openspiel_bot import AgentBot

    game = pyspiel.load_game("python_order_chaos")
    bots = [AgentBot("solver:time=1"), pyspiel.make_uniform_random_bot(1, 0)]  # Order, Chaos
    print(evaluate_bots(game.new_initial_state(), bots, None))  # [1.0, -1.0]

(``solver`` without ``time=`` proves each move exactly, which from the empty board does not
finish; ``time=`` caps the seconds per move.)

The bot reads the position from the OpenSpiel state and asks the player for a move; it keeps
nothing between moves, so ``restart_at`` and ``inform_action`` have nothing to do.
"""

from __future__ import annotations

import pyspiel

from orderchaos.agents.base import Agent, SeedLike
from orderchaos.agents.registry import make
from orderchaos.envs.openspiel import state_of


class AgentBot(pyspiel.Bot):
    """A ``pyspiel.Bot`` playing one of our agents, given as a spec string
    (``"pretrained:sims=200"``, ``"solver"``, ...) or as an agent object.

    A bad spec raises :class:`~orderchaos.agents.registry.SpecError` (one line naming what
    is accepted) before any game starts. ``seed`` seeds a randomised agent whose spec gives
    no ``seed=`` of its own.
    """

    def __init__(self, agent: str | Agent, *, seed: SeedLike = None) -> None:
        player = make(agent, seed=seed) if isinstance(agent, str) else agent
        if not callable(getattr(player, "act", None)):
            raise TypeError(
                f"AgentBot needs an agent spec string or an object with act(state), "
                f"got {type(agent).__name__}"
            )
        pyspiel.Bot.__init__(self)
        self.agent = player

    def step(self, state: pyspiel.State) -> int:
        """The agent's move in ``state`` (an action number, 0..71)."""
        return int(self.agent.act(state_of(state)))

    def restart_at(self, state: pyspiel.State) -> None:
        """Nothing to reset: the bot reads the whole position at every step."""

    def inform_action(self, state: pyspiel.State, player_id: int, action: int) -> None:
        """Nothing to track: the bot reads the whole position at every step."""

    def provides_policy(self) -> bool:
        """True when the agent reports move probabilities (``policy(state)``)."""
        return callable(getattr(self.agent, "policy", None))

    def get_policy(self, state: pyspiel.State) -> list[tuple[int, float]]:
        """``(action, probability)`` over the legal actions, from the agent's policy."""
        probs = self.agent.policy(state_of(state))
        return [(a, float(probs[a])) for a in state.legal_actions()]

    def step_with_policy(self, state: pyspiel.State) -> tuple[list[tuple[int, float]], int]:
        """The policy and the move; the move is the agent's own choice (``act``), which
        for a searching player need not be a draw from the policy."""
        return self.get_policy(state), self.step(state)
