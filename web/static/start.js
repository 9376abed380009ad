// The start page, above the lobby in Play: the quick-pairing grid (one click asks to play
// anyone at that time control, a second click withdraws), how many wait to be paired and how
// many play, the two small forms (a friend, the computer), the games being played now with
// the highest-rated first, and the ways to the daily puzzle and the lesson. The server pushes
// the games and the counts (a "live" message) whenever they change; this script draws them.
// It runs after app.js, learn.js and puzzles.js and uses their words, socket and modes.
"use strict";

const SEEK_KINDS = { bullet: "start.bullet", blitz: "start.blitz", rapid: "start.rapid" };
const FORMS = { friend: "#friend-form", computer: "#new-game-form" };

// A seat as the list shows it: the computer's level in the reader's language, a person's name
// (or "Anonymous" while people have none), and the rating once there is one.
function seatName(item, role) {
  const name = item[`${role}_name`];
  let text = item[`${role}_agent`] ? player(name) : name || t("live.anonymous");
  const rating = item[`${role}_rating`];
  if (typeof rating === "number") text += ` (${Math.round(rating)})`;  // as ratings are written everywhere
  return `${side(role)}: ${text}`;
}

function liveLine(item) {
  const time = item.time_control === "none" ? t("live.no_clock") : item.time_control;
  const moves = item.moves === 1 ? t("live.moves_one") : t("live.moves", { count: number(item.moves) });
  return [seatName(item, "order"), seatName(item, "chaos"), time, moves].join(" · ");
}

// Open game ``id`` in Play: watching, or in its seat when this browser holds it.
function watchGame(id) {
  if (id === ui.game || !mayLeaveGame()) return;
  ui.hint = null;
  setMode("play");
  openGame(id);
}

function watchButton(id, line) {
  const button = document.createElement("button");
  button.type = "button";
  button.dataset.watch = id;
  button.textContent = t("live.watch");
  button.setAttribute("aria-label", `${t("live.watch")}: ${line}`);
  button.addEventListener("click", () => watchGame(id));
  return button;
}

function renderLive() {
  const live = ui.live || { games: [], count: 0, seeking: 0, playing: 0 };
  const list = $("[data-testid=live-games]");
  list.replaceChildren(...live.games.map((item) => {
    const entry = document.createElement("li");
    const line = liveLine(item);
    entry.dataset.game = item.id;
    entry.append(line, " ", watchButton(item.id, line));
    return entry;
  }));
  $("[data-testid=live-empty]").hidden = live.games.length > 0;
  const featured = $("[data-testid=featured-game]"), top = live.games[0];
  featured.hidden = !top;
  if (top) {
    featured.dataset.game = top.id;
    featured.querySelector(".featured-line").textContent = liveLine(top);
  }
  $("[data-testid=start-counts]").textContent = ui.live
    ? t("start.counts", { seeking: number(live.seeking), playing: number(live.playing) }) : "";
}

// Each grid button says its kind of game, or "Cancel" while this tab waits for that control.
function renderSeeks() {
  const seeking = ui.lobby ? ui.lobby.seeking : null;
  for (const button of $$("[data-seek]")) {
    const mine = button.dataset.seek === seeking;
    button.setAttribute("aria-pressed", String(mine));
    const kind = button.querySelector(".seek-kind");
    kind.textContent = mine ? t("start.cancel") : t(SEEK_KINDS[kind.dataset.kind]);
  }
}

// After a click on a cell before any game, the computer's form says how to begin too: on a
// phone the status lies below the board, out of sight of the form.
function renderOffer() {
  const offer = $("[data-testid=offer]");
  offer.hidden = !(ui.offered && !ui.views.play);
  offer.textContent = offer.hidden ? "" : t("start.offer");
}

function openForm(name, focus = true) {
  for (const [which, selector] of Object.entries(FORMS)) {
    const show = which === name && $(selector).hidden;
    $(selector).hidden = !show;
    $(`[data-open=${which}]`).setAttribute("aria-expanded", String(show));
    if (show && focus) $(selector).querySelector("select").focus();
  }
}

// A cell clicked (or a move typed) before any game: the computer's form opens with its start
// button focused, and the status says how to begin, with no error.
function offerGame() {
  ui.offered = true;
  if ($(FORMS.computer).hidden) openForm("computer", false);
  $("[data-action=new-game]").focus();
  render();
}

// The computer's form asks for a side and a clock as the friend's form does: its own copies of
// the same two selects, first in its row.
$("#new-game-form .row").prepend(...Array.from($("#friend-form .side-clock").children, (label) => label.cloneNode(true)));

handlers.live = (msg) => {
  ui.live = msg;
  renderLive();
};
redraws.push(renderLive, renderSeeks, renderOffer);

for (const button of $$("[data-seek]")) {
  button.addEventListener("click", () => {
    const control = button.dataset.seek;
    if (ui.lobby && ui.lobby.seeking === control) send({ type: "cancel" });
    else if (mayLeaveGame()) send({ type: "play_anyone", time_control: control });
  });
}
for (const button of $$("[data-open]")) button.addEventListener("click", () => openForm(button.dataset.open));
$("[data-action=watch-featured]").addEventListener("click", () => watchGame($("[data-testid=featured-game]").dataset.game));
$("[data-goto=learn]").addEventListener("click", () => setMode("learn"));
$("[data-goto=puzzles]").addEventListener("click", () => {
  loadPuzzle("daily");  // first: entering the tab then asks for no other puzzle
  setMode("puzzles");
});
render();
