// The Order and Chaos page: one WebSocket to the server, one SVG board shared by the three
// modes (play, watch, study). The server checks every move and sends every fact the page
// shows (the board, the fours, the winning line, whose turn, the result); this script only
// draws them, in the reader's language, and forwards clicks and keys. It knows no rules.
"use strict";

const SIZE = 6, CELLS = 36, COLUMNS = "abcdef";
const STEP = 56, MARGIN = 22;
const LANGUAGES = ["en", "sv", "nb", "de"];
const TOKENS_KEY = "orderchaos.seats", LANGUAGE_KEY = "orderchaos.language", MAX_TOKENS = 100;
const $ = (selector) => document.querySelector(selector);
// Modes drawn by their own scripts (learn.js, puzzles.js): each gives view() (the board's facts),
// status() -> [text, kind], render() (its panel) and click(cell), and may give enter() and
// key(key) -> handled. app.js hands them the board, the symbol picker, the status and the keys;
// keys a mode does not handle fall to the keys of play (x/o, a cell name such as c3).
const extraModes = {};
// Other scripts (player.js) add to what every outgoing message carries and to every redraw.
const outgoing = [];   // each hook(message) may add fields before it is sent
const redraws = [];    // each hook() runs at the end of render()
const $$ = (selector) => Array.from(document.querySelectorAll(selector));

const ui = {
  mode: "play",
  symbol: "X",
  connected: false,
  levels: {},
  limits: { max_upload_bytes: 2 * 1024 * 1024 },
  views: { play: null, watch: null },
  errors: { play: null, watch: null, study: null },
  files: { names: [], folder: true },  // the games folder's files, and whether there is a folder
  hint: null,
  hintCells: [],
  game: null,      // the id of the game open in this tab
  invite: null,    // the invite secret from the link this tab was opened with
  publicUrl: null, // the site's public address (serve --public-url), the base of the links shown
  restarting: false,  // the server said it is restarting: the lost connection is expected
  greeted: false,     // this connection got its hello: the server took the tab
  refusal: null,      // why the server refused this tab (an error before hello), until it takes it
  disconnectedAt: 0,  // when the connection was lost (performance.now()): the clocks stop there
  study: { file: "", games: [], game: -1, ply: 0, analysis: null },
  pendingColumn: null,
  catalogue: {},
  english: {},
};

// -- words ------------------------------------------------------------------------------------
function t(key, args = {}) {
  const text = ui.catalogue[key] ?? ui.english[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in args ? String(args[name]) : whole));
}

async function fetchCatalogue(lang) {
  const answer = await fetch(`/static/i18n/${lang}.json`);
  if (!answer.ok) throw new Error(`no catalogue for ${lang}`);
  return answer.json();
}

async function setLanguage(lang) {
  if (!LANGUAGES.includes(lang)) lang = "en";
  try {
    if (!Object.keys(ui.english).length) ui.english = await fetchCatalogue("en");
    ui.catalogue = lang === "en" ? ui.english : await fetchCatalogue(lang);
  } catch (error) {
    ui.catalogue = ui.english;
  }
  document.documentElement.lang = lang;
  $("select[name=language]").value = lang;
  for (const node of $$("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of $$("[data-i18n-attr]")) {
    for (const pair of node.dataset.i18nAttr.split(";")) {
      const [attr, key] = pair.split(":");
      node.setAttribute(attr, t(key));
    }
  }
  showSpeed();
  renderFiles();
  renderMovesAll();
  render();
}

// A number as the reader's language writes it (0,5 in sv, nb and de); anything else as it is.
function number(value, digits = null) {
  if (typeof value !== "number") return value;
  const options = digits === null ? {} : { minimumFractionDigits: digits, maximumFractionDigits: digits };
  return new Intl.NumberFormat(document.documentElement.lang || "en", options).format(value);
}

function side(role) {
  return t(`side.${role}`);
}

// A level by its name; an agent spec with its agent's name in the reader's language (the
// parameters after the colon as typed).
function player(label) {
  if (label in ui.levels) return t(`level.${label}`);
  if (typeof label !== "string") return label;
  const name = label.split(":")[0], key = `agent.${name}`;
  return key in ui.catalogue || key in ui.english ? t(key) + label.slice(name.length) : label;
}

// -- seat tokens ------------------------------------------------------------------------------
function tokens() {
  try {
    return JSON.parse(localStorage.getItem(TOKENS_KEY) || "{}");
  } catch (error) {
    return {};
  }
}

function saveToken(game, token) {
  const all = tokens();
  delete all[game];
  all[game] = token;
  const ids = Object.keys(all);
  for (const old of ids.slice(0, Math.max(0, ids.length - MAX_TOKENS))) delete all[old];
  localStorage.setItem(TOKENS_KEY, JSON.stringify(all));
}

// -- the connection ---------------------------------------------------------------------------
let socket = null, retries = 0;

function connect() {
  socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  socket.addEventListener("message", (event) => {
    const msg = JSON.parse(event.data);
    const handler = handlers[msg.type];
    if (handler) handler(msg);
  });
  socket.addEventListener("open", () => {
    ui.connected = true;
    ui.greeted = false;
  });
  socket.addEventListener("close", () => {
    if (ui.connected) ui.disconnectedAt = performance.now();
    ui.connected = false;
    // back off 0.5 s, 1 s, 2 s ... up to 10 s, then redraw everything from the server's state
    const delay = Math.min(10000, 500 * 2 ** retries) * (0.75 + Math.random() / 2);
    retries += 1;
    render();
    setTimeout(connect, delay);
  });
}

function send(message) {
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    showError(ui.mode, { code: "offline", message: "not connected to the server" });
    return;
  }
  for (const hook of outgoing) hook(message);
  socket.send(JSON.stringify(message));
}

