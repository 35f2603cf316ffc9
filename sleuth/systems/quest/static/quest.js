/* The QUEST page: lists the served QUEST pipelines (/quest/pipelines), posts the query to /quest/predict and shows
   the parsed template and constraints and the predicted set, each member with its classifier score (and one score
   per constraint for a set-operation pipeline, plus the whole query's when it is anchored). Server text only reaches the page through textContent. */
"use strict";

function scoreCell(score) {
  const cell = el("td", "score");
  const bar = el("span", "bar");
  bar.style.width = `${Math.round(Math.max(0, Math.min(1, score)) * 60)}px`;
  cell.append(bar, score.toFixed(3));
  return cell;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function render(result) {
  $("template").textContent = `${result.symbol}: ${result.template}`;
  const list = $("constraints");
  list.replaceChildren(...result.constraints.map((c) => {
    const item = el("li", c.negated ? "negated" : "", (c.negated ? "not: " : "") + c.text);
    return item;
  }));
  $("parse").hidden = false;
  const perConstraint = result.members.some((m) => m.constraint_scores);
  const whole = result.members.some((m) => m.whole_score !== undefined);
  const head = ["#", "member", "score"].concat(whole ? ["whole query"] : [], perConstraint ? result.constraints.map((c, i) =>
    `${String.fromCharCode(65 + i)}${c.negated ? " (not)" : ""}`) : []);
  $("members-head").replaceChildren(...head.map((h) => el("th", "", h)));
  $("members-body").replaceChildren(...result.members.map((m) => {
    const row = el("tr");
    const who = el("td");
    who.append(el("div", "title", m.title || m.id), el("div", "doc", (m.text || "").slice(0, 240)));
    row.append(el("td", "", m.rank), who, scoreCell(m.score));
    if (whole) row.append(scoreCell(m.whole_score ?? 0));
    for (const s of perConstraint ? (m.constraint_scores || []) : []) row.append(scoreCell(s));
    return row;
  }));
  $("members").hidden = false;
  $("status").textContent = `${result.members.length} members predicted by ${result.pipeline}`;
}

async function predict(event) {
  event.preventDefault();
  showError("");
  const query = $("query").value.trim();
  if (!query) { showError("Type a query first."); return; }
  $("status").textContent = "Classifying candidates...";
  try {
    const response = await fetch("/quest/predict", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({query, pipeline: $("pipeline").value || null}),
    });
    const body = await response.json();
    if (!response.ok) { showError(body.error || body.detail || `HTTP ${response.status}`); $("status").textContent = ""; return; }
    render(body);
  } catch (error) {
    showError(`The service did not answer: ${error}`);
    $("status").textContent = "";
  }
}

async function start() {
  $("quest-form").addEventListener("submit", predict);
  try {
    const body = await (await fetch("/quest/pipelines")).json();
    $("pipeline").replaceChildren(...body.pipelines.map((name) => {
      const option = el("option", "", name);
      option.value = name;
      return option;
    }));
    if (!body.pipelines.length) showError("No QUEST pipeline is served (serve e.g. quest-bm25-classify).");
  } catch (error) {
    showError(`The service did not answer: ${error}`);
  }
}

start();
