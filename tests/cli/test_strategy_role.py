"""The ``strategy`` player plays Order only: every command that would seat it as Chaos refuses
in one line with exit status 2, before any game starts."""

from __future__ import annotations

import io
import json

import pytest

from orderchaos.cli.main import main
from orderchaos.web.errors import WebError
from orderchaos.web.services import Services


@pytest.mark.parametrize("argv", [
    ["eval", "--order", "random", "--chaos", "strategy", "--games", "2"],
    ["play", "--as", "order", "--vs", "strategy"],
    ["tournament", "random", "strategy", "--games", "1"],
])
def test_strategy_as_chaos_is_refused(argv: list[str], capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("quit\n"))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'strategy' plays order only, not chaos" in err


def test_strategy_as_order_plays(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--order", "strategy", "--chaos", "random", "--games", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["order_wins"] == 4


def test_the_web_page_refuses_strategy_as_chaos() -> None:
    services = Services()
    assert services.opponent("strategy", "order") == ("strategy", "strategy")
    with pytest.raises(WebError, match="plays order only"):
        services.opponent("strategy", "chaos")