function openGame(game) {
  const message = { type: "open", game };
  const token = tokens()[game];
  if (token) message.token = token;
  if (ui.invite && !token) message.invite = ui.invite;
  send(message);
}

function gameFromAddress() {
  const match = location.pathname.match(/^\/g\/([A-Za-z0-9_-]{16,64})$/);
  const invite = new URLSearchParams(location.hash.slice(1)).get("invite");
  return { game: match ? match[1] : null, invite };
}

const handlers = {
  hello(msg) {
    retries = 0;  // taken: a refused tab keeps backing off
    ui.greeted = true;
    ui.refusal = null;
    ui.levels = msg.levels;
    ui.limits = msg.limits;
    ui.publicUrl = msg.public_url || null;
    ui.restarting = false;
    $("details.advanced").hidden = !msg.free_specs;
    $("#agent-suggestions").replaceChildren(...msg.suggestions.map((spec) => new Option("", spec)));
    ui.files = { names: [], folder: Boolean(msg.games_dir) };
    if (msg.games_dir) send({ type: "list_files" });
    else renderFiles();
    send({ type: "lobby" });  // the challenges and the bots already there when this tab opened
    const fromAddress = gameFromAddress();
    if (ui.game) openGame(ui.game);  // a reconnect: back into the same game
    else if (fromAddress.game) {
      ui.invite = fromAddress.invite;
      openGame(fromAddress.game);
    } else send({ type: "state" });
    send({ type: "live" });  // the games being played now, pushed as they change (start.js)
  },
  joined(msg) {
    ui.game = msg.game;
    ui.offered = false;
    if (msg.token) saveToken(msg.game, msg.token);
    ui.seatTaken = Boolean(ui.invite) && msg.seat === null;  // an invite someone else used first
    ui.invite = null;
    if (location.pathname !== `/g/${msg.game}` || location.hash) history.replaceState(null, "", `/g/${msg.game}`);
  },
  rematch(msg) {
    const mine = tokens()[ui.game];
    if (mine) saveToken(msg.game, mine);  // the token keeps its holder's seat, sides swapped
    openGame(msg.game);
  },
  state(msg) {
    if (msg.mode === "play" && msg.game === null) {
      ui.views.play = null;
      render();
      return;
    }
    if (msg.mode === "play" && ui.views.play && ui.views.play.moves.length !== msg.moves.length) {
      ui.hint = null;  // a move or an undo makes the hint stale
      ui.hintCells = [];
      renderHint();
    }
    const before = ui.views[msg.mode];
    msg.receivedAt = performance.now();  // the clocks tick on from here
    ui.views[msg.mode] = msg;
    ui.errors[msg.mode] = msg.error || null;
    if (msg.mode === ui.mode) announceChange(before, msg);
    if (msg.mode === "watch") $("[data-action=watch-pause]").textContent = t(msg.running ? "watch.pause" : "watch.resume");
    renderMoves(`[data-testid=${msg.mode}-moves]`, msg.moves, msg.moves.length);
    if (msg.mode === ui.mode) render();
  },
  lobby(msg) {
    ui.lobby = msg;
    renderLobby();
    renderBots();
    if (msg.withdrawn) {  // going into a game withdrew this tab's open challenges
      $("[data-testid=announce]").textContent = msg.withdrawn === 1 ? t("lobby.withdrawn")
        : t("lobby.withdrawn_many", { count: number(msg.withdrawn) });
    }
    if (ui.mode === "play") render();
  },
  error(msg) {
    if (msg.code === "restarting") {  // the connection is about to close: say why, not "Error"
      ui.restarting = true;
      render();
      return;
    }
    if (!ui.greeted) {  // refused before hello (a connection limit): say why while it retries
      ui.refusal = msg;
      render();
      return;
    }
    showError(msg.mode || ui.mode, msg);
  },
  hint(msg) {
    ui.hint = msg;
    ui.hintCells = msg.actions.map((a) => a >> 1);
    renderHint();
    if (ui.mode === "play") render();
  },
  files(msg) {
    ui.files = { names: msg.files, folder: msg.games_dir };
    renderFiles();
  },
  games(msg) {
    ui.study.file = msg.file;
    ui.study.games = msg.games;
    $("select[name=game]").replaceChildren(...msg.games.map((g, i) => new Option(
      t("study.game_item", { index: g.index, order: g.order || "?", chaos: g.chaos || "?", winner: side(g.winner), length: g.length }),
      String(i))));
    ui.errors.study = null;
    setMode("study");
    chooseGame(0);
  },
  analysis(msg) {
    if (msg.game !== ui.study.game) return;
    ui.study.analysis = msg;
    if (ui.mode === "study") render();
  },
};

