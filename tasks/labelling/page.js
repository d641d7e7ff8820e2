// The annotation page (tasks/labelling/server.py serves it). Every text from items, answers, names and notes is
// set with textContent, never as markup; the one exception is the planted edit, which the server builds with
// every text escaped (tasks/report/samples.py: marked_edit) and only <del>/<ins> added.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { annotator: "", items: [], answers: {}, classes: [], at: 0, shownAt: 0, adjudicate: false };

// the session's token, from the address the console printed: every API call carries it (the server refuses the rest)
const TOKEN = new URLSearchParams(location.search).get("token") || "";

function api(path, options = {}) {
  return fetch(path, { ...options, headers: { ...(options.headers || {}), "X-Judgeops-Token": TOKEN } });
}

function text(el, value) { el.textContent = value == null ? "" : String(value); }

function status(message, error) {
  text($("status"), message);
  $("status").className = error ? "error" : "";
}

async function load() {
  const r = await api("api/audit?annotator=" + encodeURIComponent(state.annotator));
  const body = await r.json();
  if (!r.ok) { status(body.error, true); return; }
  Object.assign(state, { items: body.items, answers: body.answers, classes: body.classes, adjudicate: body.adjudicate });
  text($("mode"), body.adjudicate ? "adjudicating the conflicts" : "");
  text($("who"), "reviewer: " + state.annotator);
  if (body.log_problems.length) status(body.log_problems.length + " line(s) of the log left out (see the server)", true);
  $("login").classList.add("hidden");
  const next = state.items.findIndex((item) => !(item.task in state.answers));
  show(next < 0 ? state.items.length : next);
}

function progress() {
  const done = state.items.filter((item) => item.task in state.answers).length;
  text($("progress"), done + " of " + state.items.length);
  return done;
}

function show(at) {
  state.at = Math.max(0, Math.min(at, state.items.length));
  progress();
  $("reveal-box").classList.add("hidden");
  if (state.at >= state.items.length) {
    $("work").classList.add("hidden");
    $("done").classList.remove("hidden");
    text($("done-text"), "All " + state.items.length + " items answered. ← goes back to change an answer.");
    return;
  }
  $("done").classList.add("hidden");
  $("work").classList.remove("hidden");
  const item = state.items[state.at];
  text($("task-id"), "task " + item.task + " (" + (state.at + 1) + " of " + state.items.length + ")");
  text($("question"), item.question == null ? "(no question text in the audit)" : item.question);
  const pair = $("pair");
  pair.replaceChildren();
  item.choices.forEach((choice, i) => {
    const box = document.createElement("div");
    box.className = "choice";
    box.id = "choice-" + i;
    const head = document.createElement("h2");
    text(head, "[" + (i + 1) + "] " + (choice.text == null ? choice.label : "answer " + (i + 1)));
    const body = document.createElement("div");
    body.className = "text";
    text(body, choice.text);
    box.append(head, body);
    box.addEventListener("click", () => answer(choice.label));
    pair.append(box);
  });
  const people = $("people");
  people.replaceChildren();
  $("people-box").classList.toggle("hidden", !item.people);
  (item.people || []).forEach(([who, label, note]) => people.append(row([who, named(item, label), note || ""])));
  const keys = $("keys");
  keys.replaceChildren();
  const hint = item.choices.map((c, i) => "[" + (i + 1) + "]").join(" ");
  text(keys, hint + " choose · [t] tie · [s] skip · [←] [→] move · [v] judges (after answering)");
  $("note").value = "";
  mark();
  state.shownAt = performance.now();
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) { const td = document.createElement("td"); text(td, cell); tr.append(td); }
  return tr;
}

// a class as this reviewer saw it: "answer 2" where the candidates have texts, the class name where not
function named(item, label) {
  const i = item.choices.findIndex((choice) => choice.label === label);
  return i < 0 || item.choices[i].text == null ? label : "answer " + (i + 1);
}

function mark() {
  const item = state.items[state.at];
  const given = state.answers[item.task];
  item.choices.forEach((choice, i) => $("choice-" + i).classList.toggle("chosen", choice.label === given));
  text($("answered"), given === undefined ? "" : "your answer: " + named(item, given) + " (saved)");
}

async function answer(label) {
  const item = state.items[state.at];
  if (!item) return;
  const seconds = (performance.now() - state.shownAt) / 1000;
  status("saving…");
  const r = await api("api/label", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ task: item.task, label, annotator: state.annotator, seconds, note: $("note").value || null }),
  });
  const body = await r.json();
  if (!r.ok) { status("not saved: " + body.error, true); return; }
  state.answers[item.task] = label;
  status("saved " + body.done + " of " + body.total);
  show(state.at + 1);
}

async function reveal() {
  const item = state.items[state.at];
  if (!item || !(item.task in state.answers)) { status("answer first: the judges stay hidden until then", true); return; }
  const box = $("reveal-box");
  if (!box.classList.contains("hidden")) { box.classList.add("hidden"); return; }
  const r = await api("api/reveal?task=" + encodeURIComponent(item.task) + "&annotator=" + encodeURIComponent(state.annotator));
  const body = await r.json();
  if (!r.ok) { status(body.error, true); return; }
  const table = $("verdicts");
  table.replaceChildren(row(["judge", "run", "verdict"]));
  body.verdicts.forEach(([judge, run, label]) => table.append(row([judge, run, named(item, label)])));
  $("edit-box").classList.toggle("hidden", !body.edit);
  if (body.edit) {  // escaped by the server; only <del> and <ins> are markup
    $("edit-correct").innerHTML = body.edit.correct_html;
    $("edit-flawed").innerHTML = body.edit.flawed_html;
  }
  box.classList.remove("hidden");
}

document.addEventListener("keydown", (event) => {
  if (!state.annotator) return;
  const typing = event.target instanceof HTMLTextAreaElement || event.target instanceof HTMLInputElement;
  if (typing) { if (event.key === "Escape") event.target.blur(); return; }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const item = state.items[state.at];
  const n = Number(event.key);
  if (item && Number.isInteger(n) && n >= 1 && n <= item.choices.length) answer(item.choices[n - 1].label);
  else if (item && event.key === "t") answer("tie");
  else if (item && event.key === "s") answer("skip");
  else if (event.key === "ArrowLeft") show(state.at - 1);
  else if (event.key === "ArrowRight") show(state.at + 1);
  else if (event.key === "v") reveal();
  else return;
  event.preventDefault();
});

function start(name) {
  state.annotator = name.trim();
  if (!state.annotator) { status("your name, please", true); return; }
  $("name").blur();
  localStorage.setItem("judgeops-annotator", state.annotator);
  history.replaceState(null, "", "?token=" + encodeURIComponent(TOKEN) + "&annotator=" + encodeURIComponent(state.annotator));
  load();
}

$("start").addEventListener("click", () => start($("name").value));
$("name").addEventListener("keydown", (event) => { if (event.key === "Enter") start($("name").value); });
const given = new URLSearchParams(location.search).get("annotator");
if (given) start(given);
else { $("name").value = localStorage.getItem("judgeops-annotator") || ""; $("name").focus(); }
