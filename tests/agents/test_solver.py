"""The exact solver, its numba kernel and SolverAgent."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents import solver_kernel as K
from orderchaos.agents.strategy import covers
from orderchaos.agents.solver import Solver, SolverAgent, fallback_action, solve
from orderchaos.bench.solver import sensible_positions
from orderchaos.envs.rules import CELLS, CHAOS, ORDER, State, parse_board, threat_pairs
from orderchaos.envs.symmetry import NUM_SYMMETRIES, transform_bits, transform_state

from helpers import brute_force, order_wins_within, random_board, random_game


def fresh_solver() -> Solver:
    """A solver with a small table (tests must not share TT state)."""
    return Solver(tt_bits=16)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, (1 << CELLS) - 1), st.integers(0, (1 << CELLS) - 1))
def test_kernel_tables_match_rules(xbits: int, obits: int) -> None:
    x, o = xbits & ~obits, obits & ~xbits
    xc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
    oc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
    K.window_counts(x, o, xc, oc)
    from orderchaos.envs.rules import WINDOWS

    assert list(xc) == [(x & m).bit_count() for m in WINDOWS]
    assert list(oc) == [(o & m).bit_count() for m in WINDOWS]
    for t in range(8):
        assert K.transform(x, t) == transform_bits(x, t)
    images = [transform_state(State(x, o), g) for g in range(NUM_SYMMETRIES)]
    keys = {K.canonical(s.x, s.o) for s in images}
    assert keys == {min((s.x, s.o) for s in images)}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 8))
def test_solver_matches_brute_force(seed: int, empties: int) -> None:
    state = random_board(seed, empties)
    result = fresh_solver().solve(state)
    assert result.winner == brute_force(state)


@pytest.mark.parametrize(
    "options",
    [{"pruning": False}, {"pairing": False}, {"vcf_depth": 4}, {"history": True},
     {"canon_min_empty": 37}, {"tt_min_empty": 37}],
)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**9), empties=st.integers(1, 8))
def test_every_switch_keeps_exactness(options: dict, seed: int, empties: int) -> None:
    state = random_board(seed, empties)
    assert Solver(tt_bits=12, **options).solve(state).winner == brute_force(state)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10**6))
def test_pairing_and_pruning_agree_with_plain_search_on_game_positions(seed: int) -> None:
    """Differential check on positions from real play (too big for brute force): the plain
    search (no pairing test, no pruning) must reach the same values."""
    for state in sensible_positions(2, 14, seed=seed):
        plain = Solver(tt_bits=16, pairing=False, pruning=False, vcf_depth=0).solve(state)
        assert Solver(tt_bits=16).solve(state).winner == plain.winner
        assert Solver(tt_bits=16, vcf_depth=5).solve(state).winner == plain.winner


def test_a_found_pairing_proves_a_chaos_win() -> None:
    """On 120 seeded positions (2-8 empty cells, random games and carved dead boards): the
    backtracking search finds whatever the greedy pass finds, and every pairing found is a
    proven Chaos win. A fixed set, not drawn anew each run: a pairing that reuses a cell
    (the planted overlap bug) claims a win in about 1 position in 30, and these 120 hold 5
    such positions every time."""
    wrong = []
    for seed in range(60):
        for carve in (False, True):
            rng = np.random.default_rng(seed)
            empties = int(rng.integers(2, 9))
            if carve:
                holes = rng.choice(CELLS, size=empties, replace=False)
                state = from_pattern({int(c): "." for c in holes})
            else:
                state = random_board(seed, empties)
            if state.has_five:
                continue
            xc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
            oc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
            K.window_counts(state.x, state.o, xc, oc)
            greedy = K.pairing_exists(state.x, state.o, xc, oc)
            searched = K.pairing_exists_bt(state.x, state.o, xc, oc, 10**6)  # exhaustive here
            if (greedy and not searched) or ((greedy or searched) and brute_force(state) != CHAOS):
                wrong.append((state.to_string(), greedy, searched))
    assert wrong == []


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 7))
def test_best_actions_match_brute_force(seed: int, empties: int) -> None:
    state = random_board(seed, empties)
    result = fresh_solver().solve(state, moves=True)
    mover = state.to_play
    if result.winner == mover:
        expected = [a for a in state.legal_actions() if brute_force(state.apply(a)) == mover]
    else:
        expected = state.legal_actions()
    assert result.best_actions == expected


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 7), st.integers(1, 9))
def test_order_wins_within_matches_brute_force(seed: int, empties: int, plies: int) -> None:
    state = random_board(seed, empties)
    assert fresh_solver().order_wins_within(state, plies) == order_wins_within(state, plies)


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 10**6), st.integers(12, 18))
def test_symmetric_images_get_equal_values(seed: int, empties: int) -> None:
    state = sensible_positions(1, empties, seed=seed)[0]
    values = {fresh_solver().solve(transform_state(state, g)).winner for g in range(NUM_SYMMETRIES)}
    assert len(values) == 1


# A full board without a five on which every window holds both symbols.
DEAD_PATTERN = ["XXOOXX", "OOXXOO", "XXOOXX", "OOXXOO", "XXOOXX", "OOXXOO"]


def from_pattern(edits: dict[int, str]) -> State:
    """DEAD_PATTERN with some cells replaced (``"."`` to empty a cell)."""
    cells = list("".join(DEAD_PATTERN))
    for c, ch in edits.items():
        cells[c] = ch
    return parse_board("".join(cells))


def test_finished_boards() -> None:
    five = parse_board("XXXXX. OOOOX. ...... ...... ...... ......")
    assert solve(five).winner == ORDER
    assert solve(five).nodes <= 1
    full = from_pattern({})
    assert full.is_full and not full.has_five and full.decided
    result = solve(full, moves=True)
    assert (result.winner, result.best_actions) == (CHAOS, [])


def test_order_with_a_four_wins_at_once() -> None:
    state = parse_board("XXXX.. O.O... ...... ...... ...... ......")
    assert state.to_play == ORDER
    result = fresh_solver().solve(state, node_limit=10)
    assert result.winner == ORDER and result.nodes == 1


def test_chaos_must_block_a_lone_four_with_the_other_symbol() -> None:
    # Row 1 reads XXXX.O: X threatens e1 (cell 4); c3 and f6 are open dead cells.
    state = from_pattern({2: "X", 3: "X", 4: ".", 5: "O", 14: ".", 35: "."})
    assert state.to_play == CHAOS and threat_pairs(state.x, state.o) == [(4, 0)]
    result = fresh_solver().solve(state, moves=True)
    assert result.winner == CHAOS == brute_force(state)
    assert result.best_actions == [2 * 4 + 1]


def test_two_threat_cells_win_for_order() -> None:
    # Rows 1 and 6 both read XXXX.O: threats on e1 and e6.
    state = from_pattern({0: "X", 1: "X", 2: "X", 3: "X", 4: ".", 5: "O",
                          30: "X", 31: "X", 32: "X", 33: "X", 34: ".", 35: "O", 14: "."})
    assert state.to_play == CHAOS and {c for c, _ in threat_pairs(state.x, state.o)} == {4, 34}
    assert fresh_solver().solve(state).winner == ORDER == brute_force(state)


def test_one_cell_threatened_by_both_symbols_wins_for_order() -> None:
    # e1 completes XXXX on row 1 and OOOO down column e.
    state = from_pattern({2: "X", 3: "X", 4: ".", 5: "O", 16: "O", 28: "O", 34: "X"})
    assert set(threat_pairs(state.x, state.o)) == {(4, 0), (4, 1)}
    assert state.to_play == CHAOS and state.num_empty == 1
    assert fresh_solver().solve(state).winner == ORDER == brute_force(state)


def test_double_four_move_is_found() -> None:
    # a1 X makes XXXX. on row 1 (gap e1) and on column a (gap a5).
    state = from_pattern({0: ".", 2: "X", 3: "X", 4: ".", 5: "O", 6: "X", 18: "X", 24: ".", 35: "."})
    assert state.to_play == ORDER and not threat_pairs(state.x, state.o)
    result = fresh_solver().solve(state, moves=True)
    assert result.winner == ORDER == brute_force(state)
    assert 0 in result.best_actions


def test_decided_board_is_a_chaos_win_without_search() -> None:
    state = from_pattern({0: ".", 35: "."})
    assert state.decided and state.to_play == ORDER
    result = fresh_solver().solve(state)
    assert result.winner == CHAOS and result.nodes == 1


def test_dead_cells_and_dominated_symbols_keep_the_value() -> None:
    """Positions rich in dead cells and one-symbol windows, checked against brute force."""
    for seed in range(25):
        rng = np.random.default_rng(seed)
        edits = {int(c): "." for c in rng.choice(CELLS, size=int(rng.integers(3, 9)), replace=False)}
        state = from_pattern(edits)
        assert fresh_solver().solve(state).winner == brute_force(state)


HARD = parse_board("O............OX..X...X.O....X......O")  # needs millions of nodes


def test_node_limit_gives_unknown() -> None:
    result = fresh_solver().solve(HARD, node_limit=500, moves=True)
    assert result.winner is None and result.best_actions is None
    assert 500 <= result.nodes <= 600


def test_time_limit_gives_unknown() -> None:
    """The clock stops a search that needs millions of nodes: no answer, the time spent, and
    far fewer nodes than the proof needs (a node count, not a wall-clock bound, so a busy
    machine cannot fail it)."""
    result = fresh_solver().solve(HARD, time_limit=0.05)
    assert result.winner is None and result.seconds >= 0.05 and 0 < result.nodes < 2_000_000


def test_a_restored_table_goes_on_as_the_saved_one_would() -> None:
    """A node-limited proof depends on the table: this position needs three tries of 1000
    nodes. A solver restored from the table after two tries proves it on the third, with
    the same node count as the solver it was saved from; a fresh one does not."""
    position = random_game(11)[11]
    saved = Solver(tt_bits=16, history=True)
    assert [saved.solve(position, node_limit=1000).winner for _ in range(2)] == [None, None]
    restored = Solver(tt_bits=16, history=True)
    restored.load_table_state(saved.table_state())
    assert saved.tt_entries > 0 and saved.hist.any()
    for key, value in saved.table_state().items():  # keys, results, work (slot choice), history
        assert np.array_equal(restored.table_state()[key], value), key
    third, again = saved.solve(position, node_limit=1000), restored.solve(position, node_limit=1000)
    assert third.winner == again.winner == ORDER and third.nodes == again.nodes
    assert Solver(tt_bits=16, history=True).solve(position, node_limit=1000).winner is None
    with pytest.raises(ValueError, match="2\\*\\*16 entries"):
        Solver(tt_bits=17).load_table_state(saved.table_state())


def test_bad_arguments_are_refused_with_clear_errors() -> None:
    with pytest.raises(TypeError, match="State"):
        solve("XXXX")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="time_limit"):
        solve(State(), time_limit=-1)
    with pytest.raises(ValueError, match="node_limit"):
        solve(State(), node_limit=0)
    with pytest.raises(ValueError, match="both X and O"):
        solve(State(1, 1))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 8))
def test_agent_keeps_a_won_result(seed: int, empties: int) -> None:
    state = random_board(seed, empties)
    agent = SolverAgent(seed=seed, solver=fresh_solver())
    action = agent.act(state)
    assert action in state.legal_actions()
    policy = agent.policy(state)
    assert policy.sum() == pytest.approx(1.0) and policy[action] > 0
    assert all(policy[a] == 0 for a in range(72) if a not in state.legal_actions())
    mover = state.to_play
    if brute_force(state) == mover:
        assert agent.last_reason == ("strategy" if mover == "order" and covers(state) else "win")
        assert brute_force(state.apply(action)) == mover


def test_lost_chaos_delays_the_loss() -> None:
    """A lost Chaos picks a move after which Order needs the most plies to force a five."""
    checked = 0
    for seed in range(300):
        state = random_board(seed, 7)
        if state.to_play != CHAOS or fresh_solver().solve(state).winner != ORDER:
            continue
        agent = SolverAgent(seed=0, solver=fresh_solver())
        action = agent.act(state)
        assert agent.last_reason == "delay"
        longest = max(_plies_to_five(state.apply(a)) for a in state.legal_actions())
        assert _plies_to_five(state.apply(action)) == longest
        checked += 1
        if checked == 5:
            break
    assert checked >= 3


def _plies_to_five(state: State) -> int:
    """Fewest plies in which Order forces a five (0 if one stands); 99 if it cannot."""
    for d in range(0, state.num_empty + 1):
        if Solver(tt_bits=12).order_wins_within(state, d):
            return d
    return 99


def test_lost_order_and_time_outs_still_give_legal_moves() -> None:
    for seed in range(60):
        state = random_board(seed, 6)
        if state.to_play == ORDER and brute_force(state) == CHAOS:
            agent = SolverAgent(seed=1, solver=fresh_solver())
            assert agent.act(state) in state.legal_actions()
            assert agent.last_reason == "hardest"
            break
    else:
        pytest.fail("no lost Order position found")
    agent = SolverAgent(time=0.05, seed=0)
    assert agent.act(HARD) in HARD.legal_actions()
    assert agent.last_reason == "fallback"


def test_fallback_action_completes_and_blocks_fours() -> None:
    four = parse_board("XXXX.. O.O... ...... ...... ...... ......")
    assert fallback_action(four) == 2 * 4  # e1 X
    blocked = parse_board("XXXX.. OO.O.. ...... ...... ...... ......")
    assert fallback_action(blocked) == 2 * 4 + 1  # e1 O


def test_registry_builds_the_solver_agent() -> None:
    from orderchaos.agents.registry import make

    agent = make("solver:time=2", seed=3)
    assert isinstance(agent, SolverAgent) and agent.time_limit == 2.0
    assert isinstance(make("solver"), SolverAgent)
