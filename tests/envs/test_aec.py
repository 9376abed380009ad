"""The PettingZoo AEC env (envs/aec.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from orderchaos import envs
from orderchaos.envs.aec import OrderChaosAECEnv, raw_aec_env
from orderchaos.envs.encoding import action_mask, encode_state
from orderchaos.envs.rules import IllegalActionError, State, parse_board

# api_test's advisory warnings that follow from the fixed contract: dict observations with
# an action mask (PettingZoo silences these two only for its own classic games, by name),
# agent names "order"/"chaos" instead of "player_0", and the all-zero empty board (which
# tictactoe_v3 triggers too). Anything else fails the test.
EXPECTED_API_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box",
    "We recommend agents to be named in the format <descriptor>_<number>",
    "Observation numpy array is all zeros",
)


def test_api_test_passes() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api_test(envs.aec_env(), num_cycles=300)
        api_test(raw_aec_env(end_when_decided=True), num_cycles=300)
    unexpected = [str(w.message) for w in caught if not str(w.message).startswith(EXPECTED_API_WARNINGS)]
    assert unexpected == []


def test_seed_test_passes() -> None:
    """The env draws nothing at random (reset's seed is kept for the API only). PettingZoo's
    seed_test guards that it stays so: two envs reset with the same seed and fed the same
    seeded action samples must agree at every step, which randomness slipped into reset or
    step without the seed (a random opening stone, say) breaks."""
    seed_test(envs.aec_env, num_cycles=300)


def play_random_game(env: OrderChaosAECEnv, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    actions = []
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        actions.append(action)
        env.step(action)
    return actions


def test_random_game_matches_rules_and_rewards_are_zero_sum() -> None:
    env = raw_aec_env()
    rewards_seen = {"order": 0.0, "chaos": 0.0}
    env.reset()
    state = State()
    rng = np.random.default_rng(11)
    while True:
        agent = env.agent_selection
        obs, reward, terminated, truncated, info = env.last()
        rewards_seen[agent] += reward
        if terminated:
            env.step(None)
            if not env.agents:
                break
            continue
        assert agent == state.to_play
        assert np.array_equal(obs["observation"], encode_state(state))
        assert np.array_equal(obs["action_mask"], action_mask(state))
        other = "chaos" if agent == "order" else "order"
        assert not env.observe(other)["action_mask"].any()
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        state = state.apply(action)
        env.step(action)
    winner = state.winner
    assert rewards_seen[winner] == 1.0 and sum(rewards_seen.values()) == 0.0


def test_the_seed_does_not_change_the_game() -> None:
    """Different reset seeds (and none) give the same game for the same actions: the
    position and rewards depend on the actions alone."""
    actions = play_random_game(raw_aec_env(), 5)
    assert len(actions) > 5

    def replay(seed: int | None) -> list[tuple]:
        env = raw_aec_env()
        env.reset(seed=seed)
        seen = []
        for action in actions:
            obs = env.observe(env.agent_selection)
            seen.append((env.agent_selection, obs["observation"].tobytes(), obs["action_mask"].tobytes()))
            env.step(action)
        return seen + [tuple(sorted(env.rewards.items()))]

    assert replay(None) == replay(1) == replay(2**31 - 1)
    state = State()
    for action in actions:
        state = state.apply(action)
    order_reward = 1 if state.winner == "order" else -1  # the rules' winner
    assert state.is_terminal and replay(None)[-1] == (("chaos", -order_reward), ("order", order_reward))


def test_final_infos_and_board_option() -> None:
    env = raw_aec_env()
    env.reset(options={"board": "XXXX" + "." * 32})
    assert env.agent_selection == "order"
    env.step(8)  # X on e1: five
    assert all(env.terminations.values())
    assert env.rewards == {"order": 1, "chaos": -1}
    assert env.infos["chaos"]["winning_line"] == (0, 1, 2, 3, 4)
    env.reset(options={"board": "X" + "." * 35, "ignored": 1})
    assert env.agent_selection == "chaos" and env.core.state == parse_board("X" + "." * 35)


def test_illegal_actions() -> None:
    env = raw_aec_env()
    env.reset()
    env.step(0)
    with pytest.raises(IllegalActionError, match="already holds X"):
        env.step(1)
    assert env.core.state == State().apply(0) and env.agent_selection == "chaos"
    lose = raw_aec_env(illegal_action="lose")
    lose.reset()
    lose.step(0)
    lose.step(1)  # Chaos plays on the occupied a1 and loses
    assert lose.rewards == {"order": 1, "chaos": -1} and all(lose.terminations.values())


def test_render_modes(capsys: pytest.CaptureFixture[str]) -> None:
    env = raw_aec_env(render_mode="ansi")
    env.reset()
    env.step(3)
    assert "(O)" in env.render()
    image = raw_aec_env(render_mode="rgb_array")
    image.reset()
    assert image.render().dtype == np.uint8
    human = raw_aec_env(render_mode="human")
    human.reset()
    assert "order to move" in capsys.readouterr().out
    with pytest.raises(ValueError, match="render_mode must be one of"):
        raw_aec_env(render_mode="video")


@pytest.mark.parametrize("make", [envs.aec_env, raw_aec_env])
def test_observe_an_unknown_agent_raises(make) -> None:
    env = make()
    env.reset()
    with pytest.raises(ValueError, match="unknown agent 'nobody'; the agents are order, chaos"):
        env.observe("nobody")
    assert env.observe("chaos")["action_mask"].sum() == 0
    assert env.observe("order")["action_mask"].sum() == 72
