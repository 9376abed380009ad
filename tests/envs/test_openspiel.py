"""The OpenSpiel game ``python_order_chaos`` (envs/openspiel.py) against our rules."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="the openspiel extra is not installed: pip install -e '.[dev]'")

from orderchaos.envs import openspiel as os_game  # noqa: E402 - after the skip
from orderchaos.envs.encoding import encode_state  # noqa: E402
from orderchaos.envs.rules import ACTIONS, IllegalActionError, State, action_name, parse_board  # noqa: E402


@pytest.fixture(scope="module")
def game() -> pyspiel.Game:
    return pyspiel.load_game("python_order_chaos")


def expected_returns(state: State) -> list[float]:
    rewards = state.rewards()
    return [float(rewards["order"]), float(rewards["chaos"])]


def assert_same(spiel_state: pyspiel.State, state: State) -> None:
    """Everything the OpenSpiel state reports agrees with our State."""
    assert spiel_state.is_terminal() == state.is_terminal
    expected_player = pyspiel.PlayerId.TERMINAL if state.is_terminal else state.to_play_index
    assert spiel_state.current_player() == expected_player
    assert spiel_state.legal_actions() == state.legal_actions()
    planes = encode_state(state).ravel().tolist()
    for player in (0, 1):
        legal = state.legal_actions() if player == expected_player else []
        assert spiel_state.legal_actions(player) == legal
        assert spiel_state.observation_string(player) == state.to_string()
        assert spiel_state.observation_tensor(player) == planes
    assert spiel_state.returns() == expected_returns(state)


def test_the_game_is_registered_as_specified(game: pyspiel.Game) -> None:
    kind = game.get_type()
    assert kind.short_name == "python_order_chaos"
    assert kind.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC
    assert kind.information == pyspiel.GameType.Information.PERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert kind.reward_model == pyspiel.GameType.RewardModel.TERMINAL
    assert (game.num_players(), game.num_distinct_actions(), game.max_game_length()) == (2, ACTIONS, 36)
    assert (game.min_utility(), game.max_utility(), game.utility_sum()) == (-1.0, 1.0, 0.0)
    assert game.observation_tensor_shape() == [3, 6, 6]
    state = game.new_initial_state()
    assert [state.action_to_string(0, a) for a in (0, 1, 28, 71)] == ["a1 X", "a1 O", "c3 X", "f6 O"]
    assert state.action_to_string(1, 29) == "c3 O"


def test_agrees_with_state_on_1000_random_games(game: pyspiel.Game) -> None:
    """Every legal-action list, player, observation, result and return along 1,000 seeded
    random games, and the winner at the end (both sides win some)."""
    rng = np.random.default_rng(37)
    winners = {"order": 0, "chaos": 0}
    for _ in range(1000):
        spiel_state, state = game.new_initial_state(), State()
        assert_same(spiel_state, state)
        while not state.is_terminal:
            action = int(rng.choice(state.legal_actions()))
            assert spiel_state.action_to_string(spiel_state.current_player(), action) == action_name(action)
            spiel_state.apply_action(action)
            state = state.apply(action)
            assert_same(spiel_state, state)
        assert os_game.state_of(spiel_state) == state
        winners[state.winner] += 1
    assert winners["order"] > 0 and winners["chaos"] > 0


def test_a_five_ends_the_game_whoever_makes_it(game: pyspiel.Game) -> None:
    """A Chaos move that completes a five loses for Chaos; the game is over at once."""
    spiel_state = game.new_initial_state()
    state = State()
    # X on a1..d1 and scattered O stones, then Chaos (7 stones: Chaos to move) plays e1 X.
    for action in (0, 2 * 30 + 1, 2, 2 * 32 + 1, 4, 2 * 34 + 1, 6):
        spiel_state.apply_action(action)
        state = state.apply(action)
    assert spiel_state.current_player() == 1
    spiel_state.apply_action(8)
    assert spiel_state.is_terminal() and spiel_state.current_player() == pyspiel.PlayerId.TERMINAL
    assert spiel_state.returns() == [1.0, -1.0] and spiel_state.rewards() == [1.0, -1.0]
    assert_same(spiel_state, state.apply(8))


def test_an_illegal_action_is_refused(game: pyspiel.Game) -> None:
    spiel_state = game.new_initial_state()
    spiel_state.apply_action(28)
    with pytest.raises(IllegalActionError, match="already holds X"):
        spiel_state.apply_action(29)
    assert os_game.state_of(spiel_state) == parse_board("......" "......" "..X..." + "." * 18)


def test_random_sim_test_with_serialization(game: pyspiel.Game) -> None:
    pyspiel.random_sim_test(game, num_sims=20, serialize=True, verbose=False)


def test_information_state_is_the_move_list(game: pyspiel.Game) -> None:
    spiel_state = game.new_initial_state()
    for action in (28, 15):
        spiel_state.apply_action(action)
    assert spiel_state.information_state_string(0) == "c3 X, b2 O"
    assert spiel_state.information_state_string(1) == "c3 X, b2 O"


def play_on(states: list[pyspiel.State], rng: np.random.Generator) -> None:
    """Play the same random moves on every state, checking they agree at every step."""
    while True:
        first = states[0]
        for other in states[1:]:
            assert other.history() == first.history()
            assert str(other) == str(first)
            assert other.legal_actions() == first.legal_actions()
            assert other.current_player() == first.current_player()
            assert other.returns() == first.returns()
            assert other.observation_tensor(0) == first.observation_tensor(0)
            assert other.information_state_string(0) == first.information_state_string(0)
        if first.is_terminal():
            return
        action = int(rng.choice(first.legal_actions()))
        for state in states:
            state.apply_action(action)


@pytest.mark.parametrize("plies", [0, 9, 20])
def test_a_clone_and_a_deserialized_state_continue_identically(game: pyspiel.Game, plies: int) -> None:
    rng = np.random.default_rng(plies)
    original = game.new_initial_state()
    for _ in range(plies):
        original.apply_action(int(rng.choice(original.legal_actions())))
    before = original.history()
    clone = original.clone()
    _, restored = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, original))
    unpickled = pickle.loads(pickle.dumps(original))
    copies = [clone, restored, unpickled]
    assert all(os_game.state_of(s) == os_game.state_of(original) for s in copies)
    play_on([clone, restored, unpickled], rng)  # continue the copies...
    assert original.history() == before  # ...which leaves the original where it was
    for copy in copies:  # and the original replays the same moves to the same end
        assert copy.is_terminal()
    for action in clone.history()[plies:]:
        original.apply_action(action)
    assert str(original) == str(clone) and original.returns() == clone.returns()


def test_state_of_refuses_another_games_state() -> None:
    with pytest.raises(ValueError, match="python_order_chaos") as caught:
        os_game.state_of(pyspiel.load_game("tic_tac_toe").new_initial_state())
    assert "\n" not in str(caught.value)


def test_the_documented_example_runs_and_prints_what_it_shows() -> None:
    """The OpenSpiel section of docs/environments.md, checked as the README's examples are."""
    from test_readme import python_blocks, run_blocks, shown_prints

    text = (Path(__file__).resolve().parents[2] / "docs" / "environments.md").read_text()
    section = text[text.index("## OpenSpiel"):text.index("## Players")]
    blocks = python_blocks(section)
    assert len(blocks) == 1 and len(shown_prints(blocks[0])) == 2
    assert run_blocks(blocks) == []
