"""The native vector env (envs/vector.py) against single envs."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from orderchaos.envs import (
    BoardStringError,
    IllegalActionError,
    OrderChaosEnv,
    OrderChaosVectorEnv,
)
from orderchaos.envs.render import render_rgb
from orderchaos.envs.rules import State, parse_board, render_ascii
from helpers import FULL_BOARD_NO_FIVE


def test_make_vec_gives_the_native_vector_env() -> None:
    vec = gymnasium.make_vec("OrderChaos-v0", num_envs=5, vectorization_mode="vector_entry_point")
    assert isinstance(vec.unwrapped, OrderChaosVectorEnv)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = vec.reset(seed=1)
    assert obs["observation"].shape == (5, 3, 6, 6) and obs["action_mask"].shape == (5, 72)
    assert vec.observation_space.contains(obs)
    assert set(info) >= {"to_play", "winner", "rewards", "decided", "winning_line"}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_vector_env_matches_single_envs_with_next_step_autoreset(backend: str) -> None:
    reasons = match_single_envs(backend, end_when_decided=False, n=4, steps=80)
    assert reasons["five"] > 0 and reasons["full"] > 0 and reasons["decided"] == 0


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_vector_env_with_end_when_decided_matches_single_envs(backend: str) -> None:
    reasons = match_single_envs(backend, end_when_decided=True, n=8, steps=150)
    assert reasons["decided"] >= 3 and reasons["full"] == 0 and reasons["five"] > 0


def match_single_envs(backend: str, end_when_decided: bool, n: int, steps: int) -> dict[str, int]:
    """Step a vector env and n single envs with the same random actions, compare every
    output, and count how the single games ended."""
    vec = OrderChaosVectorEnv(n, backend=backend, end_when_decided=end_when_decided)
    singles = [OrderChaosEnv(end_when_decided=end_when_decided) for _ in range(n)]
    reasons = {"five": 0, "full": 0, "decided": 0}
    obs, _ = vec.reset()
    single_obs = [env.reset()[0] for env in singles]
    pending = [False] * n
    rng = np.random.default_rng(3)
    to_np = vec.game.xp.to_numpy
    for _ in range(steps):
        actions = np.array([rng.choice(np.flatnonzero(o["action_mask"])) if o["action_mask"].any() else 0 for o in single_obs])
        obs, reward, terminated, truncated, info = vec.step(vec.game.xp.asarray(actions))
        for i, env in enumerate(singles):
            if pending[i]:  # NEXT_STEP: this step restarts the game and ignores the action
                single_obs[i], _ = env.reset()
                expected_reward, expected_done, expected_info = 0.0, False, env.core.info()
            else:
                single_obs[i], expected_reward, expected_done, _, expected_info = env.step(int(actions[i]))
            assert np.array_equal(to_np(obs["observation"])[i], single_obs[i]["observation"])
            assert np.array_equal(to_np(obs["action_mask"])[i], single_obs[i]["action_mask"])
            assert to_np(reward)[i] == expected_reward and to_np(terminated)[i] == expected_done
            assert not to_np(truncated)[i]
            winner = expected_info["winner"]
            assert to_np(info["winner"])[i] == {None: -1, "order": 0, "chaos": 1}[winner]
            assert to_np(info["decided"])[i] == expected_info["decided"]
            assert list(to_np(info["rewards"])[i]) == [expected_info["rewards"]["order"], expected_info["rewards"]["chaos"]]
            assert tuple(np.flatnonzero(to_np(info["winning_line"])[i])) == tuple(expected_info["winning_line"])
            assert to_np(info["to_play"])[i] == ("order", "chaos").index(expected_info["to_play"])
            last = expected_info["last_action"]
            assert to_np(info["last_action"])[i] == (-1 if last is None else last)
            assert not to_np(info["illegal"])[i]
            pending[i] = expected_done
            if expected_done:
                reasons[expected_info["end_reason"]] += 1
    return reasons


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_vector_step_results_are_never_changed_by_later_steps(backend: str) -> None:
    vec = OrderChaosVectorEnv(6, backend=backend)
    to_np = vec.game.xp.to_numpy
    obs, _ = vec.reset()
    rng = np.random.default_rng(5)
    kept: list[tuple[object, np.ndarray]] = []
    for _ in range(60):  # several games end and restart on the way
        masks = to_np(obs["action_mask"])
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        obs, reward, terminated, truncated, info = vec.step(vec.game.xp.asarray(actions))
        for array in (*obs.values(), reward, terminated, truncated, *info.values()):
            kept.append((array, to_np(array).copy()))
    assert all(np.array_equal(to_np(array), snapshot) for array, snapshot in kept)


def test_vector_illegal_actions() -> None:
    vec = OrderChaosVectorEnv(3)
    vec.reset()
    vec.step(np.array([0, 2, 4]))
    before = (vec.game.states(), vec.game.observations())
    with pytest.raises(IllegalActionError, match="game 1"):
        vec.step(np.array([6, 2, 8]))
    assert vec.game.states() == before[0] and np.array_equal(vec.game.observations(), before[1])
    lose = OrderChaosVectorEnv(2, illegal_action="lose")
    lose.reset()
    lose.step(np.array([0, 0]))
    _, reward, terminated, _, info = lose.step(np.array([1, 3]))
    assert list(reward) == [-1.0, 0.0] and list(terminated) == [True, False]
    assert list(info["illegal"]) == [True, False] and info["winner"][0] == 0


def test_vector_board_option_and_restart_position() -> None:
    vec = OrderChaosVectorEnv(2)
    obs, _ = vec.reset(options={"board": ["XXXX" + "." * 32, "O" + "." * 35]})
    assert vec.game.states()[1] == parse_board("O" + "." * 35)
    vec.step(np.array([8, 2]))  # game 0: X on e1 makes five
    _, reward, terminated, _, _ = vec.step(np.array([10, 4]))
    assert vec.game.states()[0] == parse_board("XXXX" + "." * 32)  # restarted from its board
    with pytest.raises(ValueError) as wrong_count:
        vec.reset(options={"board": ["." * 36]})
    assert str(wrong_count.value) == ("options['board'] holds 1 boards for 2 games; "
                                      "give one board (string or State) for all, or one per game")
    with pytest.raises(BoardStringError, match="already over"):
        vec.reset(options={"board": "XXXXX" + "." * 31})


def test_vector_render() -> None:
    vec = OrderChaosVectorEnv(2, render_mode="ansi")
    vec.reset()
    assert vec.render() == (render_ascii(State()),) * 2  # no last move marked yet
    vec.step(np.array([0, 3]))
    frames = vec.render()
    assert frames == (render_ascii(State().apply(0), 0), render_ascii(State().apply(3), 3))
    rgb = OrderChaosVectorEnv(2, render_mode="rgb_array")
    rgb.reset()
    rgb.step(np.array([0, 3]))
    images = rgb.render()
    assert len(images) == 2
    assert np.array_equal(images[1], render_rgb(State().apply(3), 3))
    assert OrderChaosVectorEnv(1).render() is None


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("board", [None, "XXXX." + "." * 31])
def test_reset_after_a_finished_game_plays_the_next_action(backend: str, board: str | None) -> None:
    """A game that ended last step is waiting to restart; reset() must clear that, so the
    first action after it is played, not swallowed by the pending autoreset."""
    env = OrderChaosVectorEnv(2, backend=backend)
    options = None if board is None else {"board": board}
    env.reset(options=options)
    # Game 0 ends (Order completes a row of X); game 1 plays an ordinary move.
    first = [8, 71]
    if board is None:  # four X stones in game 0 first; scattered O stones in game 1
        for a in ([0, 71], [2, 1], [4, 25], [6, 49]):
            env.step(np.array(a))
        first = [8, 13]
    _, _, terminated, _, _ = env.step(np.array(first))
    assert terminated.tolist() == [True, False]
    env.reset(options=options)
    start = 0 if board is None else 4
    obs, reward, terminated, _, info = env.step(np.array([60, 61]))
    stones = np.asarray(obs["observation"])[:, :2].sum(axis=(1, 2, 3))
    assert stones.tolist() == [start + 1, start + 1]  # both games placed their stone
    assert np.asarray(info["last_action"]).tolist() == [60, 61]
    assert not np.asarray(terminated).any()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_step_before_reset_raises(backend: str) -> None:
    env = OrderChaosVectorEnv(3, backend=backend)
    with pytest.raises(gymnasium.error.ResetNeeded,
                       match=r"^call reset\(\) before step\(\): no games have been started$"):
        env.step(np.zeros(3, dtype=np.int64))
    env.reset()
    env.step(np.zeros(3, dtype=np.int64))


def test_reset_does_not_change_the_terminated_array_a_step_returned() -> None:
    env = OrderChaosVectorEnv(1)
    env.reset(options={"board": "XXXX." + "." * 31})
    _, _, terminated, _, _ = env.step(np.array([8]))
    env.reset()
    assert terminated.tolist() == [True]


def test_the_defaults_are_one_game_that_goes_on_when_decided() -> None:
    env = OrderChaosVectorEnv()
    assert env.num_envs == 1
    assert env.single_action_space == gymnasium.spaces.Discrete(72)
    assert env.action_space == gymnasium.spaces.MultiDiscrete([72])
    decided = FULL_BOARD_NO_FIVE[:-2] + ".."  # no five is possible any more
    assert parse_board(decided).decided
    env.reset(options={"board": decided})
    with pytest.raises(BoardStringError, match="end_when_decided"):
        OrderChaosVectorEnv(end_when_decided=True).reset(options={"board": decided})
