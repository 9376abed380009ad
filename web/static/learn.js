// The Learn tab: the lesson "how Order always wins", one idea a step, each with a board to
// try it on. The server sends the steps and judges every move (GET /api/learn, POST
// /api/learn/move): whether it keeps the win the strategy proves, and Chaos's reply. This
// script draws them on the page's board, in the reader's language, and keeps the learner's
// progress in the browser. It knows no rules. Loaded after app.js, whose helpers it uses.
"use strict";

const LEARN_KEY = "orderchaos.learn";

const learn = {
  outline: null,     // the server's steps and pairs
  loading: false,
  step: 0,           // index into outline.steps
  moves: [],         // the exercise's actions since the step's board, both sides
  facts: null,       // the board after them (board facts from the server)
  log: [],           // per Order move: { played, verdict, reply }
  feedback: [],      // what the last answer said: [{ key, args }]
  quiz: 0,           // the pairs quiz: how many partners found
  guessed: null,     // the pairs quiz: the cells of the last guess
  waiting: false,
  done: new Set(),
  error: null,
};

function loadProgress() {
  try {
    const saved = JSON.parse(localStorage.getItem(LEARN_KEY) || "{}");
    learn.done = new Set(Array.isArray(saved.done) ? saved.done : []);
    return typeof saved.step === "string" ? saved.step : null;
  } catch (error) {
    return null;
  }
}

function saveProgress() {
  const step = learn.outline ? learn.outline.steps[learn.step].id : null;
  localStorage.setItem(LEARN_KEY, JSON.stringify({ done: [...learn.done], step }));
}

function currentStep() {
  return learn.outline ? learn.outline.steps[learn.step] : null;
}

function cellIndex(name) {
  return COLUMNS.indexOf(name[0]) + SIZE * (Number(name.slice(1)) - 1);
}

async function loadOutline() {
  if (learn.outline || learn.loading) return;
  learn.loading = true;
  try {
    const answer = await fetch("/api/learn");
    if (!answer.ok) throw new Error(`status ${answer.status}`);
    learn.outline = await answer.json();
    const saved = loadProgress();
    const index = learn.outline.steps.findIndex((s) => s.id === saved);
    openStep(index >= 0 ? index : 0);
  } catch (error) {
    learn.error = { code: "offline" };
  } finally {
    learn.loading = false;
  }
  render();
}

function openStep(index) {
  learn.step = index;
  learn.moves = [];
  learn.facts = null;
  learn.log = [];
  learn.feedback = [];
  learn.quiz = 0;
  learn.guessed = null;
  learn.error = null;
  saveProgress();
  render();
}

function finishStep(key) {
  learn.done.add(currentStep().id);
  learn.feedback.push({ key });
  saveProgress();
}

// -- the board ---------------------------------------------------------------------------------
function learnView() {
  const step = currentStep();
  if (!step) return emptyView();
  const facts = learn.facts || step;
  let hinted = [];
  if (step.goal === "pairs") {
    const question = step.quiz[learn.quiz];
    hinted = question ? [cellIndex(question.cell)] : [];
    if (learn.guessed) hinted = hinted.concat(learn.guessed);
  } else if (!learn.moves.length) hinted = step.marked.map(cellIndex);
  else {
    const last = learn.log[learn.log.length - 1];
    if (last && last.verdict.mark === "leaves") hinted = [cellIndex(last.verdict.strategy_move.split(" ")[0])];
  }
  const last = learn.moves.length ? learn.moves[learn.moves.length - 1] >> 1 : null;
  const board = step.goal === "pairs" ? pairLetters(step) : facts.board;
  return { ...facts, board, last, hinted, moves: [] };
}

