"""Our players as OpenSpiel bots (agents/openspiel_bot.py), played through OpenSpiel's own
game loop against OpenSpiel's bots."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="the openspiel extra is not installed: pip install -e '.[dev]'")

from open_spiel.python.algorithms.evaluate_bots import evaluate_bots  # noqa: E402 - after the skip

from orderchaos.agents import SpecError, make  # noqa: E402
from orderchaos.agents.openspiel_bot import AgentBot  # noqa: E402
from orderchaos.envs.rules import State  # noqa: E402


class RecordingBot(AgentBot):
    """An AgentBot that notes each position it was asked about and its answer."""

    def __init__(self, spec: str, seed: int) -> None:
        super().__init__(spec, seed=seed)
        self.moves: list[tuple[State, int]] = []

    def step(self, state: pyspiel.State) -> int:
        action = super().step(state)
        self.moves.append((State.from_string(state.observation_string(0)), action))
        return action


@pytest.fixture(scope="module")
def game() -> pyspiel.Game:
    import orderchaos.envs.openspiel  # noqa: F401 - registers python_order_chaos

    return pyspiel.load_game("python_order_chaos")


def replay(history: list[int]) -> State:
    state = State()
    for action in history:
        state = state.apply(action)
    return state


@pytest.mark.parametrize("seat", [0, 1])
def test_plays_full_games_against_openspiels_random_bot(game: pyspiel.Game, seat: int) -> None:
    """Through ``evaluate_bots``: every game ends, its returns are our rules' result, and
    every move the bot made is the agent's own choice in that position (an agent of the
    same spec and seed, asked the same positions in the same order)."""
    outcomes = []
    for seed in range(4):
        ours, oracle = RecordingBot("heuristic", seed), make("heuristic", seed=seed)
        bots = [pyspiel.make_uniform_random_bot(1 - seat, seed)]
        bots.insert(seat, ours)
        state = game.new_initial_state()
        returns = evaluate_bots(state, bots, np.random.RandomState(seed))
        final = replay(state.history())
        assert state.is_terminal() and final.is_terminal
        assert returns == [float(final.rewards()["order"]), float(final.rewards()["chaos"])]
        assert len(ours.moves) == sum(1 for i in range(len(state.history())) if i % 2 == seat) > 0
        for position, action in ours.moves:
            assert position.to_play_index == seat
            assert action == oracle.act(position)
        outcomes.append(returns[seat])
    # the rule-based player beats uniform random play from either seat
    assert outcomes == [1.0] * 4


def test_pretrained_with_search_plays_openspiels_mcts(game: pyspiel.Game) -> None:
    """``pretrained:sims=...`` as Chaos against OpenSpiel's (Python) MCTSBot, one game; the
    bot's policy is a distribution over the legal actions."""
    from open_spiel.python.algorithms import mcts

    ours = AgentBot("pretrained:sims=8")
    evaluator = mcts.RandomRolloutEvaluator(1, np.random.RandomState(0))
    opponent = mcts.MCTSBot(game, 2.0, 20, evaluator, random_state=np.random.RandomState(0))
    state = game.new_initial_state()
    returns = evaluate_bots(state, [opponent, ours], np.random.RandomState(0))
    assert state.is_terminal() and sorted(returns) == [-1.0, 1.0]
    assert ours.provides_policy()
    position = game.new_initial_state()
    for action in (28, 15, 44):
        position.apply_action(action)
    policy = ours.get_policy(position)
    assert [a for a, _ in policy] == position.legal_actions() and len(policy) == 66
    assert sum(p for _, p in policy) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "spec, says",
    [
        ("alphabeta", "unknown agent 'alphabeta'; accepted: random"),
        ("mcts:sims=lots", "parameter sims='lots' in agent spec 'mcts:sims=lots' must be int"),
        ("solver:depth=3", "unknown parameter 'depth' for agent 'solver'; accepted parameters: time, seed"),
    ],
)
def test_a_bad_spec_is_refused_in_one_line(spec: str, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        AgentBot(spec)
    message = str(caught.value)
    assert says in message and "\n" not in message


def test_an_object_without_act_is_refused() -> None:
    with pytest.raises(TypeError, match="act\\(state\\)"):
        AgentBot(42)  # type: ignore[arg-type]
