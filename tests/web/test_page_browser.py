"""What trying the page found, in Chromium: the Puzzles tab's keys, result and words; a phone's
first screen, tap targets, rules table and taps; and what a screen reader is told (threats,
the five, copied links, the lobby), and agent names in the reader's language.

The harness (the live server, the browser) is test_browser's (:mod:`browser_harness`)."""

from __future__ import annotations

import re

import pytest

import browser_harness
from orderchaos.envs.rules import cell_name, parse_board

harness = browser_harness.load()
Browser, Page, Server, expect = harness.Browser, harness.Page, harness.Server, harness.expect
browser, server = harness.browser, harness.server  # the fixtures, by name
in_view, new_tab, SOLUTIONS, TIMEOUT_MS = harness.in_view, harness.new_tab, harness.SOLUTIONS, harness.TIMEOUT_MS
ERROR_RED = "rgb(176, 0, 32)"  # --error
CELL_COLOUR = "rgb(255, 253, 248)"  # --cell


def shown_puzzle(tab: Page):
    prompt = tab.get_by_test_id("puzzle-prompt")
    expect(prompt).to_have_attribute("data-puzzle", re.compile("^p"))
    return SOLUTIONS[prompt.get_attribute("data-puzzle")]


def first_puzzle(kind: str):
    """The shipped puzzle of ``kind`` with the smallest id that has an empty cell in column d."""
    return min((p for p in SOLUTIONS.values() if p.kind == kind and "." in p.board[3::6]), key=lambda p: p.id)


@pytest.mark.parametrize("kind", ["order_wins", "chaos_survives"])
def test_a_puzzle_move_in_column_d_the_failed_box_the_goal_and_the_prompt_once(
    browser: Browser, server: Server, kind: str
) -> None:
    """d starts a cell name (the daily puzzle is p); a failed attempt's box is red and names
    the winning move for Order, the saving move for Chaos; the page says how many moves a win
    takes or when Chaos has survived; the prompt is shown once, not in the status and the live
    region as well; a typed move on a taken cell says the cell is taken. The tab is given a
    chosen puzzle of ``kind`` (the server's own moves judge it)."""
    shown = first_puzzle(kind)
    described = {"id": shown.id, "board": shown.board, "kind": shown.kind, "plies": shown.plies,
                 "themes": shown.themes, "rating": 1500, "daily": False, "attempted": False,
                 "player": {"rating": 1500, "deviation": 350}}
    context, tab = new_tab(browser, server.url)
    tab.route("**/puzzles/next?*", lambda route: route.fulfill(json=described))
    tab.click("button[data-mode=puzzles]")
    assert shown_puzzle(tab) == shown
    prompt = "Order to play and win" if kind == "order_wins" else "Chaos to play and survive"
    expect(tab.get_by_test_id("puzzle-prompt")).to_have_text(prompt)
    saying = [tab.get_by_test_id(t).inner_text() for t in ("puzzle-prompt", "status", "announce")]
    assert sum(prompt in text for text in saying) == 1, saying
    about = tab.locator(".puzzle-about")
    if kind == "order_wins":
        expect(about).to_contain_text(f"Order makes five within {(shown.plies + 1) // 2} of its own moves")
    else:
        expect(about).to_contain_text("the puzzle ends once more than one move saves Chaos")

    state = parse_board(shown.board)
    taken = next(c for c in range(36) if state.cell(c) != ".")
    tab.fill("input[name=puzzle-move-text]", f"{cell_name(taken)} X")
    tab.press("input[name=puzzle-move-text]", "Enter")
    expect(tab.get_by_test_id("status")).to_have_text(f"Error: {cell_name(taken)} is taken: choose an empty cell")

    key = shown.solution[0]
    wrong = next(a for a in state.legal_actions() if (a >> 1) % 6 == 3 and f"{cell_name(a >> 1)} {'XO'[a & 1]}" != key)
    tab.locator("body").click(position={"x": 5, "y": 5})  # keys go to the page, not a button
    for press in ("xo"[wrong & 1], *cell_name(wrong >> 1)):
        tab.keyboard.press(press)
    expect(tab.locator(f"[data-cell='{wrong >> 1}']")).to_have_text("XO"[wrong & 1], timeout=TIMEOUT_MS)
    expect(tab.get_by_test_id("puzzle-prompt")).not_to_contain_text("Puzzle of the day")
    result = tab.get_by_test_id("puzzle-result")
    expect(result).to_be_visible(timeout=TIMEOUT_MS)
    expect(result).to_contain_text(f"Not quite: the {'winning' if kind == 'order_wins' else 'saving'} move was {key}.")
    assert result.evaluate("box => getComputedStyle(box).borderTopColor") == ERROR_RED

    tab.locator("body").click(position={"x": 5, "y": 5})
    tab.keyboard.press("p")
    expect(tab.get_by_test_id("puzzle-prompt")).to_contain_text("Puzzle of the day: ")
    context.close()


TAP_TARGETS = "button, select, input, summary, .row a"


def small_targets(tab: Page) -> list[str]:
    """The visible controls smaller than 44 by 44 CSS pixels, each with its size."""
    return tab.evaluate("""(selector) => [...document.querySelectorAll(selector)]
        .filter((node) => node.getClientRects().length && getComputedStyle(node).visibility !== "hidden")
        .map((node) => [node, node.getBoundingClientRect()])
        .filter(([node, box]) => box.width < 44 || box.height < 44)
        .map(([node, box]) => `${node.outerHTML.slice(0, 60)} ${box.width.toFixed(0)}x${box.height.toFixed(0)}`)""",
        TAP_TARGETS)


