"""Agent spec strings: every documented spec builds a working agent; bad specs are refused
with messages that list what is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from orderchaos.agents.base import Agent
from orderchaos.agents.registry import REGISTRY, RUN_DIR, SpecError, make, parse_spec, resolve
from orderchaos.envs.rules import State, parse_board

# Order to move with four empties; only O on d4 (action 43) wins (checked by brute force).
ONLY_ONE_WIN = parse_board("OOXOXX XOOXOX OXOXOO OOO... XOXO.O XOXXXO")


@pytest.mark.parametrize(
    "spec",
    ["random", "heuristic", "mcts", "mcts:sims=800,c=1.4,seed=3", "mcts:time=0.05", " mcts : sims = 50 "],
)
def test_documented_specs_build_agents_that_play(spec: str) -> None:
    agent = make(spec, seed=1)
    assert isinstance(agent, Agent)
    assert agent.act(State()) in State().legal_actions()


@pytest.mark.parametrize("spec", ["solver", "solver:time=0.5,seed=2"])
def test_solver_specs(spec: str) -> None:
    assert make(spec).act(ONLY_ONE_WIN) == 43


def test_pretrained_spec_parses() -> None:
    info, name, params = resolve("pretrained:sims=16,temp=0.5,c=1.25,seed=4")
    assert name == "pretrained" and params == {"sims": 16, "temp": 0.5, "c": 1.25, "seed": 4}
    assert info.target == "orderchaos.agents.network_agent:pretrained_agent"


def test_spec_parameters_reach_the_factory_with_their_types() -> None:
    agent = make("mcts:sims=800,c=1.4,seed=3")
    assert agent.mcts.simulations == 800 and agent.mcts.c == 1.4
    timed = make("mcts:time=0.05")
    assert timed.mcts.time_limit == 0.05 and timed.mcts.simulations is None


def test_make_seed_applies_unless_the_spec_sets_one() -> None:
    def moves(spec: str, seed: int | None) -> list[int]:
        agent = make(spec, seed=seed)
        return [agent.act(State()) for _ in range(6)]

    assert moves("random", 5) == moves("random", 5) == moves("random:seed=5", 99)
    assert moves("random", 5) != moves("random", 6)
    assert moves("mcts:sims=100", 2) == moves("mcts:sims=100,seed=2", None)


def test_a_directory_spec_is_a_run_directory(tmp_path: Path) -> None:
    info, name, params = resolve(f"{tmp_path}:sims=8")
    assert info is RUN_DIR and name == str(tmp_path) and params == {"sims": 8}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("alphago", "unknown agent 'alphago'; accepted: random"),
        ("", "empty agent spec; accepted: random"),
        ("   ", "empty agent spec"),
        ("mcts:depth=3", "unknown parameter 'depth' for agent 'mcts'; accepted parameters: sims, c, seed, time"),
        ("random:sims=3", "accepted parameters: seed"),
        ("mcts:sims=lots", "sims='lots' in agent spec 'mcts:sims=lots' must be int"),
        ("mcts:sims=1.5", "must be int"),
        ("mcts:c=wide", "must be float"),
        ("mcts:sims=10,c", "bad parameter 'c'"),
        ("mcts:sims=1,sims=2", "given twice"),
        ("mcts:sims", "unknown agent 'mcts:sims'"),
    ],
)
def test_bad_specs_are_refused_with_what_is_accepted(spec: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        make(spec)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    "spec, accepted",
    [
        ("mcts:sims=0", "from 1 to 1,000,000"),
        ("mcts:sims=1000000000000", "from 1 to 1,000,000"),
        ("mcts:sims=99999999999999999999", "from 1 to 1,000,000"),
        ("mcts:c=-1", "from 0.001 to 1,000"),
        ("mcts:time=0", "from 0.001 to 86,400"),
        ("mcts:time=inf", "from 0.001 to 86,400"),
        ("mcts:time=nan", "from 0.001 to 86,400"),
        ("solver:time=1e400", "from 0.001 to 86,400"),
        ("pretrained:sims=2000000", "from 0 to 1,000,000"),
        ("pretrained:temp=nan", "from 0 to 100"),
        ("random:seed=-1", "from 0 to 9,223,372,036,854,775,807"),
    ],
)
def test_out_of_range_values_are_refused_in_one_line_before_a_game(spec: str, accepted: str) -> None:
    with pytest.raises(SpecError) as caught:
        resolve(spec)
    message = str(caught.value)
    assert accepted in message and spec in message and "\n" not in message


def test_every_parameter_of_every_agent_has_a_range() -> None:
    for name, info in [*REGISTRY.items(), ("run directory", RUN_DIR)]:
        assert set(info.ranges) == set(info.params), name


def test_parse_spec_splits_name_and_raw_values() -> None:
    assert parse_spec("mcts:sims=800,c=1.4") == ("mcts", {"sims": "800", "c": "1.4"})
    assert parse_spec("heuristic") == ("heuristic", {})
