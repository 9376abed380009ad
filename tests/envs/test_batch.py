"""The batch engine (envs/batch.py) on numpy and torch against the scalar rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.envs.batch import BatchGame
from orderchaos.envs.encoding import action_mask, encode_states
from orderchaos.envs.rules import (
    CELLS,
    WINDOWS,
    BoardStringError,
    IllegalActionError,
    State,
    parse_board,
)

from helpers import FULL_BOARD_NO_FIVE

BACKENDS = ["numpy", "torch"]
WINNER_INDEX = {None: -1, "order": 0, "chaos": 1}


def as_numpy(array: object) -> np.ndarray:
    """A numpy copy of a numpy array or torch tensor."""
    if hasattr(array, "detach"):
        return array.detach().cpu().numpy()  # type: ignore[union-attr]
    return np.asarray(array)


def live_windows(state: State) -> int:
    return sum(1 for m in WINDOWS if not (state.x & m and state.o & m))


def assert_matches(game: BatchGame, states: list[State], ended_early: list[bool]) -> None:
    """Every per-game array of ``game`` agrees with the scalar ``states``."""
    assert game.states() == states
    assert np.array_equal(as_numpy(game.observations()), encode_states(states))
    masks = np.stack([action_mask(s) for s in states])
    masks[np.array(ended_early, dtype=bool)] = 0
    assert np.array_equal(as_numpy(game.action_masks()), masks)
    assert list(as_numpy(game.decided)) == [s.decided for s in states]
    assert list(as_numpy(game.live_windows)) == [live_windows(s) for s in states]
    assert list(as_numpy(game.to_play)) == [s.to_play_index for s in states]
    assert list(as_numpy(game.num_stones)) == [s.num_stones for s in states]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), end_when_decided=st.booleans())
def test_batch_agrees_with_scalar_rules(backend: str, seed: int, end_when_decided: bool) -> None:
    n = 6
    rng = np.random.default_rng(seed)
    game = BatchGame(n, backend, end_when_decided=end_when_decided)
    states = [State()] * n
    over = [False] * n
    for _ in range(CELLS):
        masks = as_numpy(game.action_masks())
        active = ~np.array(over)
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        result = game.step(actions, active)
        rewards, terminated = as_numpy(result.reward), as_numpy(result.terminated)
        last_move_lines = as_numpy(game.last_move_lines())
        for i in range(n):
            if over[i]:
                assert rewards[i] == 0 and not terminated[i]
                continue
            mover = states[i].to_play
            states[i] = states[i].apply(int(actions[i]))
            ends = states[i].is_terminal or (end_when_decided and states[i].decided)
            assert terminated[i] == ends
            if ends:
                winner = states[i].winner or "chaos"
                assert rewards[i] == (1 if winner == mover else -1)
                assert as_numpy(game.winner)[i] == WINNER_INDEX[winner]
                assert tuple(np.flatnonzero(last_move_lines[i])) == states[i].winning_line
                over[i] = True
            else:
                assert rewards[i] == 0 and as_numpy(game.winner)[i] == -1
        assert_matches(game, states, over)
        if all(over):
            break
    assert all(over)


@pytest.mark.parametrize("backend", BACKENDS)
def test_illegal_actions_raise_and_change_nothing(backend: str) -> None:
    game = BatchGame(3, backend)
    game.step(np.array([0, 2, 4]))
    snapshot = (game.states(), as_numpy(game.observations()), as_numpy(game.action_masks()))
    for actions, message in [
        ([1, 0, 0], "occupied"),  # game 0: a1 already holds X
        ([6, -1, 8], "outside 0..71"),
        ([6, 8, 72], "outside 0..71"),
        ([6.0, 8.0, 10.0], "must be integers"),
        ([6, 8], "shape"),
    ]:
        with pytest.raises(IllegalActionError, match=message):
            game.step(np.array(actions))
        assert game.states() == snapshot[0]
        assert np.array_equal(as_numpy(game.observations()), snapshot[1])
        assert np.array_equal(as_numpy(game.action_masks()), snapshot[2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_lose_mode_ends_the_game_for_the_mover(backend: str) -> None:
    game = BatchGame(3, backend, illegal_action="lose")
    game.step(np.array([0, 0, 0]))  # Order plays X on a1 everywhere; Chaos to move
    result = game.step(np.array([1, 99, 2]))  # occupied, out of range, legal
    assert list(as_numpy(result.illegal)) == [True, True, False]
    assert list(as_numpy(result.reward)) == [-1.0, -1.0, 0.0]
    assert list(as_numpy(result.terminated)) == [True, True, False]
    assert list(as_numpy(game.winner)) == [0, 0, -1]  # Chaos lost: Order wins
    assert game.states()[0] == State().apply(0)  # no stone placed
    assert not as_numpy(game.action_masks())[:2].any()
    with pytest.raises(IllegalActionError, match="game 0 is over"):
        game.step(np.array([4, 4, 4]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_reset_rows_and_boards(backend: str) -> None:
    boards = ["X" + "." * 35, FULL_BOARD_NO_FIVE, "XXXXX" + "." * 31]
    game = BatchGame.from_states([parse_board(b) for b in boards], backend)
    assert list(as_numpy(game.terminated)) == [False, True, True]
    assert list(as_numpy(game.winner)) == [-1, 1, 0]
    assert game.states()[1].to_string() == FULL_BOARD_NO_FIVE
    game.reset(idx=np.array([False, True, False]))
    assert game.states()[1] == State() and game.states()[0] == parse_board(boards[0])
    game.reset(idx=[2], boards=["O" + "." * 35])
    assert game.states()[2] == parse_board("O" + "." * 35)
    lines = as_numpy(BatchGame.from_states([parse_board(boards[2])], backend).winning_lines())
    assert list(np.flatnonzero(lines[0])) == [0, 1, 2, 3, 4]
    with pytest.raises(BoardStringError, match="one per game"):
        game.reset(idx=[0, 1], boards=["." * 36])
    with pytest.raises(ValueError, match="idx entries must lie in 0..2"):
        game.reset(idx=[3])
    with pytest.raises(ValueError, match="one entry per game"):
        game.reset(idx=np.array([True, False]))


def test_bad_construction_arguments() -> None:
    with pytest.raises(ValueError, match="positive int"):
        BatchGame(0)
    with pytest.raises(ValueError, match="backend must be one of"):
        BatchGame(2, "jax")
    with pytest.raises(ValueError, match="CPU only"):
        BatchGame(2, "numpy", "cuda")
    with pytest.raises(ValueError, match="illegal_action must be one of"):
        BatchGame(2, illegal_action="ignore")


def test_torch_outputs_are_tensors_of_the_same_values_and_dtypes_as_numpy() -> None:
    import torch

    rng = np.random.default_rng(7)
    games = {b: BatchGame(32, b) for b in BACKENDS}
    ended = 0
    for _ in range(40):
        masks = games["numpy"].action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        active = masks.any(1)
        results = {b: g.step(actions if b == "numpy" else torch.as_tensor(actions), active) for b, g in games.items()}
        arrays = [(results["numpy"], results["torch"])]
        arrays += [((getattr(games["numpy"], n)(),), (getattr(games["torch"], n)(),))
                   for n in ("observations", "action_masks", "winning_lines")]
        arrays += [((getattr(games["numpy"], n),), (getattr(games["torch"], n),))
                   for n in ("terminated", "winner", "decided", "to_play", "num_stones", "live_windows")]
        for plain, tensors in arrays:
            for a, t in zip(plain, tensors):
                assert isinstance(t, torch.Tensor) and t.device == games["torch"].xp.device
                assert str(t.dtype).removeprefix("torch.") == str(a.dtype)
                assert np.array_equal(a, as_numpy(t))
        ended += int(results["numpy"].terminated.sum())
    assert ended > 10  # the games got to their ends


def test_observations_are_copies() -> None:
    game = BatchGame(2)
    obs, masks = game.observations(), game.action_masks()
    game.step(np.array([0, 1]))
    assert not obs.any() and masks.all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("illegal_action", ["raise", "lose"])
def test_restart_equals_inactive_step_then_reset(backend: str, illegal_action: str) -> None:
    n = 8
    rng = np.random.default_rng(11)
    fused, plain = (BatchGame(n, backend, illegal_action=illegal_action) for _ in range(2))
    restart = np.zeros(n, dtype=bool)
    illegal_seen = 0
    for _ in range(120):
        masks = as_numpy(plain.action_masks())
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        if illegal_action == "lose":  # sometimes the first occupied cell (illegal)
            actions = np.where(rng.random(n) < 0.1, 2 * np.argmin(masks[:, ::2], axis=1), actions)
        first = fused.step(actions, restart=restart)
        second = plain.step(actions, active=~restart)
        plain.reset(idx=restart)
        for a, b in zip(first, second):
            assert np.array_equal(as_numpy(a), as_numpy(b))
        assert fused.states() == plain.states()
        assert np.array_equal(as_numpy(fused.observations()), as_numpy(plain.observations()))
        assert np.array_equal(as_numpy(fused.action_masks()), as_numpy(plain.action_masks()))
        for name in ("terminated", "winner", "last_action", "num_stones", "decided", "to_play"):
            assert np.array_equal(as_numpy(getattr(fused, name)), as_numpy(getattr(plain, name)))
        restart = as_numpy(first.terminated).copy()
        illegal_seen += int(as_numpy(first.illegal).sum())
    assert (illegal_seen > 0) == (illegal_action == "lose")
    with pytest.raises(ValueError, match="not both"):
        fused.step(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool), restart=restart)


def test_observations_survive_parity_flips_with_idle_games() -> None:
    # Games that sit a step out keep their side to move while the others' flips.
    game = BatchGame(3)
    game.step(np.array([0, 0, 0]))
    game.step(np.array([2, 2, 2]), active=np.array([True, False, True]))
    obs = game.observations()
    assert list(obs[:, 2, 0, 0]) == [0, 1, 0]
    assert list(as_numpy(game.to_play)) == [0, 1, 0]
    game.reset(idx=[1])
    assert not game.observations()[1].any() and game.action_masks()[1].all()
