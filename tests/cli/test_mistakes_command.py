"""orderchaos mistakes: proven losing moves in text and JSON, and refusals."""

from __future__ import annotations

import json

from orderchaos.agents.solver import solve
from orderchaos.arena.analysis import parse_move
from orderchaos.envs.rules import CHAOS, ORDER, parse_board


def test_mistakes_command_reports_proven_losing_moves(capsys) -> None:
    from orderchaos.cli.main import main

    assert main(["mistakes", "--agent", "random", "--opponent", "random", "--games", "10", "--seed", "3",
                 "--node-limit", "20000", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["games"] == 10 and 0 < len(report["mistakes"]) <= report["lost"]
    for m in report["mistakes"]:
        state = parse_board(m["board"])
        assert state.num_empty == m["empty"] and solve(state, node_limit=10**6).winner == ORDER
        assert solve(state.apply(parse_move(m["played"], state)), node_limit=10**6).winner == CHAOS
        assert all(solve(state.apply(parse_move(w, state)), node_limit=10**6).winner == ORDER for w in m["winning"])
    assert main(["mistakes", "--agent", "random", "--opponent", "random", "--games", "4", "--show", "2"]) == 0
    assert "losing move placed in" in capsys.readouterr().out
    assert main(["mistakes", "--agent", "nosuch", "--games", "2"]) == 2
    assert "unknown agent 'nosuch'" in capsys.readouterr().err
    assert main(["mistakes", "--agent", "random", "--games", "0"]) == 2
    assert "--games" in capsys.readouterr().err


def test_each_order_mistake_is_marked_by_the_strategy_beside_the_solver(capsys) -> None:
    """A proven losing Order move can never keep the strategy's win (the strategy is sound):
    where the strategy covers the position it is marked "leaves" with the strategy's move,
    elsewhere it has no mark."""
    from orderchaos.agents import strategy
    from orderchaos.cli.main import main
    from orderchaos.envs.rules import action_name

    args = ["mistakes", "--agent", "random", "--opponent", "random", "--games", "12", "--seed", "3",
            "--openings", "0", "--node-limit", "20000"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for m in report["mistakes"]:
        state = parse_board(m["board"])
        if strategy.covers(state):
            assert (m["strategy"], m["strategy_move"]) == ("leaves", action_name(strategy.move(state))), m
        else:
            assert (m["strategy"], m["strategy_move"]) == (None, None), m
    assert sum(m["strategy"] == "leaves" for m in report["mistakes"]) == 3
    assert main([*args, "--show", "3"]) == 0
    assert capsys.readouterr().out.count("strategy: leaves it (the strategy plays ") == 3
