"""Players in Chromium: two browser profiles meet through "Play anyone", play a rated 1+0 game
to the end and see their ratings move apart, through a reload and a server restart; the game
is on both player pages; a casual game moves nothing; the player page and the leaderboard
pass axe-core and fit a phone in every language.

The harness (the live server, the browser, axe) is test_browser's (:mod:`browser_harness`)."""

from __future__ import annotations

import re

import pytest

import browser_harness

harness = browser_harness.load()
Browser, Page, Server, expect = harness.Browser, harness.Page, harness.Server, harness.expect
browser, server = harness.browser, harness.server  # the fixtures, by name
new_tab, TIMEOUT_MS, serious_axe_violations = harness.new_tab, harness.TIMEOUT_MS, harness.serious_axe_violations
ORDER_FIVE = [0, 30, 1, 31, 2, 32, 3, 33, 4]
"""Order's X on a1..e1 (cells 0..4), Chaos's O on a6..d6 between them."""
TAP_TARGETS = "a, button, select, input"


def bullet(tab: Page) -> int:
    """The tab's own bullet rating as its header shows it."""
    text = tab.get_by_test_id("my-rating").text_content() or ""
    return int(re.search(r"Bullet (\d+)", text).group(1))


def seated(browser: Browser, server: Server, rated: bool = True) -> dict[str, tuple]:
    """Two fresh profiles press 1+0 in the quick-pairing grid: (context, tab, own name) by seat."""
    tabs = [new_tab(browser, server.url) for _ in range(2)]
    for _, tab in tabs:
        expect(tab.get_by_test_id("my-name")).not_to_be_empty()
        if not rated:
            tab.uncheck("input[name=rated]")
        tab.click("button[data-seek='1+0']")
        if tab is tabs[0][1]:
            expect(tab.get_by_test_id("lobby-seeking")).to_be_visible()
    by_seat = {}
    for context, tab in tabs:
        expect(tab).to_have_url(re.compile(r"/g/[A-Za-z0-9_-]{16,64}$"))
        expect(tab.get_by_test_id("seats")).to_be_visible()
        name = tab.get_by_test_id("my-name").text_content()
        expect(tab.locator("[data-testid=seat-order], [data-testid=seat-chaos]").filter(has_text=name)).to_have_count(1)
        seat = "order" if tab.get_by_test_id("seat-order").text_content() == name else "chaos"
        by_seat[seat] = (context, tab, name)
    assert tabs[0][1].url == tabs[1][1].url
    return by_seat


def play_to_five(by_seat: dict[str, tuple]) -> None:
    for ply, cell in enumerate(ORDER_FIVE):
        role = "order" if ply % 2 == 0 else "chaos"
        tab = by_seat[role][1]
        tab.click(f"button[data-symbol={'X' if role == 'order' else 'O'}]")
        tab.click(f"[data-cell='{cell}']")
        for _, other, _ in by_seat.values():
            expect(other.locator("[data-testid=play-moves] li")).to_have_count(ply + 1)


def test_a_rated_bullet_game_moves_both_ratings_apart_for_good(browser: Browser, server: Server) -> None:
    by_seat = seated(browser, server)
    for _, tab, _ in by_seat.values():
        expect(tab.get_by_test_id("my-rating")).to_contain_text("Bullet 1500?")
        expect(tab.get_by_test_id("seats-rated")).to_have_text("rated (Bullet (1+0))")
    names = {role: name for role, (_, _, name) in by_seat.items()}
    order_tab = by_seat["order"][1]
    expect(order_tab.locator("[data-testid=play-moves] li")).to_have_count(0)
    viewer_context, viewer = new_tab(browser, server.url)
    listed = viewer.get_by_test_id("live-games").locator(f"li[data-game='{order_tab.url.rsplit('/', 1)[1]}']")
    expect(listed).to_contain_text(f"Order: {names['order']} (1500) · Chaos: {names['chaos']} (1500) · 1+0")
    play_to_five(by_seat)
    expect(listed).to_have_count(0)
    viewer_context.close()
    for _, tab, _ in by_seat.values():
        changes = tab.get_by_test_id("rating-changes")
        expect(changes).to_contain_text(f"{names['order']}: 1500 to")
        expect(changes).to_contain_text(f"{names['chaos']}: 1500 to")
        expect(tab.get_by_test_id("my-rating")).not_to_contain_text("Bullet 1500?")
    expect(order_tab.get_by_test_id("moves-players")).to_have_text(f"Order: {names['order']} · Chaos: {names['chaos']}")
    ratings = {role: bullet(tab) for role, (_, tab, _) in by_seat.items()}
    assert ratings["order"] > 1500 > ratings["chaos"], ratings
    by_seat["chaos"][1].reload()
    expect(by_seat["chaos"][1].get_by_test_id("my-rating")).to_contain_text(f"Bullet {ratings['chaos']}")
    server.restart()
    for role, (_, tab, _) in by_seat.items():
        tab.reload()
        expect(tab.get_by_test_id("my-rating")).to_contain_text(f"Bullet {ratings[role]}")
        expect(tab.get_by_test_id(f"seat-{role}")).to_have_text(names[role])
    game = order_tab.url.rsplit("/", 1)[1]
    for role, name in names.items():
        page = by_seat[role][1]
        page.goto(f"{server.url}player/{name}")
        expect(page.get_by_test_id("player-name")).to_have_text(name)
        expect(page.get_by_test_id("rating-bullet")).to_have_text(re.compile(rf"^{ratings[role]}\??$"))
        expect(page.locator(f"tr[data-game='{game}']")).to_contain_text("won" if role == "order" else "lost")
        expect(page.locator(f"tr[data-game='{game}'] a[href='/g/{game}']")).to_be_visible()
        expect(page.locator("tr[data-category=bullet] svg.history")).to_be_visible()
    for context, _, _ in by_seat.values():
        context.close()