// The pairs quiz's board: each pair found so far (every pair once the quiz is done) shows
// its letter on both of its cells.
function pairLetters(step) {
  const board = Array(CELLS).fill("");
  const found = new Set(step.quiz.slice(0, learn.quiz).map((q) => q.cell));
  for (const pair of learn.outline.pairs) {
    if (learn.quiz < step.quiz.length && !pair.cells.some((c) => found.has(c))) continue;
    for (const cell of pair.cells) board[cellIndex(cell)] = pair.letter;
  }
  return board;
}

function learnStatus() {
  const step = currentStep();
  if (learn.error) return t("status.error", { message: errorText(learn.error) });
  if (!step) return t("learn.loading");
  if (learn.waiting) return t("learn.thinking");
  const view = learn.facts || step;
  if (view.winner === "order") return t("learn.won");
  if (view.winner === "chaos") return t("learn.lost");
  if (learn.done.has(step.id) && learn.feedback.length) return t("learn.step_done");
  if (step.goal === "pairs") return t("learn.pairs_turn");
  return t("learn.your_move", { side: side("order") });
}

async function learnClick(cell) {
  const step = currentStep();
  if (!step || learn.waiting) return;
  if (step.goal === "pairs") {
    pairGuess(step, cell);
    return;
  }
  const view = learn.facts || step;
  if (view.winner || (step.goal === "keep" && learn.done.has(step.id) && learn.log.length)) return;
  learn.waiting = true;
  learn.error = null;
  render();
  try {
    const answer = await fetch("/api/learn/move", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ step: step.id, moves: learn.moves, action: 2 * cell + (ui.symbol === "O" ? 1 : 0) }),
    });
    const reply = await answer.json();
    if (!answer.ok) learn.error = reply;
    else if (currentStep() === step) accept(reply);
  } catch (error) {
    learn.error = { code: "offline" };
  } finally {
    learn.waiting = false;
  }
  render();
}

function accept(reply) {
  learn.moves = reply.moves;
  learn.facts = reply;
  learn.log.push({ played: reply.played, verdict: reply.verdict, reply: reply.reply_name });
  learn.feedback = [];
  if (reply.done) finishStep(currentStep().goal === "keep" ? "learn.keep_done" : "learn.five_done");
  else if (reply.verdict.mark === "leaves" && currentStep().goal === "keep") learn.feedback.push({ key: "learn.try_again" });
}

function pairGuess(step, cell) {
  const question = step.quiz[learn.quiz];
  if (!question) return;
  const name = cellName(cell);
  if (name === question.partner) {
    learn.quiz += 1;
    learn.guessed = [cellIndex(question.cell), cell];
    learn.feedback = [{ key: "learn.pairs_right", args: { cell: question.cell, partner: name } }];
    if (learn.quiz === step.quiz.length) finishStep("learn.pairs_done");
  } else {
    learn.guessed = null;
    learn.feedback = [{ key: "learn.pairs_wrong", args: { cell: name, asked: question.cell } }];
  }
  render();
}

// -- the panel ---------------------------------------------------------------------------------
function verdictText(entry) {
  const { mark, strategy_move: better } = entry.verdict;
  if (mark === "keeps") return t("learn.keeps", { move: entry.played });
  if (mark === "leaves") return t("learn.leaves", { move: entry.played, better });
  return t("learn.outside", { move: entry.played });
}

function renderSteps() {
  const list = $("[data-testid=learn-steps]");
  const steps = learn.outline ? learn.outline.steps : [];
  list.replaceChildren(...steps.map((step, i) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.step = step.id;
    button.textContent = t(`learn.${step.id}_title`);
    if (i === learn.step) button.setAttribute("aria-current", "step");
    if (learn.done.has(step.id)) {
      button.classList.add("done");
      const mark = document.createElement("span");
      mark.className = "keeps";
      mark.textContent = " ✓";
      const words = document.createElement("span");
      words.className = "visually-hidden";
      words.textContent = ` (${t("learn.step_done_short")})`;
      button.append(mark, words);
    }
    button.addEventListener("click", () => openStep(i));
    item.append(button);
    return item;
  }));
  $("[data-testid=learn-progress]").textContent = learn.outline
    ? t("learn.progress", { done: steps.filter((s) => learn.done.has(s.id)).length, total: steps.length }) : "";
}