// The games folder's files, or words saying there are none (redrawn on a change of language).
function renderFiles() {
  const select = $("select[name=games-file]");
  const { names, folder } = ui.files;
  select.replaceChildren(...names.map((name) => new Option(name, name)));
  if (!names.length) select.append(new Option(t(folder ? "study.folder_empty" : "study.no_folder"), ""));
}

// -- board --------------------------------------------------------------------------------------
const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

const marks = $("#board .marks");
const cellsBox = $("#board .cells");
const cellNodes = [];
const overlay = svg("g", { class: "overlay" });
let focusedCell = 0;  // the one cell in the tab order (a roving tabindex)

function cellName(c) {
  return `${COLUMNS[c % SIZE]}${Math.floor(c / SIZE) + 1}`;
}

// The cell's name, what it holds, and what the picture marks on it: the last move, the five,
// the symbols that would make five here.
function cellLabel(node, threats = []) {
  const c = Number(node.dataset.cell);
  const parts = [cellName(c), node.textContent || t("board.empty")];
  if (node.classList.contains("last")) parts.push(t("board.last"));
  if (node.classList.contains("win")) parts.push(t("board.win"));
  for (const symbol of threats) parts.push(t("board.threat_cell", { symbol }));
  return parts.join(", ");
}

function focusCell(c, moveFocus = true) {
  cellNodes[focusedCell].tabIndex = -1;
  focusedCell = c;
  cellNodes[c].tabIndex = 0;
  if (moveFocus) cellNodes[c].focus();
}

// Arrow keys, Home and End move between the cells; x or o writes that symbol on the focused
// cell; Enter and Space press the cell as a click does (the chosen symbol).
function cellKey(event, c) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const row = Math.floor(c / SIZE), col = c % SIZE;
  const moves = {
    arrowleft: row * SIZE + Math.max(0, col - 1), arrowright: row * SIZE + Math.min(SIZE - 1, col + 1),
    arrowup: Math.max(0, row - 1) * SIZE + col, arrowdown: Math.min(SIZE - 1, row + 1) * SIZE + col,
    home: row * SIZE, end: row * SIZE + SIZE - 1,
  };
  const key = event.key.toLowerCase();
  if (key in moves) focusCell(moves[key]);
  else if ((key === "x" || key === "o") && (ui.mode === "play" || ui.mode in extraModes)) {
    chooseSymbol(key.toUpperCase());
    clickCell(c);
  } else return;
  event.preventDefault();
  event.stopPropagation();
}

function buildBoard() {
  for (let col = 0; col < SIZE; col++) {
    marks.append(svg("text", { class: "label", x: MARGIN + col * STEP + STEP / 2, y: MARGIN / 2 }, COLUMNS[col]));
  }
  for (let row = 0; row < SIZE; row++) {
    marks.append(svg("text", { class: "label", x: MARGIN / 2, y: MARGIN + row * STEP + STEP / 2 }, String(row + 1)));
  }
  for (let c = 0; c < CELLS; c++) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "cell";
    button.dataset.cell = String(c);
    button.tabIndex = c === focusedCell ? 0 : -1;
    button.addEventListener("click", () => {
      focusCell(c, false);
      clickCell(c);
    });
    button.addEventListener("focus", () => focusCell(c, false));
    button.addEventListener("keydown", (event) => cellKey(event, c));
    cellsBox.append(button);
    cellNodes.push(button);
  }
  marks.append(overlay);
}

