"""orderchaos mistakes: proven losing moves in text and JSON, and refusals."""

from __future__ import annotations

import json

from orderchaos.agents.solver import solve
from orderchaos.cli.terminal_game import parse_move
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
