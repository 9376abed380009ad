"""``orderchaos.bench.search_widths``: the widths it tries, the class it asks for, and what
each row says of the refutations a width found against the narrower ones."""

from __future__ import annotations

import json

import pytest

from orderchaos.bench import search_widths


def test_each_row_counts_the_new_refutations_and_the_narrower_ones_found_again(monkeypatch, capsys) -> None:
    """Width 4 finds lines a and b, width 16 finds b and c (c twice, by two lines that end
    in the same pair): 2 new, then 1 new and 1 of the 2 narrower found again; ``all`` asks
    for the class without a limit."""
    a, b, c, c_again = [1, 3], [1, 5], [2, 7, 9], [2, 7, 9]
    found = {4: [a, b], 16: [b, c, c_again]}
    asked = []

    def beam(chooser, start, border_moves, width, most):
        asked.append((border_moves, width))
        return found[width]

    monkeypatch.setattr(search_widths, "beam_refutations", beam)
    monkeypatch.setattr(search_widths, "move_chooser", lambda spec: spec)
    search_widths.main(["--agent", "strategy", "--border-moves", "all", "--min-width", "4", "--max-width", "16"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert asked == [(None, 4), (None, 16)]
    assert [(r["border_moves"], r["width"], r["found"], r["new"], r["narrower_confirmed"], r["narrower_total"])
            for r in rows] == [("all", 4, 2, 2, 0, 0), ("all", 16, 2, 1, 1, 2)]


def test_a_class_that_is_neither_a_number_nor_all_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        search_widths.main(["--border-moves", "two"])
    assert stopped.value.code == 2 and "give a number of border moves or all" in capsys.readouterr().err