function drawBoard(view) {
  const win = new Set(view.winning_line || []);
  const hinted = new Set(ui.mode === "play" ? ui.hintCells : view.hinted || []);
  const threatsAt = new Map();
  for (const threat of view.threats || []) threatsAt.set(threat.cell, [...(threatsAt.get(threat.cell) || []), threat.symbol]);
  for (let c = 0; c < CELLS; c++) {
    const node = cellNodes[c];
    const symbol = view.board[c] || "";
    node.textContent = symbol;
    node.className = ["cell", symbol, c === view.last ? "last" : "", win.has(c) ? "win" : "",
      hinted.has(c) ? "hinted" : ""].filter(Boolean).join(" ");
    node.setAttribute("aria-label", cellLabel(node, threatsAt.get(c)));
  }
  overlay.replaceChildren();
  for (const threat of view.threats || []) {
    const x = MARGIN + (threat.cell % SIZE) * STEP, y = MARGIN + Math.floor(threat.cell / SIZE) * STEP;
    const mark = svg("g", { class: "threat" });
    mark.append(svg("circle", { cx: x + STEP / 2, cy: y + STEP / 2, r: STEP / 2 - 8 }));
    mark.append(svg("text", { x: x + STEP - 9, y: y + 10 }, threat.symbol));
    mark.append(svg("title", {}, t("board.threat", { symbol: threat.symbol, cell: cellName(threat.cell) })));
    overlay.append(mark);
  }
  if (win.size) {  // the line through the five, end to end
    const cells = [...win].sort((a, b) => a - b);
    const centre = (c) => [MARGIN + (c % SIZE) * STEP + STEP / 2, MARGIN + Math.floor(c / SIZE) * STEP + STEP / 2];
    const [x1, y1] = centre(cells[0]), [x2, y2] = centre(cells[cells.length - 1]);
    overlay.append(svg("line", { class: "win-line", x1, y1, x2, y2 }));
  }
}

// -- status and rendering --------------------------------------------------------------------------
function setStatus(text, kind = "") {
  const status = $("[data-testid=status]");
  status.textContent = text;
  status.className = `status ${kind}`;
}

function errorText(error) {
  const key = `error.${error.code}`;
  // the server's English detail is never shown: the code and its arguments make the sentence
  const args = Object.fromEntries(Object.entries(error.args || {}).map(([name, value]) => [name, number(value)]));
  return t(error.code && (key in ui.catalogue || key in ui.english) ? key : "error.internal", args);
}

// The last move and the result, said once in the live region when they change.
function announceChange(before, view) {
  const moves = view.moves || [];
  const parts = [];
  if (moves.length && (!before || before.game !== view.game || (before.moves || []).length !== moves.length)) {
    const last = moves[moves.length - 1];
    parts.push(t("moves.item", { side: side(last.side), move: last.move }));
  }
  if (view.winner && !(before && before.winner && before.game === view.game)) {
    parts.push(view.mode === "play" ? resultTitle(view) : t("result.side_won", { side: side(view.winner) }));
  }
  if (parts.length) $("[data-testid=announce]").textContent = parts.join(". ");
}

function showError(mode, error) {
  ui.errors[mode] = error;
  if (mode === ui.mode) render();
}

function emptyView() {
  return { board: Array(CELLS).fill(""), winning_line: [], threats: [], last: null, winner: null, moves: [] };
}

function resultTitle(view) {
  if (view.reason === "aborted") return t("result.aborted");
  if (view.seat) return t(view.winner === view.seat ? "result.won" : "result.lost");
  return t("result.side_won", { side: side(view.winner) });
}

// What this tab waits for in the lobby, if anything: a pairing, or its open challenge.
function lobbyWaiting() {
  const lobby = ui.lobby;
  if (!lobby) return null;
  if (lobby.seeking) return t("lobby.seeking");
  if (lobby.challenges.some((challenge) => challenge.mine)) return t("status.challenge_open");
  return null;
}

