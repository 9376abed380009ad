"""The start page in Chromium: the games being played now (listed live, watched with one click,
dropped when they end), the quick-pairing grid (a seek pairs two browser profiles; the button
says Cancel while it waits and withdraws on a second click), how many wait and play, a cell
clicked before any game, axe-core on the page's new states in four languages, and a phone.

The harness (the live server, the browser, axe) is test_browser's (:mod:`browser_harness`)."""

from __future__ import annotations

import re

import pytest

import browser_harness

harness = browser_harness.load()
Browser, Page, Server, expect = harness.Browser, harness.Page, harness.Server, harness.expect
browser, server = harness.browser, harness.server  # the fixtures, by name
in_view, new_tab, serious_axe_violations = harness.in_view, harness.new_tab, harness.serious_axe_violations
open_form, TIMEOUT_MS = harness.open_form, harness.TIMEOUT_MS

SMALL_TARGETS = """() => [...document.querySelectorAll("button, select, input, summary, .row a, .how-to")]
    .filter((node) => node.getClientRects().length && getComputedStyle(node).visibility !== "hidden")
    .map((node) => [node, node.getBoundingClientRect()])
    .filter(([node, box]) => box.width < 44 || box.height < 44)
    .map(([node, box]) => `${node.outerHTML.slice(0, 60)} ${box.width.toFixed(0)}x${box.height.toFixed(0)}`)"""


def friend_game(browser: Browser, server: Server, time_control: str = "none") -> tuple[list, Page, Page, str]:
    """Two profiles in a friend game, Order's first move X a1 played and seen by Chaos: the
    contexts, both tabs and the game's id."""
    order_ctx, order, chaos_ctx, chaos = harness.friend_game_after_one_move(browser, server, time_control)
    expect(chaos.locator("[data-testid=play-moves] li")).to_have_count(1)
    return [order_ctx, chaos_ctx], order, chaos, order.url.rsplit("/", 1)[1]


def test_a_running_game_is_listed_live_watched_with_one_click_and_dropped_when_it_ends(
        browser: Browser, server: Server) -> None:
    viewer_ctx, viewer = new_tab(browser, server.url)
    contexts, order, chaos, game = friend_game(browser, server, "5+3")
    item = viewer.get_by_test_id("live-games").locator(f"li[data-game='{game}']")
    names = [tab.get_by_test_id("my-name").inner_text() for tab in (order, chaos)]
    expect(item).to_have_text(re.compile(rf"^Order: {names[0]} \(1500\) · Chaos: {names[1]} \(1500\) · 5\+3 · 1 move\b"))
    expect(viewer.get_by_test_id("featured-game")).to_have_attribute("data-game", game)  # the only one, so the top
    expect(viewer.get_by_test_id("start-counts")).to_have_text("Waiting for a game: 0 · Playing: 2")
    chaos.click("button[data-symbol=O]")
    chaos.click("[data-cell='7']")
    expect(item).to_contain_text("2 moves")  # moves so far, pushed as they come
    item.get_by_role("button").click()  # one click watches
    expect(viewer).to_have_url(re.compile(f"/g/{game}$"))
    expect(viewer.get_by_test_id("status")).to_contain_text("You are watching")
    expect(viewer.locator("[data-cell='7']")).to_have_text("O")
    chaos.once("dialog", lambda dialog: dialog.accept())
    chaos.click("button[data-action=resign]")
    expect(viewer.get_by_test_id("result")).to_contain_text("Chaos resigned.")
    expect(item).to_have_count(0)
    expect(viewer.get_by_test_id("live-empty")).to_be_visible()
    expect(viewer.get_by_test_id("featured-game")).to_be_hidden()
    expect(viewer.get_by_test_id("start-counts")).to_have_text("Waiting for a game: 0 · Playing: 0")
    for context in [viewer_ctx, *contexts]:
        context.close()


def test_the_grid_seeks_says_cancel_withdraws_and_pairs_two_profiles(browser: Browser, server: Server) -> None:
    watcher_ctx, watcher = new_tab(browser, server.url)
    first_ctx, first = new_tab(browser, server.url)
    second_ctx, second = new_tab(browser, server.url)
    counts = watcher.get_by_test_id("start-counts")
    button = first.locator("button[data-seek='3+2']")
    expect(button).to_have_text("3+2 Blitz")
    button.click()
    expect(button).to_have_text("3+2 Cancel")
    expect(button).to_have_attribute("aria-pressed", "true")
    expect(first.locator("button[data-seek='5+3']")).to_have_text("5+3 Blitz")  # only the one asked for
    expect(counts).to_have_text("Waiting for a game: 1 · Playing: 0")
    button.click()  # a second click withdraws
    expect(button).to_have_text("3+2 Blitz")
    expect(button).to_have_attribute("aria-pressed", "false")
    expect(counts).to_have_text("Waiting for a game: 0 · Playing: 0")
    button.click()
    expect(counts).to_have_text("Waiting for a game: 1 · Playing: 0")
    second.click("button[data-seek='3+2']")
    for tab in (first, second):
        expect(tab.get_by_test_id("status")).to_have_text(re.compile(r"^(Your move|Your friend's move) \(Order\)"))
        expect(tab.get_by_test_id("clock-order")).to_have_text("Order: 3:00 left")
        expect(tab.locator("button[data-seek='3+2']")).to_have_text("3+2 Blitz")
    assert first.url == second.url
    expect(counts).to_have_text("Waiting for a game: 0 · Playing: 2")
    game = first.url.rsplit("/", 1)[1]
    expect(watcher.get_by_test_id("live-games").locator(f"li[data-game='{game}']")).to_contain_text("3+2 · 0 moves")
    for context in (watcher_ctx, first_ctx, second_ctx):
        context.close()


