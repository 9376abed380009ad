// Who plays in this browser: the display name and ratings of the player id the browser keeps
// (the puzzle rating's id, puzzlePlayer() of puzzles.js), the names and ratings of the people
// seated in the game shown, and the rating changes at its end. It runs after app.js and
// puzzles.js and uses their connection, words and hooks (send, handlers, outgoing, redraws).
"use strict";

const me = {
  name: null,      // the display name, as the server last said it
  ratings: null,   // category -> { rating, rd, games, provisional }
  renaming: false, // a rename was sent and not answered yet
  endedSeen: {},   // games whose end already asked for the new ratings
};

// A rating as people see it: whole digits, as ratings are written everywhere (no thousands
// separator), "?" after a provisional one.
function shownRating(rating) {
  return `${rating.rating}${rating.provisional ? "?" : ""}`;
}

// Who this tab is, said first on every connection: the server answers with "me".
const helloBefore = handlers.hello;
handlers.hello = (msg) => {
  send({ type: "identify", player: puzzlePlayer() });
  helloBefore(msg);
};

handlers.me = (msg) => {
  const renamed = me.renaming && me.name !== msg.name;
  me.name = msg.name;
  me.ratings = msg.ratings;
  me.renaming = false;
  if (renamed) {
    $("#rename-form").hidden = true;
    $("[data-action=rename]").hidden = false;
    $("[data-testid=announce]").textContent = t("me.renamed", { name: msg.name });
  }
  renderMe();
};

// A refused name is said beside the name field, not in the game's status.
const errorBefore = handlers.error;
handlers.error = (msg) => {
  if (me.renaming && /^name_|^no_player$/.test(msg.code || "")) {
    me.renaming = false;
    $("[data-testid=rename-error]").textContent = errorText(msg);
    return;
  }
  errorBefore(msg);
};

// At the end of a rated game, ask again for this player's ratings (they just changed).
const stateBefore = handlers.state;
handlers.state = (msg) => {
  stateBefore(msg);
  if (msg.mode === "play" && msg.game && msg.reason && msg.rated && !me.endedSeen[msg.game]) {
    me.endedSeen[msg.game] = true;
    send({ type: "identify", player: puzzlePlayer() });
  }
};

// "Play anyone" and challenges are rated unless the box is unticked (casual).
outgoing.push((message) => {
  if (message.type === "play_anyone" || message.type === "challenge") message.rated = $("input[name=rated]").checked;
});

function renderMe() {
  const link = $("[data-testid=my-name]");
  link.textContent = me.name || "";
  link.href = me.name ? `/player/${encodeURIComponent(me.name)}?lang=${document.documentElement.lang || "en"}` : "/leaderboard";
  const ratings = me.ratings;
  $("[data-testid=my-rating]").textContent = ratings ? t("me.ratings", {
    bullet: shownRating(ratings.bullet), blitz: shownRating(ratings.blitz), rapid: shownRating(ratings.rapid) }) : "";
}

// The names in the seats of the game shown, their ratings, and the rating changes at its end.
function renderSeats() {
  const view = ui.mode === "play" ? ui.views.play : null;
  const box = $("[data-testid=seats]");
  box.hidden = !view || !view.game;
  const changes = $("[data-testid=rating-changes]");
  changes.hidden = true;
  const heading = $("[data-testid=moves-players]");  // who played the moves listed below it
  heading.hidden = box.hidden || !view.people || !(view.people.order || view.people.chaos);
  if (!heading.hidden) {
    heading.textContent = ["order", "chaos"].map((role) => t("moves.players_item", { side: side(role),
      name: view.people[role] ? view.people[role].name : player(view.players[role].agent) || t("seats.free") })).join(" · ");
  }
  if (box.hidden) return;
  for (const role of ["order", "chaos"]) {
    const person = view.people && view.people[role];
    const agent = view.players[role].agent;
    $(`[data-testid=seat-${role}]`).textContent = person ? person.name : agent ? player(agent) : t("seats.free");
    $(`[data-testid=seat-${role}-rating]`).textContent = person && view.rated ? `(${shownRating(person)})` : "";
  }
  const bothPeople = view.people && view.people.order && view.people.chaos;
  $("[data-testid=seats-rated]").textContent = !bothPeople || !view.clock ? ""
    : view.rated ? t("seats.rated", { category: t(`player.${view.rated}`) }) : t("seats.casual");
  if (view.reason && view.rating_changes) {
    changes.textContent = ["order", "chaos"].filter((role) => view.rating_changes[role]).map((role) => {
      const change = view.rating_changes[role];
      return t("result.rating_change", { name: view.people[role].name, before: change.before,
        after: change.after, change: (change.change >= 0 ? "+" : "−") + Math.abs(change.change) });
    }).join(" · ");
    changes.hidden = false;
  }
}

redraws.push(renderMe, renderSeats);

$("[data-action=rename]").addEventListener("click", () => {
  $("#rename-form").hidden = false;
  $("[data-action=rename]").hidden = true;
  $("[data-testid=rename-error]").textContent = "";
  const input = $("input[name=display-name]");
  input.value = me.name || "";
  input.focus();
});
$("[data-action=rename-cancel]").addEventListener("click", () => {
  $("#rename-form").hidden = true;
  $("[data-action=rename]").hidden = false;
});
$("#rename-form").addEventListener("submit", (event) => {
  event.preventDefault();
  $("[data-testid=rename-error]").textContent = "";
  me.renaming = true;
  send({ type: "rename", name: $("input[name=display-name]").value.trim() });
});
