// The Puzzles tab: a position from the shipped set, "Order to play and win" or "Chaos to play
// and survive". The server judges every move with the solver and plays the opponent's reply;
// this script draws what it answers and keeps only the anonymous player id in the browser.
// It runs after app.js and uses its board, words and status (extraModes, t, drawBoard, ...).
"use strict";

const PUZZLE_PLAYER_KEY = "orderchaos.puzzle-player";

const puzzle = {
  current: null,   // what /puzzles/next or /puzzles/daily gave: id, board, kind, rating, daily
  board: Array(CELLS).fill(""),
  moves: [],       // the solver's moves and the replies, as actions (2 * cell + symbol)
  last: null,
  answer: null,    // the server's answer to the last move
  busy: false,
  error: null,     // { code } of the last refusal
  rating: null,    // the player's rating as the server last said it
};

// A random id of 128 bits, made once and kept: the player's puzzle rating hangs on it.
function puzzlePlayer() {
  let id = localStorage.getItem(PUZZLE_PLAYER_KEY);
  if (!id || !/^[A-Za-z0-9_-]{16,64}$/.test(id)) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    id = btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    localStorage.setItem(PUZZLE_PLAYER_KEY, id);
  }
  return id;
}

function puzzleAction(cell, symbol) {
  return 2 * cell + (symbol === "O" ? 1 : 0);
}

function moveName(action) {
  return `${cellName(action >> 1)} ${action & 1 ? "O" : "X"}`;
}

async function puzzleRequest(path, body = null) {
  const options = body === null ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  let answer;
  try {
    answer = await fetch(path, options);
  } catch (error) {
    return { error: { code: "offline" } };
  }
  let data = {};
  try {
    data = await answer.json();
  } catch (error) {
    return { error: { code: "internal" } };
  }
  return answer.ok ? { data } : { error: { code: data.code || "internal", args: data.args } };
}

async function loadPuzzle(which) {
  if (puzzle.busy) return;
  puzzle.busy = true;
  const skip = which === "next" && puzzle.current ? `&skip=${encodeURIComponent(puzzle.current.id)}` : "";
  const { data, error } = await puzzleRequest(`/puzzles/${which}?player=${puzzlePlayer()}${skip}`);
  puzzle.busy = false;
  puzzle.error = error || null;
  if (data) {
    puzzle.current = data;
    puzzle.board = Array.from(data.board, (ch) => (ch === "." ? "" : ch));
    puzzle.moves = [];
    puzzle.last = null;
    puzzle.answer = null;
    puzzle.rating = data.player;
    chooseSymbol("X");
  }
  render();
  // the heading shows the prompt and the status says whose move it is: nothing more to say
  $("[data-testid=announce]").textContent = "";
}

function place(action) {
  puzzle.board[action >> 1] = action & 1 ? "O" : "X";
  puzzle.moves.push(action);
  puzzle.last = action >> 1;
}

async function playPuzzleMove(action) {
  if (!puzzle.current || puzzle.busy || (puzzle.answer && puzzle.answer.over)) return;
  puzzle.busy = true;
  puzzle.error = null;
  render();
  const moves = [...puzzle.moves, action];
  const { data, error } = await puzzleRequest("/puzzles/move", {
    player: puzzlePlayer(), puzzle: puzzle.current.id, moves });
  puzzle.busy = false;
  if (error) {
    puzzle.error = error;
    render();
    return;
  }
  puzzle.answer = data;
  place(action);
  const said = [t("moves.item", { side: side(puzzleMover()), move: moveName(action) })];
  if (data.reply !== null && data.reply !== undefined) {
    place(data.reply);
    said.push(t("moves.item", { side: side(puzzleMover() === "order" ? "chaos" : "order"), move: moveName(data.reply) }));
  }
  if (data.rating) {
    puzzle.rating = { rating: data.rating.after, deviation: data.rating.deviation };
    said.push(puzzleVerdict());
  }
  render();
  $("[data-testid=announce]").textContent = said.join(". ");
}

function puzzleMover() {
  return puzzle.current && puzzle.current.kind === "chaos_survives" ? "chaos" : "order";
}