def test_a_casual_game_moves_no_rating(browser: Browser, server: Server) -> None:
    by_seat = seated(browser, server, rated=False)
    before = {role: bullet(tab) for role, (_, tab, _) in by_seat.items()}
    expect(by_seat["order"][1].get_by_test_id("seats-rated")).to_have_text("casual")
    play_to_five(by_seat)
    for role, (_, tab, _) in by_seat.items():
        expect(tab.get_by_test_id("result")).to_be_visible()
        expect(tab.get_by_test_id("rating-changes")).to_be_hidden()
        tab.reload()
        expect(tab.get_by_test_id("my-rating")).to_contain_text(f"Bullet {before[role]}")
    for context, _, _ in by_seat.values():
        context.close()


def test_a_changed_name_is_checked_and_a_taken_one_refused_in_the_readers_language(
    browser: Browser, server: Server
) -> None:
    (one, first), (two, second) = (new_tab(browser, server.url) for _ in range(2))
    for tab, name in ((first, "Ada"), (second, "ada")):
        expect(tab.get_by_test_id("my-name")).not_to_be_empty()
        tab.click("button[data-action=rename]")
        tab.fill("input[name=display-name]", name)
        tab.click("#rename-form button[type=submit]")
    expect(first.get_by_test_id("my-name")).to_have_text("Ada")
    expect(second.get_by_test_id("rename-error")).to_have_text("the name ada is taken: choose another")
    second.select_option("select[name=language]", "de")
    second.fill("input[name=display-name]", "Robobot")
    second.click("#rename-form button[type=submit]")
    expect(second.get_by_test_id("rename-error")).to_contain_text("sieht nach einem Bot aus")
    one.close()
    two.close()


def player_pages(browser: Browser, server: Server) -> tuple:
    """A profile whose player played one rated game, on its player page: (context, tab, name)."""
    by_seat = seated(browser, server)
    play_to_five(by_seat)
    by_seat["chaos"][0].close()
    return by_seat["order"]


@pytest.mark.parametrize("lang", ["en", "sv", "nb", "de"])
def test_the_player_page_and_the_leaderboard_pass_axe_and_fit_a_phone(browser: Browser, server: Server, lang: str) -> None:
    context, _, name = player_pages(browser, server)
    pages = {"player": f"{server.url}player/{name}?lang={lang}",
             "leaderboard": f"{server.url}leaderboard?category=bullet&lang={lang}",
             "unknown player": f"{server.url}player/Nobody?lang={lang}"}
    context.close()
    found, widths, small = {}, {}, {}
    axe = browser.new_context(viewport={"width": 1180, "height": 900}, bypass_csp=True)
    phone = browser.new_context(viewport={"width": 360, "height": 740}, has_touch=True, is_mobile=True)
    for which, address in pages.items():
        desk = axe.new_page()
        desk.set_default_timeout(TIMEOUT_MS)
        desk.goto(address)
        expect(desk.locator("html")).to_have_attribute("lang", lang)
        found[which] = serious_axe_violations(desk)
        small_tab = phone.new_page()
        small_tab.goto(address)
        widths[which] = small_tab.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        small[which] = small_tab.evaluate("""(selector) => [...document.querySelectorAll(selector)]
            .filter((node) => node.getClientRects().length)
            .map((node) => [node, node.getBoundingClientRect()])
            .filter(([node, box]) => box.width < 44 || box.height < 44)
            .map(([node, box]) => `${node.outerHTML.slice(0, 60)} ${box.width.toFixed(0)}x${box.height.toFixed(0)}`)""",
                                          TAP_TARGETS)
    axe.close()
    phone.close()
    assert found == dict.fromkeys(pages, []), found
    assert widths == dict.fromkeys(pages, [360, 360]), widths
    assert small == dict.fromkeys(pages, []), small


def test_a_script_that_arrives_late_still_says_who_the_tab_is(browser: Browser, server: Server) -> None:
    """player.js held back until the words are loaded (and, had the page connected already,
    until the server's hello came): the tab still identifies, since it connects only once
    every script has run. Connecting as soon as the words were in lost the hello, and the
    name stayed empty for good."""
    context = browser.new_context()
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    held = []
    tab.route("**/static/player.js", lambda route: held.append(route))
    tab.goto(server.url, wait_until="commit")
    tab.wait_for_function("() => typeof ui !== 'undefined' && Object.keys(ui.catalogue).length > 0")
    if tab.evaluate("() => socket !== null"):  # connected before every script ran
        tab.wait_for_function("() => ui.greeted")
    assert len(held) == 1
    held[0].continue_()
    expect(tab.get_by_test_id("my-name")).not_to_be_empty()
    context.close()