def broken_words(tab: Page, selector: str) -> list[str]:
    """Words inside ``selector`` that the layout breaks across lines."""
    return tab.evaluate("""(selector) => {
        const broken = [];
        for (const root of document.querySelectorAll(selector)) {
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                for (const match of node.data.matchAll(/\\S+/g)) {
                    const range = document.createRange();
                    range.setStart(node, match.index);
                    range.setEnd(node, match.index + match[0].length);
                    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
                    if (lines.size > 1) broken.push(match[0]);
                }
            }
        }
        return broken;
    }""", selector)


@pytest.mark.parametrize("lang", ["sv", "de"])
def test_a_phone_starts_on_the_form_taps_44_pixels_reads_whole_words_and_leaves_no_hover(
    browser: Browser, server: Server, lang: str
) -> None:
    """At 360×740 by touch: the buttons that start a game (the quick-pairing grid, a friend,
    the computer) and "How to play" are on the first screen; every control of Play, Learn and
    Puzzles is at least 44×44; the rules table breaks no word; nothing scrolls sideways; a
    tapped cell keeps its colour; the lesson's text comes before its board."""
    context, tab = new_tab(browser, server.url, width=360, height=740, has_touch=True, is_mobile=True)
    tab.select_option("select[name=language]", lang)
    expect(tab.locator("html")).to_have_attribute("lang", lang)
    for selector in ("button[data-seek='1+0']", "button[data-seek='10+5']", "button[data-open=friend]",
                     "button[data-open=computer]", "[data-testid=how-to-play]"):
        assert in_view(tab, selector), selector
    assert tab.evaluate("[document.documentElement.scrollWidth, innerWidth]") == [360, 360]
    assert small_targets(tab) == []
    assert broken_words(tab, ".rules table") == []
    tab.tap("[data-cell='7']")  # no game yet: nothing is placed, a game is offered, no hover stays behind
    expect(tab.locator("#new-game-form")).to_be_visible()
    expect(tab.get_by_test_id("status")).not_to_have_class(re.compile("error"))
    assert tab.locator("[data-cell='7']").evaluate("cell => getComputedStyle(cell).backgroundColor") == CELL_COLOUR
    assert small_targets(tab) == []  # the form it opened too
    tab.tap("button[data-mode=learn]")
    expect(tab.get_by_test_id("learn-step-text")).not_to_be_empty()
    assert small_targets(tab) == []
    text_top = tab.get_by_test_id("learn-step-text").bounding_box()["y"]
    assert text_top < tab.locator("#board").bounding_box()["y"]
    tab.tap("button[data-mode=puzzles]")
    shown_puzzle(tab)
    assert small_targets(tab) == []
    assert tab.evaluate("[document.documentElement.scrollWidth, innerWidth]") == [360, 360]
    context.close()


def test_threats_the_five_copies_and_the_lobby_are_said_in_words(browser: Browser, server: Server) -> None:
    """The threat marks and the winning line, drawn only in the picture, are in the cells'
    names too; the lesson numbers its moves from its board; Copy says it copied; "Create a
    challenge" and "Play anyone" say what the tab waits for; a new friend game says it
    withdrew the open challenge."""
    context, tab = new_tab(browser, server.url)
    tab.click("[data-mode=learn]")
    expect(tab.get_by_test_id("learn-step-title")).to_have_text("Step 1: A six counts")
    expect(tab.locator("[data-cell='15']")).to_have_attribute("aria-label", re.compile(r"^d3, empty, .*X here makes five"))
    tab.click("button[data-symbol=X]")
    tab.click("[data-cell='15']")
    expect(tab.get_by_test_id("status")).to_contain_text("Order wins")
    for cell in range(12, 18):
        expect(tab.locator(f"[data-cell='{cell}']")).to_have_attribute("aria-label", re.compile("part of the five"))
    assert tab.get_by_test_id("learn-moves").evaluate("list => list.start") == 11  # ten stones on the board

    tab.click("[data-mode=play]")
    tab.click("button[data-open=friend]")
    tab.select_option("select[name=time_control]", "10+5")
    tab.click("button[data-action=challenge]")
    expect(tab.get_by_test_id("status")).to_have_text("Your challenge is open: it waits in the list below until someone accepts it.")
    tab.click("button[data-action=play-friend]")
    expect(tab.get_by_test_id("announce")).to_have_text("You went into a game, so your open challenge was withdrawn.")
    tab.click("button[data-action=copy-invite]")
    expect(tab.get_by_test_id("announce")).to_have_text("Link copied.")

    other, seeker = new_tab(browser, server.url)
    seeker.click("button[data-seek='5+3']")
    expect(seeker.get_by_test_id("status")).to_have_text("Waiting for someone with the same time control…")
    other.close()
    context.close()


def test_watch_names_the_agents_in_the_readers_language(browser: Browser, server: Server) -> None:
    context, tab = new_tab(browser, server.url, locale="sv-SE")
    tab.select_option("select[name=language]", "sv")
    tab.click("[data-mode=watch]")
    tab.fill("input[name=watch-chaos]", "random:seed=3")
    tab.click("button[data-action=watch-start]")
    status = tab.get_by_test_id("status")
    expect(status).to_have_text(re.compile(r"(Ordning \(heuristisk\)|Kaos \(slump:seed=3\))"))
    expect(status).not_to_contain_text("heuristic")
    context.close()
