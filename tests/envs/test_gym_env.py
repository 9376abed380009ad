"""Gymnasium envs: OrderChaos-v0 (registration, conformance, single-env semantics,
rendering) and the single-seat env."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from orderchaos import envs
from orderchaos.envs import (
    BoardStringError,
    IllegalActionError,
    OrderChaosEnv,
    SingleSeatEnv,
    State,
)
from orderchaos.envs.encoding import action_mask, encode_state
from orderchaos.envs.render import render_rgb
from orderchaos.envs.rules import CELLS, parse_board

from helpers import (
    FULL_BOARD_NO_FIVE,
    assert_reaches_ends,
    check_examples,
    game_actions,
    games,
)

CHAOS_TO_COMPLETE = "XOXOXO" + "XO...." + "XO...." + "XO...." + "." * 12  # X and O fours in a/b


def first_legal(state: State) -> int:
    return state.legal_actions()[0]


class FirstLegalAgent:
    """An opponent object with ``act``, like orderchaos.agents.base.Agent."""

    name = "first-legal"

    def act(self, state: State) -> int:
        return state.legal_actions()[-1]


def snapshot(env: OrderChaosEnv) -> tuple:
    core = env.core
    return (core.state, core.obs.copy(), core.mask.copy(), core.info(), core.terminated)


def test_registered_with_both_entry_points() -> None:
    spec = gymnasium.spec("OrderChaos-v0")
    assert spec.entry_point == "orderchaos.envs.order_chaos:OrderChaosEnv"
    assert spec.vector_entry_point == "orderchaos.envs.vector:OrderChaosVectorEnv"
    envs.register_envs()  # a second registration is a no-op, not an error
    assert isinstance(gymnasium.make("OrderChaos-v0").unwrapped, OrderChaosEnv)


def test_check_env_passes_without_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gymnasium.make("OrderChaos-v0").unwrapped)  # also tries every render mode
        check_env(gymnasium.make("OrderChaos-v0", illegal_action="lose", end_when_decided=True).unwrapped)
    capsys.readouterr()  # the human render mode printed boards


def test_spaces() -> None:
    env = OrderChaosEnv()
    assert env.action_space == gymnasium.spaces.Discrete(72)
    obs_space = env.observation_space
    assert obs_space["observation"] == gymnasium.spaces.Box(0, 1, (3, 6, 6), np.int8)
    assert obs_space["action_mask"] == gymnasium.spaces.Box(0, 1, (72,), np.int8)


def test_reset_from_a_board() -> None:
    env = OrderChaosEnv()
    obs, info = env.reset(options={"board": "X" + "." * 35})
    state = parse_board("X" + "." * 35)
    assert np.array_equal(obs["observation"], encode_state(state))
    assert np.array_equal(obs["action_mask"], action_mask(state))
    assert info["to_play"] == "chaos" and info["winner"] is None
    obs, _ = env.reset(options={"board": state})
    assert env.state == state


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"board": "XYZ"}, BoardStringError, "bad character 'Y'"),
        ({"board": "." * 30}, BoardStringError, "found 30"),
        ({"board": 12}, BoardStringError, "got int"),
        ({"board": "XXXXX" + "." * 31}, BoardStringError, "already over .a five stands"),
        ({"board": FULL_BOARD_NO_FIVE}, BoardStringError, "the board is full"),
        ({"seed": 3}, ValueError, "unknown reset option"),
        ("board", ValueError, "options must be a dict"),
    ],
)
def test_reset_rejects_bad_options(options: object, error: type, message: str) -> None:
    env = OrderChaosEnv()
    env.reset()
    with pytest.raises(error, match=message):
        env.reset(options=options)  # type: ignore[arg-type]


def test_decided_board_is_rejected_only_with_end_when_decided() -> None:
    decided = FULL_BOARD_NO_FIVE[:-1] + "."
    assert parse_board(decided).decided
    OrderChaosEnv().reset(options={"board": decided})
    with pytest.raises(BoardStringError, match="end_when_decided"):
        OrderChaosEnv(end_when_decided=True).reset(options={"board": decided})


def test_chaos_completing_a_five_gets_minus_one() -> None:
    env = OrderChaosEnv()
    env.reset(options={"board": CHAOS_TO_COMPLETE})
    assert env.core.to_play == "order"
    _, reward, terminated, truncated, info = env.step(2 * 35)  # Order: X on f6, harmless
    assert (reward, terminated, truncated) == (0.0, False, False)
    _, reward, terminated, _, info = env.step(2 * 25 + 1)  # Chaos: O on b5 completes b1-b5
    assert reward == -1.0 and terminated
    assert info["winner"] == "order" and info["rewards"] == {"order": 1, "chaos": -1}
    assert info["winning_line"] == (1, 7, 13, 19, 25) and info["end_reason"] == "five"
    assert info["last_action"] == 51


def test_full_board_gives_chaos_plus_one_and_decided_shows_up() -> None:
    env = OrderChaosEnv()
    env.reset()
    seen_decided = False
    for cell, ch in enumerate(FULL_BOARD_NO_FIVE):
        _, reward, terminated, _, info = env.step(2 * cell + "XO".index(ch))
        seen_decided |= info["decided"]
        assert terminated == (cell == CELLS - 1)
    assert seen_decided and reward == 1.0 and info["winner"] == "chaos"
    assert info["winning_line"] == () and info["end_reason"] == "full"


def test_end_when_decided_ends_as_a_chaos_win() -> None:
    env = OrderChaosEnv(end_when_decided=True)
    env.reset()
    for cell, ch in enumerate(FULL_BOARD_NO_FIVE):
        _, reward, terminated, _, info = env.step(2 * cell + "XO".index(ch))
        if terminated:
            break
    assert cell < CELLS - 1 and info["decided"] and info["winner"] == "chaos"
    assert info["end_reason"] == "decided"
    mover = "order" if cell % 2 == 0 else "chaos"
    assert reward == (1.0 if mover == "chaos" else -1.0)


@pytest.mark.parametrize("action", [0, 1, -1, 72, 2.0, "3", None, np.float32(4)])
def test_illegal_actions_raise_and_leave_the_state_unchanged(action: object) -> None:
    env = OrderChaosEnv()
    env.reset()
    env.step(0)
    before = snapshot(env)
    with pytest.raises(IllegalActionError):
        env.step(action)
    after = snapshot(env)
    assert before[0] == after[0] and before[3] == after[3] and before[4] == after[4]
    assert np.array_equal(before[1], after[1]) and np.array_equal(before[2], after[2])


def test_numpy_integer_actions_are_accepted() -> None:
    env = OrderChaosEnv()
    env.reset()
    env.step(np.int64(5))
    assert env.state == State().apply(5)


def test_step_after_the_end_raises_in_both_modes() -> None:
    for mode in ("raise", "lose"):
        env = OrderChaosEnv(illegal_action=mode)
        env.reset(options={"board": "XXXX." + "." * 31})
        env.step(8)
        with pytest.raises(IllegalActionError, match="game is over"):
            env.step(20)


def test_lose_mode_forfeits_for_the_mover() -> None:
    env = OrderChaosEnv(illegal_action="lose")
    env.reset()
    env.step(0)
    _, reward, terminated, _, info = env.step(1)  # Chaos plays on the occupied a1
    assert reward == -1.0 and terminated
    assert info["winner"] == "order" and info["rewards"] == {"order": 1, "chaos": -1}
    assert info["end_reason"].startswith("illegal action") and "already holds X" in info["end_reason"]
    assert env.state == State().apply(0)
    with pytest.raises(ValueError, match="illegal_action must be one of"):
        OrderChaosEnv(illegal_action="ignore")


def test_returned_arrays_are_copies() -> None:
    env = OrderChaosEnv()
    obs, _ = env.reset()
    obs["observation"][0, 0, 0] = 1
    obs["action_mask"][:] = 0
    obs2, *_ = env.step(2)
    assert obs2["observation"][0, 0, 1] == 1 and obs2["observation"][0, 0, 0] == 0
    env.step(4)
    assert obs2["observation"][2].all() and obs2["observation"][0, 0, 2] == 0  # unchanged


def test_env_agrees_with_rules_on_random_games() -> None:
    def check(states: list[State]) -> None:
        env = OrderChaosEnv()
        env.reset()
        state = State()
        for action in game_actions(states):
            mover = state.to_play
            state = state.apply(action)
            obs, reward, terminated, truncated, info = env.step(action)
            assert np.array_equal(obs["observation"], encode_state(state))
            assert np.array_equal(obs["action_mask"], action_mask(state))
            assert terminated == state.is_terminal and not truncated
            assert info["winner"] == state.winner and info["decided"] == state.decided
            assert info["to_play"] == state.to_play
            assert reward == (state.rewards()[mover] if terminated else 0)
        assert terminated and info["winning_line"] == state.winning_line
        assert info["end_reason"] == ("five" if state.has_five else "full")

    # whole games, so every example ends: on a full board or by a five, some made by Chaos
    ends = [states[-1] for states in check_examples(games(), check, max_examples=25)]
    assert_reaches_ends(ends, terminal=1.0, decided=0.08, chaos_five=0.2)


def test_render_modes(capsys: pytest.CaptureFixture[str]) -> None:
    env = OrderChaosEnv(render_mode="ansi")
    env.reset(options={"board": "XXXX." + "." * 31})
    env.step(8)
    text = env.render()
    assert "[X]" in text and "game over: order wins" in text
    env = OrderChaosEnv(render_mode="human")
    env.reset()
    env.step(15)
    assert "(O)" in capsys.readouterr().out
    env = OrderChaosEnv(render_mode="rgb_array")
    env.reset()
    image = env.render()
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    with pytest.raises(ValueError, match="render_mode must be one of"):
        OrderChaosEnv(render_mode="pygame")


def test_rgb_image_shows_stones_last_move_and_line() -> None:
    empty = render_rgb(State(), cell_px=20)
    state = parse_board("XXXXX" + "O" + "." * 30)
    image = render_rgb(state, last_action=11, cell_px=20)
    pitch = 22

    def cell_pixels(img: np.ndarray, cell: int) -> np.ndarray:
        r, c = divmod(cell, 6)
        return img[2 + r * pitch : 2 + r * pitch + 20, 2 + c * pitch : 2 + c * pitch + 20]

    assert not np.array_equal(cell_pixels(image, 0), cell_pixels(empty, 0))  # winning X
    assert not np.array_equal(cell_pixels(image, 5), cell_pixels(empty, 5))  # last move O
    assert not np.array_equal(cell_pixels(image, 0), cell_pixels(image, 5))
    assert np.array_equal(cell_pixels(image, 20), cell_pixels(empty, 20))
    with pytest.raises(ValueError, match="cell_px"):
        render_rgb(State(), cell_px=3)


def test_single_seat_passes_check_env() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(SingleSeatEnv("order", first_legal), skip_render_check=True)
        # As Chaos the opponent has moved, so the checker's unmasked random action may be
        # illegal: lose mode keeps that a legal episode end.
        check_env(SingleSeatEnv("chaos", FirstLegalAgent(), illegal_action="lose"), skip_render_check=True)


def test_single_seat_rewards_are_the_learners() -> None:
    env = SingleSeatEnv("chaos", FirstLegalAgent())
    obs, info = env.reset()
    assert info["opponent_action"] == 71 and env.core.num_stones == 1
    assert obs["observation"][2].all()  # Chaos to move
    env = SingleSeatEnv("order", first_legal)
    env.reset(options={"board": "XXX..." + "OOOO.." + "." * 23 + "X"})
    # The learner (Order) plays X on d1; the opponent (Chaos) answers with its first
    # legal action, X on e1, completing a five: Chaos loses, so the learner gets +1.
    _, reward, terminated, _, info = env.step(6)
    assert info["opponent_action"] == 8
    assert terminated and info["winner"] == "order" and reward == 1.0


def test_single_seat_bad_input() -> None:
    with pytest.raises(ValueError, match="role must be one of"):
        SingleSeatEnv("both", first_legal)
    with pytest.raises(TypeError, match="opponent must be a callable"):
        SingleSeatEnv("order", 3)
    env = SingleSeatEnv("order", lambda state: 0)
    env.reset()
    with pytest.raises(IllegalActionError, match="the opponent .* chose an illegal action"):
        env.step(0)


@pytest.mark.parametrize("illegal_action", ["raise", "lose"])
def test_unwrapped_step_before_reset_raises_like_the_wrapped_env(illegal_action: str) -> None:
    wrapped = gymnasium.make("OrderChaos-v0", illegal_action=illegal_action)
    with pytest.raises(gymnasium.error.ResetNeeded):
        wrapped.step(0)
    env = wrapped.unwrapped
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        env.step(0)
    assert env.state == envs.State()  # nothing was played
    env.reset()
    _, reward, terminated, _, info = env.step(0)
    assert (reward, terminated, info["last_action"]) == (0.0, False, 0)


def test_single_seat_step_before_reset_raises() -> None:
    seat = envs.SingleSeatEnv("order", lambda state: state.legal_actions()[0])
    with pytest.raises(gymnasium.error.ResetNeeded):
        seat.step(0)
