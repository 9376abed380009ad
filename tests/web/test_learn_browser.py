"""The Learn tab in Chromium: every step of the lesson completed by clicks and keys, progress
kept over a reload, a deliberate mistake in "now win as Order" marked with the move that
would have kept the win, the phone layout, and axe-core in the four languages.

The harness (the live server, the browser, axe) is test_browser's; the moves the
learner plays here come from the strategy itself (orderchaos.agents.strategy), read off the
board the page shows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import browser_harness
from orderchaos.agents import strategy
from orderchaos.envs.rules import ORDER, State, action_name, parse_board, parse_cell

harness = browser_harness.load()
Browser, Page, Server, expect = harness.Browser, harness.Page, harness.Server, harness.expect
browser, server = harness.browser, harness.server  # the fixtures, by name
board, in_view, new_tab, serious_axe_violations = harness.board, harness.in_view, harness.new_tab, harness.serious_axe_violations


@pytest.fixture
def tab(browser: Browser, server: Server) -> Iterator[Page]:
    """A fresh browser profile on the Learn tab, its first step open."""
    context, page = new_tab(browser, server.url)
    page.click("[data-mode=learn]")
    expect(page.get_by_test_id("learn-step-title")).to_have_text("Step 1: A six counts")
    yield page
    context.close()


def shown_state(page: Page) -> State:
    """The position on the page's board."""
    return parse_board("".join(c or "." for c in board(page)))


def play(page: Page, name: str) -> None:
    """Pick the symbol and click the cell of ``name`` (``"d3 X"``), and wait for the answer."""
    cell, symbol = name.split()
    count = page.locator("[data-testid=learn-moves] li").count()
    page.click(f"button[data-symbol={symbol}]")
    page.click(f"[data-cell='{parse_cell(cell)}']")
    expect(page.locator("[data-testid=learn-moves] li")).not_to_have_count(count)
    expect(page.get_by_test_id("status")).not_to_contain_text("thinking")


def play_the_strategy_to_five(page: Page) -> None:
    """Play the strategy's move on the board shown until Order has five in a row."""
    for _ in range(20):
        state = shown_state(page)
        if state.winner == ORDER:
            return
        play(page, action_name(strategy.move(state)))
        expect(page.get_by_test_id("learn-feedback")).to_contain_text("keeps the strategy's win")
    raise AssertionError("no five after 20 moves")


def test_every_step_of_the_lesson_completes_and_the_progress_survives_a_reload(tab: Page) -> None:
    feedback, status = tab.get_by_test_id("learn-feedback"), tab.get_by_test_id("status")
    tab.keyboard.type("xd3")  # a six, typed: x chooses the symbol, d3 names the cell
    expect(tab.locator("[data-testid=learn-moves] li")).to_have_count(1)
    expect(feedback).to_contain_text("d3 X keeps the strategy's win")
    expect(status).to_have_text("Five in a row: Order wins!")
    expect(tab.locator("button[data-step=six]")).to_contain_text("✓")

    tab.click("button[data-action=learn-next]")
    play(tab, "b4 X")  # the open four; Chaos blocks one end at most
    end = "a4" if shown_state(tab).cell(parse_cell("a4")) == "." else "f4"
    play(tab, f"{end} X")
    expect(status).to_have_text("Five in a row: Order wins!")

    tab.click("button[data-action=learn-next]")
    expect(tab.get_by_test_id("learn-pairs")).to_be_hidden()  # the answers come after the quiz
    expect(tab.get_by_test_id("learn-task")).to_contain_text("Where is the partner of c1?")
    tab.click(f"[data-cell='{parse_cell('c5')}']")
    expect(feedback).to_have_text("Not quite: c5 is not the partner of c1. Follow the centre line through c1 to its other end.")
    for partner in ("c6", "f5", "a6"):
        tab.click(f"[data-cell='{parse_cell(partner)}']")
        expect(feedback).to_contain_text(f"and {partner} are a pair")
    expect(feedback).to_contain_text("You have found all three partners.")
    expect(tab.get_by_test_id("learn-pairs").locator("li")).to_have_count(10)
    # every border cell shows its pair's letter (row by row: a1 I, b1 E, ..., f6 I); the centre is empty
    assert "".join(c or "." for c in board(tab)) == "IEFGHJ" "A....A" "B....B" "C....C" "D....D" "JEFGHI"

    tab.click("button[data-action=learn-next]")
    tab.locator(f"[data-cell='{parse_cell('e6')}']").focus()
    tab.keyboard.press("o")  # the keyboard alone: o on the focused cell writes O there
    expect(feedback).to_contain_text("e6 O keeps the strategy's win. Exactly right")

    tab.click("button[data-action=learn-next]")
    play(tab, "f3 X")  # the central four, finished by the border rule
    expect(status).to_have_text("Five in a row: Order wins!")

    for step in ("centre", "win"):
        tab.click("button[data-action=learn-next]")
        expect(tab.locator(f"button[data-step={step}]")).to_have_attribute("aria-current", "step")
        play_the_strategy_to_five(tab)
        expect(status).to_have_text("Five in a row: Order wins!")
    expect(tab.get_by_test_id("learn-progress")).to_have_text("7 of 7 steps done")

    tab.reload()
    tab.click("[data-mode=learn]")
    expect(tab.get_by_test_id("learn-progress")).to_have_text("7 of 7 steps done")
    expect(tab.locator("button[data-step=win]")).to_have_attribute("aria-current", "step")
    expect(tab.locator("[data-testid=learn-steps] .keeps")).to_have_count(7)