function playStatus(view) {
  const waiting = lobbyWaiting();
  if (waiting && (!view || view.reason)) return waiting;
  if (!view) return t(ui.offered ? "start.offer" : "status.choose");
  if (view.reason) return t("status.over", { result: resultTitle(view) });
  const mover = view.players[view.to_play];
  const args = { side: side(view.to_play) };
  const free = ["order", "chaos"].find((role) => !view.players[role].taken);
  if (free) return t(view.seat ? "status.waiting_friend" : "status.waiting_player", args);
  if (mover.agent) return t(view.thinking ? "status.thinking" : "status.agent_turn", { ...args, player: player(mover.agent) });
  if (mover.bot && view.seat !== view.to_play) return t("status.agent_turn", { ...args, player: `bot:${mover.bot}` });
  const opponent = view.seat && view.players[view.seat === "order" ? "chaos" : "order"];
  if (opponent && !opponent.agent && !opponent.here) return t("status.friend_left", args);
  if (view.seat === view.to_play) return t("status.your_move", args);
  if (!view.seat && ui.seatTaken) return t("status.seat_taken", args);
  return t(view.seat ? "status.friend_turn" : "status.watching", args);
}

function watchStatus(view) {
  if (!view || !view.started) return t("watch.choose");
  if (view.winner) return t("watch.over", { side: side(view.winner), player: player(view[view.winner]) });
  const text = t("watch.turn", { side: side(view.to_play), player: player(view[view.to_play]) });
  return view.running ? text : `${text} ${t("watch.paused")}`;
}

function render() {
  let view;
  const extra = extraModes[ui.mode];
  if (extra) view = extra.view();
  else if (ui.mode === "study") view = studyView();
  else view = ui.views[ui.mode] || emptyView();
  drawBoard(view);
  // on a phone, the form that starts a game comes first while there is no game to show
  document.body.classList.toggle("no-game", ui.mode === "play" && !ui.views.play);
  const error = ui.errors[ui.mode];
  if (ui.restarting) setStatus(t("status.restarting"), "error");
  else if (!ui.connected && ui.refusal) setStatus(t("status.refused", { message: errorText(ui.refusal) }), "error");
  else if (!ui.connected) setStatus(t(socket ? "status.reconnecting" : "status.connecting"), "error");
  else if (extra) setStatus(...extra.status());
  else if (error) setStatus(t("status.error", { message: errorText(error) }), "error");
  else if (ui.mode === "study") setStatus(view.status, view.winner ? "over" : "");
  else if (ui.mode === "watch") setStatus(watchStatus(ui.views.watch), view.winner ? "over" : "");
  else setStatus(playStatus(ui.views.play), view.winner ? "over" : "");
  renderPlay();
  if (ui.mode === "study") renderStudy();
  if (extra) extra.render();
  for (const hook of redraws) hook();
}

function resultLine(view) {
  const loser = view.winner === "order" ? "chaos" : "order";
  if (view.reason === "resign" || view.reason === "time") return t(`result.reason_${view.reason}`, { side: side(loser) });
  if (view.reason === "aborted") return t("result.reason_aborted");
  return view.line ? t("result.line", { side: side("order"), line: view.line }) : t("result.full", { side: side("chaos") });
}

// The open challenges, each with its side and clock; another tab's with an Accept button.
function renderLobby() {
  const lobby = ui.lobby || { challenges: [], seeking: null };
  const list = $("[data-testid=lobby]");
  list.replaceChildren();
  for (const challenge of lobby.challenges) {
    const item = document.createElement("li");
    const sideName = challenge.side === "random" ? t("play.side_random") : side(challenge.side);
    item.append(challenge.time_control === "none" ? t("lobby.item_untimed", { side: sideName })
      : t("lobby.item", { side: sideName, time: challenge.time_control }), " ");
    if (challenge.name) {  // who made it, with their rating in the clock's category
      item.append(challenge.rating ? t("lobby.by_rated", { name: challenge.name, rating: shownRating(challenge.rating) })
        : t("lobby.by", { name: challenge.name }), " ");
    }
    if (challenge.rated === false) item.append(t("lobby.casual"), " ");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = t(challenge.mine ? "lobby.cancel" : "lobby.accept");
    button.addEventListener("click", () => {
      if (challenge.mine) send({ type: "cancel", challenge: challenge.id });
      else if (mayLeaveGame()) send({ type: "accept", challenge: challenge.id });
    });
    item.append(button);
    list.append(item);
  }
  $("[data-testid=lobby-empty]").hidden = lobby.challenges.length > 0;
  $("[data-testid=lobby-seeking]").hidden = !lobby.seeking;
}

// The bots online, each with its rating and a button that challenges it on the chosen clock.
function renderBots() {
  const online = (ui.lobby && ui.lobby.bots) || [];
  const list = $("[data-testid=bots]");
  list.replaceChildren();
  for (const bot of online) {
    const item = document.createElement("li");
    item.append(t("bots.item", { name: bot.name, rating: number(Math.round(bot.rating)) }), " ");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = t("bots.challenge");
    button.dataset.bot = bot.name;
    button.addEventListener("click", () => {
      if (!mayLeaveGame()) return;
      send({ type: "challenge_bot", bot: bot.name, time_control: $("select[name=bot_time_control]").value });
      $("[data-testid=announce]").textContent = t("bots.waiting", { name: bot.name });
    });
    item.append(button);
    list.append(item);
  }
  $("[data-testid=bots-empty]").hidden = online.length > 0;
}