function renderLearn() {
  renderSteps();
  const step = currentStep();
  $("[data-testid=learn-step-title]").textContent = step
    ? t("learn.step_heading", { number: learn.step + 1, title: t(`learn.${step.id}_title`) }) : "";
  const text = $("[data-testid=learn-step-text]");
  text.replaceChildren(...(step ? t(`learn.${step.id}_text`).split("\n") : []).map((line) => {
    const paragraph = document.createElement("p");
    paragraph.textContent = line;
    return paragraph;
  }));
  let task = step ? t(`learn.${step.id}_task`) : "";
  if (step && step.goal === "pairs" && step.quiz[learn.quiz]) task += " " + t("learn.pairs_ask", { cell: step.quiz[learn.quiz].cell });
  $("[data-testid=learn-task]").textContent = task;
  const pairs = $("[data-testid=learn-pairs]");
  pairs.hidden = !step || step.goal !== "pairs" || learn.quiz < step.quiz.length;
  if (learn.outline) {
    pairs.replaceChildren(...learn.outline.pairs.map((pair) => {
      const item = document.createElement("li");
      item.textContent = t("learn.pair_item", { letter: pair.letter, first: pair.cells[0], second: pair.cells[1] });
      return item;
    }));
  }
  const parts = [];
  const last = learn.log[learn.log.length - 1];
  if (last) {
    parts.push(verdictText(last));
    if (last.reply) parts.push(t("learn.reply", { side: side("chaos"), move: last.reply }));
  }
  for (const said of learn.feedback) parts.push(t(said.key, said.args || {}));
  const feedback = $("[data-testid=learn-feedback]");
  feedback.textContent = parts.join(" ");
  feedback.className = `learn-feedback ${last ? last.verdict.mark || "unknown" : ""}`;
  // the moves are numbered from the step's board, not from 1
  $("[data-testid=learn-moves]").start = step ? step.board.filter(Boolean).length + 1 : 1;
  $("[data-testid=learn-moves]").replaceChildren(...learn.log.flatMap((entry) => {
    const item = document.createElement("li");
    item.textContent = t("moves.item", { side: side("order"), move: entry.played });
    const mark = document.createElement("span");
    const kind = entry.verdict.mark === "keeps" ? "keeps" : entry.verdict.mark === "leaves" ? "throws" : "unknown";
    mark.className = kind;
    mark.textContent = kind === "keeps" ? " ✓" : kind === "throws" ? " ✗" : " ·";
    mark.title = t(entry.verdict.mark === "keeps" ? "learn.mark_keeps" : entry.verdict.mark === "leaves" ? "learn.mark_leaves" : "learn.mark_outside");
    const words = document.createElement("span");
    words.className = "visually-hidden";
    words.textContent = ` ${mark.title}`;
    item.append(mark, words);
    const items = [item];
    if (entry.reply) {
      const answer = document.createElement("li");
      answer.textContent = t("moves.item", { side: side("chaos"), move: entry.reply });
      items.push(answer);
    }
    return items;
  }));
  const next = $("[data-action=learn-next]");
  next.disabled = !learn.outline || learn.step + 1 >= learn.outline.steps.length;
  next.classList.toggle("ready", Boolean(step && learn.done.has(step.id)));
}

$("[data-action=learn-restart]").addEventListener("click", () => openStep(learn.step));
$("[data-action=learn-next]").addEventListener("click", () => {
  if (learn.outline && learn.step + 1 < learn.outline.steps.length) openStep(learn.step + 1);
});
$("[data-mode=learn]").addEventListener("click", loadOutline);

extraModes.learn = {
  view: learnView,
  status: () => [learnStatus(), learnView().winner ? "over" : ""],
  click: learnClick,
  render: renderLearn,
};