def test_now_win_as_order_marks_a_deliberate_mistake_with_the_move_that_keeps_the_win(tab: Page) -> None:
    tab.click("button[data-step=win]")
    expect(tab.get_by_test_id("learn-step-title")).to_have_text("Step 7: Now win as Order")
    play(tab, "c3 X")
    state = shown_state(tab)
    better = action_name(strategy.move(state))
    # the mistake: a border stone of Order's own, on a pair Chaos has not touched
    pair = next(p for p in strategy.PAIRS if all(state.cell(c) == "." for c in p))
    mistake = action_name(2 * pair[0])
    play(tab, mistake)
    expect(tab.get_by_test_id("learn-feedback")).to_contain_text(
        f"{mistake} leaves the strategy's win. The move that keeps it: {better}.")
    expect(tab.locator("[data-testid=learn-moves] li .throws")).to_have_count(1)
    expect(tab.locator("[data-testid=learn-moves] li .keeps")).to_have_count(1)
    expect(tab.locator(f"[data-cell='{parse_cell(better.split()[0])}']")).to_have_class(re.compile("hinted"))


@pytest.mark.parametrize(("locale", "title"), [("en-GB", "Step 1: A six counts"), ("de-DE", "Schritt 1: Auch sechs zählen")])
def test_the_learn_tab_fits_a_phone(browser: Browser, server: Server, locale: str, title: str) -> None:
    context, page = new_tab(browser, server.url, width=390, height=844, locale=locale)
    page.click("[data-mode=learn]")
    expect(page.get_by_test_id("learn-step-title")).to_have_text(title)
    page.click("button[data-step=win]")
    play(page, "c3 X")  # feedback and a move list on screen too
    page.evaluate("document.querySelector('#board').scrollIntoView({ block: 'start' })")
    # nothing in the page's main part (board, controls, the lesson) is wider than the screen
    widths = page.evaluate("""[innerWidth, document.querySelector('main').scrollWidth,
        ...Array.from(document.querySelectorAll('main *')).map(e => e.getBoundingClientRect().right)]""")
    assert widths[0] == 390 and max(widths) <= 390, max(widths)
    for selector in ("#board", "button[data-symbol=X]", "button[data-symbol=O]", "[data-testid=status]"):
        assert in_view(page, selector), selector
    assert not page.locator("button[data-action=undo]").is_visible()  # play's tools stay in play
    context.close()


@pytest.mark.parametrize("lang", ["en", "sv", "nb", "de"])
def test_axe_finds_nothing_serious_on_the_learn_tab(browser: Browser, server: Server, lang: str) -> None:
    """The Learn tab at its first step, after a move with feedback and marks, and on the
    pairs quiz, in each language: no axe-core violation of impact serious or critical."""
    context, page = new_tab(browser, server.url, bypass_csp=True)
    page.select_option("select[name=language]", lang)
    expect(page.locator("html")).to_have_attribute("lang", lang)
    page.click("[data-mode=learn]")
    expect(page.locator("[data-testid=learn-steps] button")).to_have_count(7)
    found = {"first step": serious_axe_violations(page)}
    page.click("button[data-step=win]")
    play(page, "c3 X")
    found["a move judged"] = serious_axe_violations(page)
    page.click("button[data-step=pairs]")
    for partner in ("c6", "f5", "a6"):
        page.click(f"[data-cell='{parse_cell(partner)}']")
    expect(page.get_by_test_id("learn-pairs")).to_be_visible()
    found["pairs"] = serious_axe_violations(page)
    context.close()
    assert not any(found.values()), {state: lines for state, lines in found.items() if lines}


def test_study_marks_each_order_move_by_the_strategy_beside_the_solver(
    browser: Browser, server: Server, tmp_path: Path
) -> None:
    """An uploaded game whose Order opens c3 X (keeps the strategy's win), then after a2 X
    answers f2 X (leaves it: the partner needs the other symbol); Chaos's moves carry no
    strategy mark."""
    from orderchaos.arena.game_files import GameRecord, save_games

    rng = np.random.default_rng(5)
    state, actions = State(), []
    for name in ("c3 X", "a2 X", "f2 X"):
        actions.append(2 * parse_cell(name.split()[0]) + (name[-1] == "O"))
        state = state.apply(actions[-1])
    while not state.is_terminal:
        actions.append(int(rng.choice(state.legal_actions())))
        state = state.apply(actions[-1])
    path = tmp_path / "lesson.jsonl"
    save_games(path, [GameRecord(actions, state.winner, len(actions), 0)], "someone", "random")
    context, page = new_tab(browser, server.url)
    page.click("[data-mode=study]")
    page.set_input_files("input[name=upload]", str(path))
    expect(page.get_by_test_id("analysis")).to_contain_text("The solver proved", timeout=60_000)
    moves = page.locator("[data-testid=study-moves] li")
    expect(moves.nth(0).locator("[data-strategy=keeps]")).to_have_attribute("title", "keeps the strategy's win")
    expect(moves.nth(2).locator("[data-strategy=leaves]")).to_have_attribute("title", "leaves the strategy's win")
    expect(moves.nth(1).locator("[data-strategy]")).to_have_count(0)  # Chaos's moves are not judged
    marked = page.eval_on_selector_all("[data-testid=study-moves] li", "items => items.map(i => Boolean(i.querySelector('[data-strategy]')))")
    assert not any(marked[1::2])
    expect(moves.nth(2).locator(".keeps, .throws, .unknown")).to_have_count(1)  # the solver's mark beside it
    for _ in range(3):
        page.click("button[data-action=next]")
    expect(page.get_by_test_id("status")).to_contain_text("Order played f2 X (leaves the strategy's win)")
    context.close()