// Seconds as m:ss, the digits as the reader's language writes them.
function clockText(seconds) {
  const whole = Math.ceil(Math.max(0, seconds));
  const lang = document.documentElement.lang || "en";
  const minutes = new Intl.NumberFormat(lang).format(Math.floor(whole / 60));
  return `${minutes}:${new Intl.NumberFormat(lang, { minimumIntegerDigits: 2 }).format(whole % 60)}`;
}

// Both clocks of the open game, the running one counted down from when its view came.
function renderClocks() {
  const view = ui.views.play;
  const box = $("[data-testid=clocks]");
  const clock = ui.mode === "play" && view ? view.clock : null;
  box.hidden = !clock;
  if (!clock) return;
  // cut off from the server, the clocks stop where they were: its next view has the truth
  const now = ui.connected ? performance.now() : Math.max(view.receivedAt, ui.disconnectedAt);
  for (const role of ["order", "chaos"]) {
    let left = clock.left[role];
    if (clock.running === role) left -= (now - view.receivedAt) / 1000;
    const node = $(`[data-testid=clock-${role}]`);
    node.textContent = t("clock.left", { side: side(role), time: clockText(left) });
    node.classList.toggle("running", ui.connected && clock.running === role);
  }
}
setInterval(renderClocks, 250);

function renderPlay() {
  renderClocks();
  const view = ui.views.play;
  const result = $("[data-testid=result]");
  result.hidden = !(ui.mode === "play" && view && view.reason);
  if (view && view.reason) {
    result.querySelector(".result-title").textContent = resultTitle(view);
    result.querySelector(".result-line").textContent = resultLine(view);
    result.querySelector("[data-action=rematch]").hidden = !view.seat;
    result.querySelector("[data-action=download]").href = `/games/${view.game}.jsonl`;
  }
  const share = $(".share");
  share.hidden = !(view && view.game);
  if (view && view.game) {
    const base = ui.publicUrl || location.origin;  // the site's public address behind a proxy
    $("[data-testid=watch-link]").value = `${base}/g/${view.game}`;
    const invite = $("[data-testid=invite-link]");
    invite.value = view.invite ? `${base}/g/${view.game}#invite=${view.invite}` : "";
    invite.closest("label").hidden = !view.invite;
  }
  $("[data-action=undo]").disabled = !(view && view.can_undo);
  $("[data-action=resign]").disabled = !(view && view.can_resign);
  $("[data-action=retry]").hidden = !(ui.mode === "play" && view && view.can_retry);  // after a failed computer move
  $("[data-action=hint]").disabled = !(view && view.vs_agent && view.seat && !view.winner);
}

function renderMoves(selector, moves, current, marks = null, strategyMarks = []) {
  const list = $(selector);
  list.replaceChildren(...moves.map((m, i) => {
    const item = document.createElement("li");
    item.textContent = t("moves.item", { side: side(m.side), move: m.move });
    if (marks) {
      const mark = document.createElement("span");
      const kind = marks[i] || "unknown";
      mark.className = kind;
      mark.textContent = kind === "keeps" ? " ✓" : kind === "throws" ? " ✗" : " ·";
      mark.title = t(`study.${kind}`);
      item.append(mark);
      item.addEventListener("click", () => setPly(i + 1));
    }
    const strategy = strategyMarks[i];  // Order's moves while the strategy proved a win
    if (strategy) {
      const mark = document.createElement("span");
      mark.className = `strategy ${strategy}`;
      mark.dataset.strategy = strategy;
      mark.textContent = strategy === "keeps" ? " ◆" : " ◇";
      mark.title = t(strategy === "keeps" ? "study.strategy_keeps" : "study.strategy_leaves");
      item.append(mark);
    }
    if (i + 1 === current) item.classList.add("current");
    return item;
  }));
}

function renderMovesAll() {
  for (const mode of ["play", "watch"]) {
    const view = ui.views[mode];
    if (view) renderMoves(`[data-testid=${mode}-moves]`, view.moves, view.moves.length);
  }
  renderHint();
}

