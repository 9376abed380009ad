// The Order and Chaos page: one WebSocket to the server, one SVG board shared by the
// three modes (play, watch, study). The server checks every move; this script only draws
// what it is sent and forwards clicks and keys.
"use strict";

const SIZE = 6, CELLS = 36, COLUMNS = "abcdef";
const STEP = 56, MARGIN = 22;
const $ = (selector) => document.querySelector(selector);
const $$ = (selector) => Array.from(document.querySelectorAll(selector));

const ui = {
  mode: "play",
  symbol: "X",
  limits: { max_upload_bytes: 2 * 1024 * 1024 },
  views: { play: null, watch: null },
  errors: { play: "", watch: "", study: "" },
  hintCells: [],
  study: { file: "", games: [], game: -1, ply: 0, analysis: null, note: "" },
  pendingColumn: null,
};

// -- the connection --------------------------------------------------------------------
const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);

function send(message) {
  if (socket.readyState !== WebSocket.OPEN) {
    showError(ui.mode, "not connected to the server: reload the page");
    return;
  }
  socket.send(JSON.stringify(message));
}

socket.addEventListener("message", (event) => {
  const msg = JSON.parse(event.data);
  const handler = handlers[msg.type];
  if (handler) handler(msg);
});
socket.addEventListener("close", () => {
  setStatus("Disconnected from the server: reload the page to reconnect.", "error");
});

const handlers = {
  hello(msg) {
    ui.limits = msg.limits;
    $("#agent-suggestions").replaceChildren(...msg.suggestions.map((spec) => {
      const option = document.createElement("option");
      option.value = spec;
      return option;
    }));
    if (msg.games_dir) send({ type: "list_files" });
  },
  state(msg) {
    ui.views[msg.mode] = msg;
    ui.errors[msg.mode] = "";
    if (msg.mode === "play") {
      ui.hintCells = [];
      $("[data-testid=hint]").textContent = "";
    }
    if (msg.mode === "watch") {
      $("[data-action=watch-pause]").textContent = msg.running ? "Pause" : "Resume";
    }
    renderMoves(`[data-testid=${msg.mode}-moves]`, msg.moves, msg.moves.length);
    if (msg.mode === ui.mode) render();
  },
  error(msg) {
    showError(msg.mode || ui.mode, msg.message);
  },
  hint(msg) {
    ui.hintCells = msg.actions.map((a) => a >> 1);
    $("[data-testid=hint]").textContent = msg.text;
    if (ui.mode === "play") render();
  },
  files(msg) {
    const select = $("select[name=games-file]");
    select.replaceChildren(...msg.files.map((name) => new Option(name, name)));
    if (!msg.files.length) select.append(new Option(msg.games_dir ? "(folder is empty)" : "(no --games-dir)", ""));
  },
  games(msg) {
    ui.study.file = msg.file;
    ui.study.games = msg.games;
    $("select[name=game]").replaceChildren(...msg.games.map((g, i) => new Option(
      `#${g.index}: ${g.order || "?"} vs ${g.chaos || "?"} — ${g.winner} in ${g.length}`, String(i))));
    ui.errors.study = "";
    chooseGame(0);
  },
  analysis(msg) {
    if (msg.game !== ui.study.game) return;
    ui.study.analysis = msg;
    const proven = msg.verdicts.filter((v) => v !== null).length;
    ui.study.note = `Solver proved ${proven} of ${msg.verdicts.length} positions.` +
      (msg.network ? " Curve: the network's value for Order (+1 Order wins, −1 Chaos wins)." :
        ` No network values (${msg.network_error}).`);
    if (ui.mode === "study") render();
  },
};

// -- board -------------------------------------------------------------------------------
const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

const board = $("#board");
const cellNodes = [];
const overlay = svg("g", { class: "overlay" });
function buildBoard() {
  for (let col = 0; col < SIZE; col++) {
    board.append(svg("text", { class: "label", x: MARGIN + col * STEP + STEP / 2, y: MARGIN / 2 }, COLUMNS[col]));
  }
  for (let row = 0; row < SIZE; row++) {
    board.append(svg("text", { class: "label", x: MARGIN / 2, y: MARGIN + row * STEP + STEP / 2 }, String(row + 1)));
  }
  for (let c = 0; c < CELLS; c++) {
    const x = MARGIN + (c % SIZE) * STEP, y = MARGIN + Math.floor(c / SIZE) * STEP;
    const group = svg("g", { class: "cell", "data-cell": String(c) });
    group.append(svg("rect", { x, y, width: STEP, height: STEP, "aria-label": cellName(c) }));
    group.append(svg("text", { x: x + STEP / 2, y: y + STEP / 2 + 1 }, ""));
    group.addEventListener("click", () => clickCell(c));
    board.append(group);
    cellNodes.push(group);
  }
  board.append(overlay);
}

