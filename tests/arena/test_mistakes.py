"""Learning from lost games (orderchaos.arena.mistakes): the losing move found by walking
a game back with the solver agrees with brute force, collected mistakes are real mistakes,
and practical mistakes are found by play-outs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.registry import make
from orderchaos.agents.solver import solve
from orderchaos.arena.mistakes import (
    Mistake,
    collect_mistakes,
    find_mistake,
    find_practical_mistake,
    mistake_job,
    mistake_rows,
)
from orderchaos.envs.encoding import action_masks
from orderchaos.envs.rules import CHAOS, ORDER, State

from helpers import brute_force, game_actions, random_game

LATE = 26  # from this ply on, positions have at most 10 empty cells: brute force is cheap


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 100_000), st.sampled_from([ORDER, CHAOS]))
def test_find_mistake_is_the_last_won_position_of_a_lost_game(seed: int, role: str) -> None:
    states = random_game(seed)
    actions = game_actions(states)
    found = find_mistake(actions, role, node_limit=10**7, start_ply=LATE)
    mine = [p for p in range(LATE, len(actions)) if states[p].to_play == role]
    expected = None
    if states[-1].winner != role:
        expected = next((p for p in reversed(mine) if brute_force(states[p]) == role), None)
    if expected is None:
        assert found is None
        return
    state = states[expected]
    assert found is not None and found.state == state and found.played == actions[expected]
    assert brute_force(state.apply(found.played)) != role
    assert set(found.winning) == {a for a in state.legal_actions() if brute_force(state.apply(a)) == role}
    assert all(brute_force(states[p]) != role for p in mine if p > expected)


def test_find_mistake_ignores_games_that_were_not_lost() -> None:
    states = random_game(1)
    actions = game_actions(states)
    assert find_mistake(actions, states[-1].winner, node_limit=10**6) is None
    assert find_mistake(actions[:10], ORDER, node_limit=10**6) is None  # unfinished
    with pytest.raises(ValueError, match="role"):
        find_mistake(actions, "x", node_limit=100)


def test_collected_mistakes_are_proven_and_become_rows() -> None:
    hunt = collect_mistakes(make("random", seed=0), ORDER, ["random"], 10, 3, openings=2, node_limit=20000)
    assert hunt.games == 10 and 0 < hunt.lost <= 10
    assert hunt.mistakes, "random Order loses some games to random Chaos late enough to place the loss"
    for m in hunt.mistakes:
        assert solve(m.state, node_limit=10**6).winner == ORDER == m.state.to_play
        assert solve(m.state.apply(m.played), node_limit=10**6).winner == CHAOS
        assert all(solve(m.state.apply(a), node_limit=10**6).winner == ORDER for a in m.winning)
    planes, masks, policies, values = mistake_rows(hunt.mistakes)
    assert planes.shape == (len(hunt.mistakes), 3, 6, 6)
    assert np.array_equal(masks, action_masks([m.state for m in hunt.mistakes]))
    assert np.allclose(policies.sum(1), 1.0) and np.all(values == 1.0)
    for row, m in zip(policies, hunt.mistakes):
        assert set(np.flatnonzero(row)) == set(m.winning)


def test_unlisted_wins_fall_back_to_the_first_proven_preferred_move() -> None:
    # As when listing every winning move exceeds the budget: the solver lists none, so the
    # target is the first of the preferred moves (other than the one played) proven to win.
    import dataclasses

    from orderchaos.agents.solver import Solver

    class NoListing(Solver):
        def solve(self, state, **kw):
            return dataclasses.replace(super().solve(state, **kw), best_actions=None)

    for seed in range(300):
        actions = game_actions(random_game(seed))
        full = find_mistake(actions, ORDER, node_limit=10**7, start_ply=LATE)
        if full is not None and len(full.winning) > 1:
            break
    else:
        pytest.fail("no lost game with two winning moves among the seeds")
    losing = [a for a in full.state.legal_actions() if a not in full.winning]
    taken = [2 * c + s for c in range(36) for s in (0, 1) if full.state.cell(c) != "."]
    preferred = [full.played, *taken[:2], *losing, full.winning[-1], full.winning[0]]
    picked = find_mistake(
        actions, ORDER, node_limit=10**7, start_ply=LATE, preferences=lambda s: preferred, solver=NoListing(16)
    )
    assert picked == Mistake(full.state, full.played, (full.winning[-1],))
    assert find_mistake(actions, ORDER, node_limit=10**7, start_ply=LATE, solver=NoListing(16)) is None


def test_a_walk_job_starts_from_a_cleared_solver() -> None:
    """A pool worker's solver holds whatever it solved before; the walk of a lost game must
    not depend on it (a node-limited proof can, as here)."""
    from orderchaos.agents.solver import Solver

    states = random_game(22)
    actions, role = game_actions(states), CHAOS if states[-1].winner == ORDER else ORDER
    warm = Solver(tt_bits=16)
    for state in states[14:-1]:
        warm.solve(state, node_limit=10**6)
    walks = [find_mistake(actions, role, node_limit=1000, start_ply=14, solver=s) for s in (Solver(tt_bits=16), warm)]
    assert walks[0] != walks[1]  # the table matters here
    assert mistake_job(warm, actions, role, 1000, 14) == mistake_job(Solver(tt_bits=16), actions, role, 1000, 14)


def test_a_hunt_finds_what_a_fresh_solver_finds_in_each_lost_game() -> None:
    """A hunt finds what walking each lost game with a fresh solver finds, in game order;
    preferred moves place wins the solver could not list (a second walk of those games)."""
    from orderchaos.agents.solver import Solver
    from orderchaos.arena.matches import play_match

    opponents, seed, limit = ["random", "heuristic"], 3, 20_000
    liked = lambda s: s.legal_actions()  # noqa: E731
    learner, lost = make("random", seed=0), []
    for k, spec in enumerate(opponents):
        records = play_match(learner, spec, 6, seed=seed + k, openings=2, keep_games=True).records
        lost += [r for r in records if r.winner != ORDER]
    expected = [find_mistake(r.actions, ORDER, node_limit=limit, start_ply=r.opening_plies, preferences=liked,
                             solver=Solver()) for r in lost]
    expected = [m for m in expected if m is not None]

    def hunt(preferences=liked):
        return collect_mistakes(make("random", seed=0), ORDER, opponents, 6, seed, openings=2, node_limit=limit,
                                preferences=preferences)

    inline = hunt()
    assert inline.mistakes == expected and inline.lost == len(lost)
    assert len(hunt(preferences=None).mistakes) < len(expected)


class LowestMove:
    """A deterministic test player: always the lowest legal action."""

    name = "lowest"

    def act(self, state: State) -> int:
        return int(state.legal_actions()[0])


def heuristic(seed: int):
    return make("heuristic", seed=seed)


def wins_every_play_out(state: State, role: str, rollouts: int, seed: int) -> bool:
    """The learner (LowestMove) as ``role`` against heuristic(seed + k), k < rollouts."""
    for k in range(rollouts):
        opponent, s = heuristic(seed + k), state
        while not s.is_terminal:
            s = s.apply(LowestMove().act(s) if s.to_play == role else opponent.act(s))
        if s.winner != role:
            return False
    return True


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 100_000), st.sampled_from([ORDER, CHAOS]))
def test_practical_mistake_is_the_latest_position_where_a_liked_move_wins_every_play_out(seed: int, role: str) -> None:
    states = random_game(seed)
    actions = game_actions(states)
    # preferences may name occupied cells (a network's ranking of all 72 actions): skipped
    liked = lambda s: [0, 1, *(int(a) for a in s.legal_actions()[-4:])]  # noqa: E731
    found = find_practical_mistake(
        actions, role, learner=LowestMove(), opponent=heuristic, preferences=liked, start_ply=LATE - 2, seed=seed
    )
    if states[-1].winner == role:
        assert found is None
        return
    mine = [p for p in range(LATE - 2, len(actions)) if states[p].to_play == role]
    good = {
        p: [
            a
            for a in liked(states[p])
            if a != actions[p] and a in states[p].legal_actions()
            and wins_every_play_out(states[p].apply(a), role, 2, seed)
        ]
        for p in mine
    }
    expected = max((p for p in mine if good[p]), default=None)
    if expected is None:
        assert found is None
    else:
        assert found == Mistake(states[expected], actions[expected], tuple(good[expected]), proven=False)


def test_collect_mistakes_adds_practical_ones_where_the_solver_places_none() -> None:
    from orderchaos.agents.network_agent import NeuralAgent, load_evaluator
    from orderchaos.agents.policy_files import pretrained_dir

    evaluator = load_evaluator(pretrained_dir())
    learner = NeuralAgent(evaluator, sims=0, temp=0.0, name="shipped")
    liked = lambda s: [int(a) for a in np.argsort(-evaluator.evaluate([s])[0][0], kind="stable")[:6]]  # noqa: E731
    plain = collect_mistakes(learner, CHAOS, ["heuristic"], 10, 1, openings=2, node_limit=20000)
    both = collect_mistakes(learner, CHAOS, ["heuristic"], 10, 1, openings=2, node_limit=20000, preferences=liked, rollouts=1)
    assert plain.practical == 0 and both.lost == plain.lost
    assert both.practical > 0 and len(both.mistakes) == len(plain.mistakes) + both.practical
    with pytest.raises(ValueError, match="rollouts"):
        find_practical_mistake([], CHAOS, learner=LowestMove(), opponent=heuristic, preferences=liked, rollouts=0)