def test_a_cell_clicked_before_any_game_offers_one_without_an_error(browser: Browser, server: Server) -> None:
    context, tab = new_tab(browser, server.url)
    status = tab.get_by_test_id("status")
    tab.click("[data-cell='14']")
    expect(status).to_have_text("No game yet: start one against the computer here, or pick a time control above "
                                "to play anyone.")
    expect(status).not_to_have_class(re.compile("error"))
    expect(tab.locator("#new-game-form")).to_be_visible()
    expect(tab.get_by_test_id("offer")).to_have_text(status.text_content())  # by the form too, for a phone
    expect(tab.locator("button[data-action=new-game]")).to_be_focused()
    expect(tab.locator("[data-cell='14']")).to_have_text("")
    tab.locator("body").click(position={"x": 5, "y": 5})
    tab.keyboard.type("c3")  # a cell name typed: the same offer, still no error
    expect(tab.locator("button[data-action=new-game]")).to_be_focused()
    expect(status).not_to_have_class(re.compile("error"))
    tab.keyboard.press("Enter")  # the offered button starts the game
    expect(status).to_contain_text("Your move (Order)")
    expect(tab.get_by_test_id("offer")).to_be_hidden()
    context.close()


@pytest.mark.parametrize("lang", ["en", "sv", "nb", "de"])
def test_axe_finds_nothing_serious_on_the_start_page_and_a_phone_fits_it(
        browser: Browser, server: Server, lang: str) -> None:
    """With a game listed and featured: the start page, a seek waiting (Cancel), each small
    form open and the offer after a click on a cell, in each language: no axe-core violation
    of impact serious or critical. At 360×740 by touch, in the same states: no sideways
    scroll, every control at least 44×44, the grid and How to play on the first screen."""
    contexts, order, chaos, game = friend_game(browser, server)
    context = browser.new_context(viewport={"width": 1180, "height": 900}, bypass_csp=True, locale="en-GB")
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(server.url)
    tab.select_option("select[name=language]", lang)
    expect(tab.locator("html")).to_have_attribute("lang", lang)
    expect(tab.get_by_test_id("featured-game")).to_have_attribute("data-game", game)
    found = {"start": serious_axe_violations(tab)}
    tab.click("button[data-seek='10+5']")
    expect(tab.locator("button[data-seek='10+5']")).to_have_attribute("aria-pressed", "true")
    found["seeking"] = serious_axe_violations(tab)
    tab.click("button[data-seek='10+5']")
    expect(tab.locator("button[data-seek='10+5']")).to_have_attribute("aria-pressed", "false")
    for name in ("friend", "computer"):
        tab.click(f"button[data-open={name}]")
        found[f"{name} form"] = serious_axe_violations(tab)
    tab.click("[data-cell='3']")
    expect(tab.locator("button[data-action=new-game]")).to_be_focused()
    found["offer"] = serious_axe_violations(tab)
    context.close()
    assert not any(found.values()), {state: lines for state, lines in found.items() if lines}

    phone_ctx, phone = new_tab(browser, server.url, width=360, height=740, has_touch=True, is_mobile=True)
    phone.select_option("select[name=language]", lang)
    expect(phone.get_by_test_id("live-games").locator(f"li[data-game='{game}']")).to_be_visible()
    for selector in ("button[data-seek='1+0']", "button[data-seek='10+5']", "[data-testid=how-to-play]"):
        assert in_view(phone, selector), selector
    sizes = {}
    phone.tap("button[data-seek='1+0']")
    expect(phone.locator("button[data-seek='1+0']")).to_have_attribute("aria-pressed", "true")
    sizes["seeking"] = (phone.evaluate("document.documentElement.scrollWidth"), phone.evaluate(SMALL_TARGETS))
    phone.tap("button[data-seek='1+0']")
    for name in ("friend", "computer"):
        phone.tap(f"button[data-open={name}]")
        sizes[name] = (phone.evaluate("document.documentElement.scrollWidth"), phone.evaluate(SMALL_TARGETS))
    phone_ctx.close()
    for other in contexts:
        other.close()
    assert sizes == dict.fromkeys(sizes, (360, [])), sizes