function renderHint() {
  const box = $("[data-testid=hint]");
  const hint = ui.hint;
  if (!hint) {
    box.textContent = "";
    return;
  }
  if (hint.thinking) box.textContent = t("hint.thinking");
  else if (hint.source === "solver" && hint.winner === hint.to_play) {
    box.textContent = hint.moves.length ? t("hint.solver_win", { side: side(hint.winner), moves: hint.moves.join(", ") })
      : t("hint.solver_win_unknown", { side: side(hint.winner) });
  } else if (hint.source === "solver") box.textContent = t("hint.solver_loss", { side: side(hint.winner) });
  else if (hint.source === "network") {
    box.textContent = t("hint.network", { time: number(hint.time), moves: hint.moves.join(", "), side: side(hint.to_play),
      value: (hint.value >= 0 ? "+" : "") + number(hint.value, 2) });
  } else box.textContent = t("hint.none", { time: number(hint.time) });
}

// -- play ------------------------------------------------------------------------------------------
function chooseSymbol(symbol) {
  ui.symbol = symbol;
  for (const button of $$("[data-symbol]")) button.setAttribute("aria-pressed", String(button.dataset.symbol === symbol));
}

function clickCell(c) {
  if (ui.mode in extraModes) extraModes[ui.mode].click(c);
  if (ui.mode !== "play") return;
  if (!ui.views.play) offerGame();  // no game yet: nothing to place a symbol in
  else send({ type: "move", cell: c, symbol: ui.symbol });
}

function opponent() {
  const spec = $("input[name=opponent]").value.trim();
  return spec && !$("details.advanced").hidden ? spec : $("select[name=level]").value;
}

// Leaving a game in progress for a new one takes a yes (an Enter on a button still focused,
// or the n key, must not drop it).
function mayLeaveGame() {
  const view = ui.views.play;
  if (!view || !view.seat || view.winner || !view.moves.length) return true;
  return window.confirm(t("play.confirm_new"));
}

// Each form's own side and clock: the friend form's for a friend game and a challenge, the
// computer form's for a game against the computer.
function chosen(form) {
  return { side: $(`${form} select[name=side]`).value, time_control: $(`${form} select[name=time_control]`).value };
}
$("#new-game-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (!mayLeaveGame()) return;
  ui.hint = null;
  send({ type: "new_game", opponent: opponent(), ...chosen("#new-game-form") });
});
$("#friend-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (!mayLeaveGame()) return;
  ui.hint = null;
  send({ type: "play_friend", ...chosen("#friend-form") });
});
$("[data-action=challenge]").addEventListener("click", () => send({ type: "challenge", ...chosen("#friend-form") }));
$("#move-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = $("input[name=move-text]");
  if (!ui.views.play) offerGame();
  else send({ type: "move", text: input.value });
  input.value = "";
});
for (const button of $$("[data-symbol]")) button.addEventListener("click", () => chooseSymbol(button.dataset.symbol));
$("[data-action=undo]").addEventListener("click", () => send({ type: "undo" }));
$("[data-action=retry]").addEventListener("click", () => send({ type: "retry" }));
$("[data-action=resign]").addEventListener("click", () => {
  if (window.confirm(t("play.resign_confirm"))) send({ type: "resign" });
});
$("[data-action=hint]").addEventListener("click", () => {
  ui.hint = { thinking: true };
  renderHint();
  send({ type: "hint" });
});
$("[data-action=rematch]").addEventListener("click", () => send({ type: "rematch" }));
$("[data-action=study-game]").addEventListener("click", () => send({ type: "study_game" }));
for (const which of ["invite", "watch"]) {
  $(`[data-action=copy-${which}]`).addEventListener("click", () => {
    const input = $(`[data-testid=${which}-link]`);
    input.select();
    if (navigator.clipboard) navigator.clipboard.writeText(input.value).catch(() => {});
    $("[data-testid=announce]").textContent = t("share.copied");
  });
}

// -- watch -----------------------------------------------------------------------------------------
function speedMs() {
  return Number($("input[name=speed]").value);
}
$("#watch-form").addEventListener("submit", (event) => {
  event.preventDefault();
  send({ type: "watch", order: $("input[name=watch-order]").value, chaos: $("input[name=watch-chaos]").value, delay_ms: speedMs() });
});
function showSpeed() {
  $("output[name=speed-shown]").textContent = `${number(speedMs() / 1000, 1)} s`;
}
$("input[name=speed]").addEventListener("input", () => {
  showSpeed();
  if (ui.views.watch) send({ type: "speed", delay_ms: speedMs() });
});
function togglePause() {
  const view = ui.views.watch;
  send({ type: view && view.running ? "pause" : "resume" });
}
$("[data-action=watch-pause]").addEventListener("click", togglePause);
$("[data-action=watch-step]").addEventListener("click", () => send({ type: "step" }));