function puzzlePrompt() {
  if (!puzzle.current) return t("puzzles.loading");
  const prompt = t(puzzle.current.kind === "order_wins" ? "puzzles.order_wins" : "puzzles.chaos_survives");
  return puzzle.current.daily ? `${t("puzzles.daily_label")}: ${prompt}` : prompt;
}

function puzzleVerdict() {
  const answer = puzzle.answer;
  if (!answer || !answer.over) return "";
  if (answer.solved) return t("puzzles.correct");
  return t(puzzleMover() === "order" ? "puzzles.wrong" : "puzzles.wrong_chaos", { move: answer.best });
}

// The rating, and what solving takes: Order's moves to the five, or when Chaos has survived.
function puzzleAbout(current) {
  const goal = current.kind === "order_wins"
    ? t("puzzles.goal_order", { moves: number((current.plies + 1) / 2) }) : t("puzzles.goal_chaos");
  return `${t("puzzles.about", { rating: current.rating })} ${goal}`;
}

extraModes.puzzles = {
  enter() {
    if (!puzzle.current) loadPuzzle("next");
  },
  view() {
    return { board: puzzle.board, last: puzzle.last, winning_line: [], threats: [], winner: null, moves: [] };
  },
  status() {
    if (puzzle.error) return [t("status.error", { message: errorText(puzzle.error) }), "error"];
    if (!puzzle.current) return [t("puzzles.loading"), ""];
    if (puzzle.answer && puzzle.answer.over) return [puzzleVerdict(), puzzle.answer.solved ? "over" : "error"];
    if (puzzle.busy) return [t("puzzles.checking"), ""];
    if (puzzle.moves.length) return [t("puzzles.go_on", { side: side(puzzleMover()) }), ""];
    return [t("status.your_move", { side: side(puzzleMover()) }), ""];
  },
  render() {
    const current = puzzle.current;
    const prompt = $("[data-testid=puzzle-prompt]");
    prompt.textContent = puzzlePrompt();
    if (current) prompt.dataset.puzzle = current.id;
    $(".puzzle-about").textContent = current ? puzzleAbout(current) : "";
    const rating = puzzle.rating;
    $("[data-testid=puzzle-rating]").textContent = rating ? t("puzzles.rating", { rating: rating.rating }) : "";
    const box = $("[data-testid=puzzle-result]");
    const answer = puzzle.answer;
    box.hidden = !(answer && answer.over);
    if (box.hidden) return;
    box.classList.toggle("failed", !answer.solved);
    box.querySelector(".result-title").textContent = puzzleVerdict();
    const line = answer.solved ? answer.solution : answer.line;
    box.querySelector(".puzzle-line").textContent = t("puzzles.line", { line: line.join(", ") });
    const change = answer.rating;
    box.querySelector(".puzzle-change").textContent = change.rated
      ? t("puzzles.change", { before: change.before, after: change.after,
        change: `${change.change > 0 ? "+" : change.change < 0 ? "−" : "±"}${Math.abs(change.change)}` })
      : t("puzzles.unrated");
  },
  click(cell) {
    playPuzzleMove(puzzleAction(cell, ui.symbol));
  },
  key(key) {
    if (key === "n") loadPuzzle("next");
    else if (key === "p") loadPuzzle("daily");  // not d: d starts a cell name in column d
    else return false;
    return true;
  },
};

$("[data-action=next-puzzle]").addEventListener("click", () => loadPuzzle("next"));
$("[data-action=daily-puzzle]").addEventListener("click", () => loadPuzzle("daily"));
$("#puzzle-move-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = $("input[name=puzzle-move-text]");
  const match = /^\s*([a-f])([1-6])\s*([xo])?\s*$/i.exec(input.value);
  if (!match) {
    puzzle.error = { code: "move_text" };
    render();
    return;
  }
  const cell = (Number(match[2]) - 1) * SIZE + COLUMNS.indexOf(match[1].toLowerCase());
  if (puzzle.board[cell]) {
    puzzle.error = { code: "occupied", args: { cell: cellName(cell) } };
    render();
    return;
  }
  input.value = "";
  playPuzzleMove(puzzleAction(cell, match[3] ? match[3].toUpperCase() : ui.symbol));
});
