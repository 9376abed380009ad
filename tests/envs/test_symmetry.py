"""The 16 symmetries (envs/symmetry.py): group laws, invariants, consistency with the
observation encoding."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.envs.encoding import action_mask, encode_state
from orderchaos.envs.rules import ACTIONS, CELLS, State
from orderchaos.envs.symmetry import (
    ACTION_PERM,
    CELL_PERM,
    INVERSE,
    NUM_BOARD_SYMMETRIES,
    NUM_SYMMETRIES,
    all_images,
    canonical_key,
    transform_action,
    transform_bits,
    transform_planes,
    transform_policy,
    transform_state,
)

from helpers import assert_reaches_ends, check_examples, positions

symmetries = st.integers(0, NUM_SYMMETRIES - 1)


def test_action_perms_are_16_distinct_permutations() -> None:
    assert ACTION_PERM.shape == (NUM_SYMMETRIES, ACTIONS)
    for g in range(NUM_SYMMETRIES):
        assert sorted(ACTION_PERM[g]) == list(range(ACTIONS))
    assert len({tuple(row) for row in ACTION_PERM}) == NUM_SYMMETRIES
    assert list(ACTION_PERM[0]) == list(range(ACTIONS))  # 0 is the identity


def test_inverse_and_closure() -> None:
    rows = {tuple(row): g for g, row in enumerate(ACTION_PERM)}
    for g in range(NUM_SYMMETRIES):
        h = INVERSE[g]
        assert all(ACTION_PERM[h, ACTION_PERM[g, a]] == a for a in range(ACTIONS))
        for k in range(NUM_SYMMETRIES):
            composed = tuple(int(ACTION_PERM[k, ACTION_PERM[g, a]]) for a in range(ACTIONS))
            assert composed in rows  # the 16 form a group


def test_board_transforms_move_lines_to_lines() -> None:
    # The dihedral group keeps rows/columns/diagonals: cell distance pattern preserved.
    for t in range(8):
        perm = CELL_PERM[t]
        for c in range(CELLS):
            r, col = divmod(c, 6)
            for d in range(CELLS):
                r2, col2 = divmod(d, 6)
                pr, pc = divmod(perm[c], 6)
                qr, qc = divmod(perm[d], 6)
                assert max(abs(r - r2), abs(col - col2)) == max(abs(pr - qr), abs(pc - qc))


def test_values_are_invariant() -> None:
    def check(example: tuple[State, int]) -> None:
        state, g = example
        image = transform_state(state, g)
        assert transform_state(image, INVERSE[g]) == state
        assert image.has_five == state.has_five
        assert image.decided == state.decided
        assert image.is_terminal == state.is_terminal
        assert image.winner == state.winner
        assert image.num_stones == state.num_stones and image.to_play == state.to_play
        swap = 1 if g >= 8 else 0
        mapped = sorted((CELL_PERM[g & 7][c], s ^ swap) for c, s in state.threats())
        assert image.threats() == mapped
        assert image.winning_line == tuple(sorted(CELL_PERM[g & 7][c] for c in state.winning_line))
        assert sorted(transform_action(a, g) for a in state.legal_actions()) == image.legal_actions()

    seen = check_examples(st.tuples(positions(), symmetries), check, max_examples=40)
    assert_reaches_ends([state for state, _ in seen])  # winners and winning lines get checked


@settings(max_examples=40, deadline=None)
@given(positions(), symmetries)
def test_canonical_key_is_shared_by_all_images(state: State, g: int) -> None:
    image = transform_state(state, g)
    assert canonical_key(image.x, image.o) == canonical_key(state.x, state.o)
    keys = [s.x | s.o << CELLS for s in all_images(state)]
    assert canonical_key(state.x, state.o) == min(keys)


@settings(max_examples=40, deadline=None)
@given(positions(), symmetries)
def test_planes_and_policies_follow_states_and_actions(state: State, g: int) -> None:
    image = transform_state(state, g)
    assert np.array_equal(transform_planes(encode_state(state), g), encode_state(image))
    assert np.array_equal(transform_policy(action_mask(state), g), action_mask(image))
    batch = np.stack([encode_state(state), encode_state(state)])
    assert np.array_equal(transform_planes(batch, g)[1], encode_state(image))
    policy = np.arange(ACTIONS, dtype=np.float32)
    moved = transform_policy(policy, g)
    for a in range(ACTIONS):
        assert moved[transform_action(a, g)] == policy[a]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, (1 << CELLS) - 1), st.integers(0, 7))
def test_transform_bits_matches_the_cell_permutation(bits: int, t: int) -> None:
    expected = sum(1 << CELL_PERM[t][c] for c in range(CELLS) if bits >> c & 1)
    assert transform_bits(bits, t) == expected


def test_the_board_transforms_are_the_eight_of_the_square() -> None:
    """CELL_PERM against numpy's own rotations: transform t transposes when t & 4, then
    turns the board a quarter clockwise t & 3 times (cell c goes where its number lands)."""
    assert (NUM_BOARD_SYMMETRIES, NUM_SYMMETRIES, len(CELL_PERM)) == (8, 16, 8)
    grid = np.arange(CELLS).reshape(6, 6)
    for t in range(8):
        moved = np.rot90(grid.T if t & 4 else grid, -(t & 3)).reshape(-1)
        expected = [0] * CELLS
        for place, cell in enumerate(moved):
            expected[cell] = place
        assert list(CELL_PERM[t]) == expected, t
    for g in range(NUM_SYMMETRIES):  # symbols swap exactly for g >= 8
        assert all(ACTION_PERM[g, a] % 2 == (a % 2) ^ (g >= 8) for a in range(ACTIONS))