// -- study -----------------------------------------------------------------------------------------
function studyView() {
  const { games, game, ply, file } = ui.study;
  if (game < 0) return { ...emptyView(), status: t("study.choose") };
  const record = games[game];
  const facts = record.positions[ply];
  const last = ply > 0 ? record.actions[ply - 1] >> 1 : null;
  let text = t("study.position", { file, index: record.index, order: record.order || "?", chaos: record.chaos || "?", ply, length: record.length });
  if (ply > 0) text += t("study.played", { side: side(ply % 2 ? "order" : "chaos"), move: record.moves[ply - 1] });
  const analysis = ui.study.analysis;
  const strategy = ply > 0 && analysis && analysis.strategy ? analysis.strategy[ply - 1] : null;
  if (strategy) text += t(strategy === "keeps" ? "study.strategy_note_keeps" : "study.strategy_note_leaves");
  if (analysis && analysis.verdicts[ply]) text += t("study.verdict", { side: side(analysis.verdicts[ply]) });
  if (ply === record.length) text += t("study.won", { side: side(record.winner) });
  return { ...facts, last, status: text, winner: ply === record.length ? record.winner : null };
}

function renderStudy() {
  const { games, game, ply, analysis } = ui.study;
  const record = games[game];
  const range = $("input[name=ply]");
  range.max = record ? String(record.length) : "0";
  range.value = String(ply);
  let note = "";
  if (record && !analysis) note = t("study.analysing");
  else if (record) {
    const proven = analysis.verdicts.filter((v) => v !== null).length;
    note = t("study.proved", { proven, total: analysis.verdicts.length }) + " " + t(analysis.network ? "study.curve" : "study.no_network");
  }
  $("[data-testid=analysis]").textContent = note;
  const moves = record ? record.moves.map((move, i) => ({ side: i % 2 ? "chaos" : "order", move })) : [];
  renderMoves("[data-testid=study-moves]", moves, ply, analysis ? analysis.marks : [], analysis ? analysis.strategy || [] : []);
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
    svg("text", { x: left, y: H - 4 }, t("study.ply_n", { ply: 0 })),
    svg("text", { x: W - right - 34, y: H - 4 }, t("study.ply_n", { ply: record ? record.length : 0 })),
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
  else showError("study", { code: "no_file_chosen", message: "no file chosen" });
});
$("input[name=upload]").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (!file) return;
  if (file.size > ui.limits.max_upload_bytes) {
    showError("study", { code: "too_large", message: `${file.name} is too large` });
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

// -- modes, language and keys ----------------------------------------------------------------------
function setMode(mode) {
  ui.mode = mode;
  if (mode in extraModes && extraModes[mode].enter) extraModes[mode].enter();
  for (const button of $$("[data-mode]")) button.setAttribute("aria-pressed", String(button.dataset.mode === mode));
  for (const panel of $$("[data-panel]")) panel.hidden = !panel.dataset.panel.split(" ").includes(mode);
  $("[data-testid=announce]").textContent = "";
  render();
}
for (const button of $$("[data-mode]")) button.addEventListener("click", () => setMode(button.dataset.mode));
$("select[name=language]").addEventListener("change", (event) => {
  localStorage.setItem(LANGUAGE_KEY, event.target.value);
  setLanguage(event.target.value);
});

document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (target instanceof HTMLInputElement || target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement) return;
  if (target instanceof HTMLButtonElement && (event.key === " " || event.key === "Enter")) return;
  const key = event.key.toLowerCase();
  const extra = extraModes[ui.mode];
  if (extra && extra.key && extra.key(key)) {
    // handled by the mode's own keys
  } else if (ui.mode === "play" || extra) {
    if (key === "x" || key === "o") chooseSymbol(key.toUpperCase());
    else if (COLUMNS.includes(key) && key.length === 1) ui.pendingColumn = key;
    else if ("123456".includes(key) && key.length === 1 && ui.pendingColumn) {
      const cell = (Number(key) - 1) * SIZE + COLUMNS.indexOf(ui.pendingColumn);
      ui.pendingColumn = null;
      if (extra) extra.click(cell);
      else clickCell(cell);
    } else if (ui.mode !== "play") return;
    else if (key === "u") send({ type: "undo" });
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
// Connect once the words are loaded and every script of the page has run: a script after this
// one (player.js, start.js) wraps the handlers, and a hello it missed is never said again.
const scriptsRun = new Promise((resolve) => document.addEventListener("DOMContentLoaded", resolve));
Promise.all([setLanguage(localStorage.getItem(LANGUAGE_KEY) || document.documentElement.lang || "en"), scriptsRun])
  .then(connect);