function title(role) {
  return role.charAt(0).toUpperCase() + role.slice(1);
}

function cellName(c) {
  return `${COLUMNS[c % SIZE]}${Math.floor(c / SIZE) + 1}`;
}

function drawBoard(view) {
  const win = new Set(view.winning_line || []);
  const hinted = new Set(ui.mode === "play" ? ui.hintCells : []);
  for (let c = 0; c < CELLS; c++) {
    const node = cellNodes[c];
    const symbol = view.board[c] || "";
    node.querySelector("text").textContent = symbol;
    node.setAttribute("class", ["cell", symbol, c === view.last ? "last" : "", win.has(c) ? "win" : "",
      hinted.has(c) ? "hinted" : ""].filter(Boolean).join(" "));
  }
  overlay.replaceChildren();
  for (const threat of view.threats || []) {
    const x = MARGIN + (threat.cell % SIZE) * STEP, y = MARGIN + Math.floor(threat.cell / SIZE) * STEP;
    const mark = svg("g", { class: "threat" });
    mark.append(svg("circle", { cx: x + STEP / 2, cy: y + STEP / 2, r: STEP / 2 - 8 }));
    mark.append(svg("text", { x: x + STEP - 9, y: y + 10 }, threat.symbol));
    mark.append(svg("title", {}, `a four: ${threat.symbol} at ${cellName(threat.cell)} makes five`));
    overlay.append(mark);
  }
}

// -- status and rendering ----------------------------------------------------------------
function setStatus(text, kind = "") {
  const status = $("[data-testid=status]");
  status.textContent = text;
  status.className = `status ${kind}`;
}

function showError(mode, message) {
  ui.errors[mode] = message;
  if (mode === ui.mode) render();
}

function emptyView(text) {
  return { board: Array(CELLS).fill(""), winning_line: [], threats: [], last: null, status: text, winner: null };
}

function render() {
  let view;
  if (ui.mode === "study") view = studyView();
  else view = ui.views[ui.mode] || emptyView("Connecting…");
  drawBoard(view);
  const error = ui.errors[ui.mode];
  if (error) setStatus(`Error: ${error}`, "error");
  else setStatus(view.status, view.winner ? "over" : "");
  if (ui.mode === "study") renderStudy();
}

function renderMoves(selector, moves, current, marks = null) {
  const list = $(selector);
  list.replaceChildren(...moves.map((name, i) => {
    const item = document.createElement("li");
    item.textContent = name;
    if (marks) {
      const mark = document.createElement("span");
      const kind = marks[i] || "unknown";
      mark.className = kind;
      mark.textContent = kind === "keeps" ? " ✓" : kind === "throws" ? " ✗" : " ·";
      mark.title = kind === "keeps" ? "keeps the result" : kind === "throws" ? "throws the result away" : "not proven";
      item.append(mark);
      item.addEventListener("click", () => setPly(i + 1));
    }
    if (i + 1 === current) item.classList.add("current");
    return item;
  }));
}

// -- play ---------------------------------------------------------------------------------
function chooseSymbol(symbol) {
  ui.symbol = symbol;
  for (const button of $$("[data-symbol]")) button.setAttribute("aria-pressed", String(button.dataset.symbol === symbol));
}

function clickCell(c) {
  if (ui.mode !== "play") return;
  send({ type: "move", cell: c, symbol: ui.symbol });
}

$("#new-game-form").addEventListener("submit", (event) => {
  event.preventDefault();
  send({ type: "new_game", side: $("select[name=side]").value, opponent: $("input[name=opponent]").value });
});
$("#move-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = $("input[name=move-text]");
  send({ type: "move", text: input.value });
  input.value = "";
});
for (const button of $$("[data-symbol]")) button.addEventListener("click", () => chooseSymbol(button.dataset.symbol));
$("[data-action=undo]").addEventListener("click", () => send({ type: "undo" }));
$("[data-action=hint]").addEventListener("click", () => {
  $("[data-testid=hint]").textContent = "Thinking about a hint…";
  send({ type: "hint" });
});

// -- watch --------------------------------------------------------------------------------
function speedMs() {
  return Number($("input[name=speed]").value);
}
$("#watch-form").addEventListener("submit", (event) => {
  event.preventDefault();
  send({ type: "watch", order: $("input[name=watch-order]").value, chaos: $("input[name=watch-chaos]").value, delay_ms: speedMs() });
});
$("input[name=speed]").addEventListener("input", () => {
  $("output[name=speed-shown]").textContent = `${(speedMs() / 1000).toFixed(1)} s`;
  if (ui.views.watch) send({ type: "speed", delay_ms: speedMs() });
});
function togglePause() {
  const view = ui.views.watch;
  send({ type: view && view.running ? "pause" : "resume" });
}
$("[data-action=watch-pause]").addEventListener("click", togglePause);
$("[data-action=watch-step]").addEventListener("click", () => send({ type: "step" }));

// -- study --------------------------------------------------------------------------------
const WINDOWS = (() => {
  const windows = [];
  const directions = [[0, 1], [1, 0], [1, 1], [1, -1]];
  for (let r = 0; r < SIZE; r++) for (let c = 0; c < SIZE; c++) for (const [dr, dc] of directions) {
    const cells = [];
    for (let k = 0; k < 5; k++) {
      const rr = r + dr * k, cc = c + dc * k;
      if (rr < 0 || rr >= SIZE || cc < 0 || cc >= SIZE) break;
      cells.push(rr * SIZE + cc);
    }
    if (cells.length === 5) windows.push(cells);
  }
  return windows;
})();

function boardFacts(cells) {
  // The winning line and the fours of a position (the server does this for play and watch).
  const win = new Set(), threats = new Map();
  for (const window of WINDOWS) {
    for (const symbol of ["X", "O"]) {
      const mine = window.filter((c) => cells[c] === symbol).length;
      const empty = window.filter((c) => cells[c] === "");
      if (mine === 5) window.forEach((c) => win.add(c));
      else if (mine === 4 && empty.length === 1) threats.set(`${empty[0]}${symbol}`, { cell: empty[0], symbol });
    }
  }
  return { winning_line: [...win], threats: win.size ? [] : [...threats.values()] };
}

function studyView() {
  const { games, game, ply, file } = ui.study;
  if (game < 0) return emptyView("Open a games file from the folder, or upload one.");
  const record = games[game];
  const cells = Array(CELLS).fill("");
  for (const action of record.actions.slice(0, ply)) cells[action >> 1] = "XO"[action & 1];
  const facts = boardFacts(cells);
  const last = ply > 0 ? record.actions[ply - 1] >> 1 : null;
  let text = `${file}, game #${record.index} (${record.order || "?"} vs ${record.chaos || "?"}): ply ${ply} of ${record.length}`;
  if (ply > 0) text += `, ${ply % 2 ? "Order" : "Chaos"} played ${record.moves[ply - 1]}`;
  const analysis = ui.study.analysis;
  if (analysis && analysis.verdicts[ply]) text += `; solver: ${title(analysis.verdicts[ply])} wins from here`;
  if (ply === record.length) text += `. ${title(record.winner)} won.`;
  return { board: cells, last, ...facts, status: text, winner: ply === record.length ? record.winner : null };
}

function renderStudy() {
  const { games, game, ply, analysis } = ui.study;
  const record = games[game];
  const range = $("input[name=ply]");
  range.max = record ? String(record.length) : "0";
  range.value = String(ply);
  $("[data-testid=analysis]").textContent = record ? (analysis ? ui.study.note : "Analysing with the solver and the network…") : "";
  renderMoves("[data-testid=study-moves]", record ? record.moves : [], ply, analysis ? analysis.marks : []);
  drawCurve(record, analysis, ply);
}

function drawCurve(record, analysis, ply) {
  const curve = $("[data-testid=value-curve]");
  const W = 320, H = 130, left = 26, right = 8, top = 8, bottom = 18;
  const n = record ? Math.max(record.length, 1) : 1;
  const x = (i) => left + (W - left - right) * i / n;
  const y = (v) => top + (H - top - bottom) * (1 - v) / 2;
  const parts = [
    svg("line", { class: "axis", x1: left, x2: W - right, y1: y(0), y2: y(0) }),
    svg("line", { class: "axis", x1: left, x2: left, y1: y(1), y2: y(-1) }),
    svg("text", { x: 2, y: y(1) + 4 }, "+1"), svg("text", { x: 6, y: y(0) + 4 }, "0"), svg("text", { x: 2, y: y(-1) + 4 }, "−1"),
    svg("text", { x: left, y: H - 4 }, "ply 0"), svg("text", { x: W - right - 30, y: H - 4 }, `ply ${record ? record.length : 0}`),
  ];
  if (analysis) {
    const points = analysis.values.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`)).filter(Boolean);
    if (points.length) parts.push(svg("polyline", { class: "value", points: points.join(" ") }));
  }
  if (record) parts.push(svg("line", { class: "now", x1: x(ply), x2: x(ply), y1: y(1), y2: y(-1) }));
  curve.replaceChildren(...parts);
}

function chooseGame(index) {
  ui.study.game = index;
  ui.study.ply = 0;
  ui.study.analysis = null;
  $("select[name=game]").value = String(index);
  send({ type: "analyse", game: index });
  render();
}

function setPly(ply) {
  const record = ui.study.games[ui.study.game];
  if (!record) return;
  ui.study.ply = Math.max(0, Math.min(record.length, ply));
  render();
}

$("[data-action=refresh-files]").addEventListener("click", () => send({ type: "list_files" }));
$("[data-action=open-file]").addEventListener("click", () => {
  const name = $("select[name=games-file]").value;
  if (name) send({ type: "open_file", name });
  else showError("study", "no file chosen: start the server with --games-dir DIR, or upload a file");
});
$("input[name=upload]").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (!file) return;
  if (file.size > ui.limits.max_upload_bytes) {
    showError("study", `${file.name} is larger than the upload limit of ${ui.limits.max_upload_bytes} bytes`);
    return;
  }
  send({ type: "upload", name: file.name, content: await file.text() });
  event.target.value = "";
});
$("select[name=game]").addEventListener("change", (event) => chooseGame(Number(event.target.value)));
$("input[name=ply]").addEventListener("input", (event) => setPly(Number(event.target.value)));
$("[data-action=first]").addEventListener("click", () => setPly(0));
$("[data-action=prev]").addEventListener("click", () => setPly(ui.study.ply - 1));
$("[data-action=next]").addEventListener("click", () => setPly(ui.study.ply + 1));
$("[data-action=last]").addEventListener("click", () => setPly(Infinity));

// -- modes and keys ----------------------------------------------------------------------------
function setMode(mode) {
  ui.mode = mode;
  for (const button of $$("[data-mode]")) button.setAttribute("aria-pressed", String(button.dataset.mode === mode));
  for (const panel of $$("[data-panel]")) panel.hidden = panel.dataset.panel !== mode;
  render();
}
for (const button of $$("[data-mode]")) button.addEventListener("click", () => setMode(button.dataset.mode));

document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (target instanceof HTMLInputElement || target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement) return;
  const key = event.key.toLowerCase();
  if (ui.mode === "play") {
    if (key === "x" || key === "o") chooseSymbol(key.toUpperCase());
    else if (COLUMNS.includes(key)) ui.pendingColumn = key;
    else if ("123456".includes(key) && key.length === 1 && ui.pendingColumn) {
      const cell = (Number(key) - 1) * SIZE + COLUMNS.indexOf(ui.pendingColumn);
      ui.pendingColumn = null;
      send({ type: "move", cell, symbol: ui.symbol });
    } else if (key === "u") send({ type: "undo" });
    else if (key === "h") $("[data-action=hint]").click();
    else if (key === "n") $("[data-action=new-game]").click();
    else return;
  } else if (ui.mode === "watch") {
    if (key === " ") togglePause();
    else if (key === "s") send({ type: "step" });
    else return;
  } else {
    if (key === "arrowleft") setPly(ui.study.ply - 1);
    else if (key === "arrowright") setPly(ui.study.ply + 1);
    else if (key === "home") setPly(0);
    else if (key === "end") setPly(Infinity);
    else return;
  }
  event.preventDefault();
});

buildBoard();
render();
