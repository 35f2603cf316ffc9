/* The sleuth search page: fills the pipeline selector from /pipelines (each pipeline's status beside its name, the
   list refreshed while some are still building), searches through /search with extras (a k above the chosen
   pipeline's depth, where that is below the service's max k, is lowered to it, and the status says so), and renders
   hits with the query's words highlighted, evidence paths hop by hop, and the obfuscated queries a private search
   sent. Server text only ever reaches the page through textContent, never parsed as HTML. */
"use strict";

const STOPWORDS = new Set(("a an and are as at be by for from has have in is it its of on or that the this to was " +
  "were which with what who whom whose when where why how do does did not no s t").split(" "));
const WORD = /[\p{L}\p{N}]+/gu;
const SNIPPET_CHARS = 360;
/* Extras not shown as chips, those holding an evidence path, and those the server lifts out of the hits into the
   response (the same for every hit of a query, e.g. the queries a private search sent): declared by GET /extras. */
let hiddenExtras = new Set();
let pathExtras = [];
let perQueryExtras = [];
let hopScoreExtras = [];
let perQueryCountExtras = [];

/** The query's content words, longest first (stopwords dropped unless nothing is left). */
function queryTerms(query) {
  const words = [...new Set((query.toLowerCase().match(WORD) || []))];
  const content = words.filter((w) => !STOPWORDS.has(w));
  return (content.length ? content : words).sort((a, b) => b.length - a.length);
}

/** A regex matching the terms as words; terms of 4+ letters also match their longer forms (vitamin: vitamins). */
function termPattern(terms) {
  if (!terms.length) return null;
  const escape = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const parts = terms.map((t) => (t.length >= 4 ? `${escape(t)}[\\p{L}\\p{N}]*` : `${escape(t)}(?![\\p{L}\\p{N}])`));
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${parts.join("|")})`, "giu");
}

/** Append ``text`` to ``parent`` as text nodes, with every match of ``pattern`` wrapped in a <mark>. */
function appendHighlighted(parent, text, pattern) {
  if (!pattern) {
    parent.append(text);
    return;
  }
  let last = 0;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    if (match.index > last) parent.append(text.slice(last, match.index));
    parent.append(el("mark", null, match[0]));
    last = match.index + match[0].length;
  }
  if (last < text.length) parent.append(text.slice(last));
}

/** The part of ``text`` that matches the query best: the sentence with the most distinct query words, grown with
    its neighbours up to SNIPPET_CHARS characters; ``cut`` tells whether text was left out. */
function snippet(text, pattern) {
  if (text.length <= SNIPPET_CHARS) return { text, cut: false };
  const sentences = text.match(/[^.!?]+(?:[.!?]+|$)\s*/g) || [text];
  const score = (s) => (pattern ? new Set((s.match(pattern) || []).map((m) => m.toLowerCase())).size : 0);
  let best = 0;
  sentences.forEach((s, i) => { if (score(s) > score(sentences[best])) best = i; });
  let start = best, end = best + 1, length = sentences[best].length;
  for (;;) {
    if (end < sentences.length && length + sentences[end].length <= SNIPPET_CHARS) length += sentences[end++].length;
    else if (start > 0 && length + sentences[start - 1].length <= SNIPPET_CHARS) length += sentences[--start].length;
    else break;
  }
  let chosen = sentences.slice(start, end).join("").trim();
  const clipped = chosen.length > SNIPPET_CHARS;
  if (clipped) chosen = chosen.slice(0, SNIPPET_CHARS).replace(/\s+\S*$/, "");
  const before = start > 0 ? "\u2026 " : "";
  const after = clipped || end < sentences.length ? " \u2026" : "";
  return { text: before + chosen + after, cut: true };
}

/** A passage paragraph: the best snippet highlighted, with a button that shows the whole passage. */
function passage(text, pattern) {
  const box = el("div", "passage");
  const para = el("p", "passage-text");
  const part = snippet(text, pattern);
  appendHighlighted(para, part.text, pattern);
  box.append(para);
  if (part.cut) {
    const toggle = el("button", "more", "Show the whole passage");
    toggle.type = "button";
    let full = false;
    toggle.addEventListener("click", () => {
      full = !full;
      para.replaceChildren();
      appendHighlighted(para, full ? text : part.text, pattern);
      toggle.textContent = full ? "Show less" : "Show the whole passage";
    });
    box.append(toggle);
  }
  return box;
}

function formatScore(value) {
  if (typeof value !== "number" || !isFinite(value)) return String(value);
  return Math.abs(value) >= 1000 ? value.toFixed(0) : value.toFixed(3);
}

/** Small "name value" chips for a hit's numeric extras (component scores, DHR document rank ...). */
/** Chips of the number and text extras; ``shown``: keys shown here although hidden at the hit level (a hop's
   skill scores). */
function extrasChips(extras, shown = []) {
  const chips = el("ul", "chips");
  for (const [key, value] of Object.entries(extras || {})) {
    if ((hiddenExtras.has(key) && !shown.includes(key)) || (typeof value !== "number" && typeof value !== "string")) {
      continue;
    }
    const chip = el("li", "chip");
    chip.append(el("span", "chip-name", key.replace(/_/g, " ")), el("span", "chip-value",
      typeof value === "number" ? formatScore(value) : value));
    chips.append(chip);
  }
  return chips.childElementCount ? chips : null;
}

/** An evidence path drawn as hop boxes joined by arrows, each with its title, score, skill scores and passage. */
function evidencePath(hops, pattern) {
  const path = el("div", "path");
  path.setAttribute("aria-label", `evidence path of ${hops.length} hops`);
  hops.forEach((hop, i) => {
    if (i > 0) path.append(el("div", "arrow", "\u2192"));
    const box = el("div", "hop");
    const head = el("div", "hop-head");
    head.append(el("span", "hop-label", `hop ${i + 1}`), el("span", "score hop-score", formatScore(hop.score)));
    const title = el("h4", "hop-title");
    appendHighlighted(title, hop.title || hop.id, pattern);
    box.append(head, title);
    const chips = extrasChips(hop.extras, hopScoreExtras);
    if (chips) box.append(chips);
    if (hop.text) box.append(passage(hop.text, pattern));
    path.append(box);
  });
  return path;
}

function renderHit(hit, pattern, sentCount) {
  const item = el("li", "hit");
  item.dataset.id = hit.id;
  const head = el("div", "hit-head");
  const title = el("h3", "title");
  appendHighlighted(title, hit.title || hit.id, pattern);
  head.append(el("span", "rank", hit.rank), title, el("span", "score", formatScore(hit.score)));
  item.append(head);
  const meta = el("p", "meta", hit.doc_id && hit.doc_id !== hit.id ? `${hit.id} \u00b7 document ${hit.doc_id}` : hit.id);
  const extras = hit.extras || {};
  for (const key of perQueryCountExtras) {  /* e.g. "found by 3 of 20 sent queries" */
    if (typeof extras[key] === "number" && sentCount) {
      meta.append(` \u00b7 ${key.replace(/_/g, " ")} ${extras[key]} of ${sentCount} sent queries`);
    }
  }
  item.append(meta);
  const chips = extrasChips(extras);
  if (chips) item.append(chips);
  const hops = pathExtras.map((key) => extras[key]).find((value) => Array.isArray(value) && value.length);
  if (hops) item.append(evidencePath(hops, pattern));
  else if (hit.text) item.append(passage(hit.text, pattern));
  return item;
}

function showError(message) {
  const line = $("error");
  line.textContent = message;
  line.hidden = !message;
}

function renderSent(sent) {
  const list = $("sent-list");
  list.replaceChildren(...(sent || []).map((text) => el("li", "sent-query", text)));
  $("sent").hidden = !sent;
}

let pipelines = [];
let maxChars = 5000; // what the page shows of a passage; no more than the service's --max-text-chars
let maxK = Infinity; // the service's --max-k

const REFRESH_MS = 10000;

/** "building: encoding 40%" for a pipeline not ready yet, "" for a ready one (older servers give no status). */
function notReady(p) {
  return p.status && p.status !== "ready" ? p.status : "";
}

function describePipeline() {
  const chosen = pipelines.find((p) => p.name === $("pipeline").value);
  const status = chosen ? notReady(chosen) : "";
  $("pipeline-description").textContent = chosen ? (status ? `${chosen.description} (${status})` : chosen.description) : "";
}

async function loadExtras() {
  try {
    const response = await fetch("/extras", { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const body = await response.json();
    hiddenExtras = new Set(body.hidden);
    pathExtras = body.extras.filter((key) => key.display === "evidence_path").map((key) => key.name);
    perQueryExtras = body.extras.filter((key) => key.display === "per_query").map((key) => key.name);
    hopScoreExtras = body.extras.filter((key) => key.display === "hop_score").map((key) => key.name);
    perQueryCountExtras = body.extras.filter((key) => key.display === "count_of_per_query").map((key) => key.name);
  } catch (error) {
    /* without the list every number or text extra is shown */
  }
}

async function loadPipelines() {
  try {
    const response = await fetch("/pipelines", { headers: { Accept: "application/json" } });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
    const first = pipelines.length === 0;
    pipelines = body.pipelines;
    const select = $("pipeline");
    const chosen = select.value;
    select.replaceChildren(...pipelines.map((p) => {
      const option = el("option", null, notReady(p) ? `${p.name} (${notReady(p)})` : p.name);
      option.value = p.name;
      option.title = p.description;
      return option;
    }));
    select.value = first || !pipelines.some((p) => p.name === chosen) ? body.default : chosen;
    $("k").max = body.max_k;
    maxK = body.max_k;
    if (body.max_text_chars) maxChars = Math.min(5000, body.max_text_chars);
    describePipeline();
    if (pipelines.some((p) => notReady(p) && !p.status.startsWith("failed"))) setTimeout(loadPipelines, REFRESH_MS);
  } catch (error) {
    showError(`Could not list the pipelines: ${error.message}`);
  }
}

let searching = 0;

async function search(event) {
  if (event) event.preventDefault();
  const query = $("query").value;
  const pipeline = $("pipeline").value;
  let k = Number.parseInt($("k").value, 10);
  const chosen = pipelines.find((p) => p.name === pipeline);
  const asked = k;
  if (chosen && chosen.depth && chosen.depth < maxK && k > chosen.depth) {
    // the service refuses a k above the pipeline's depth; the page asks for what it gives (a k above the
    // service's own --max-k still gets the service's error)
    k = chosen.depth;
    $("k").value = String(k);
  }
  const ticket = ++searching;
  showError("");
  $("status").textContent = "Searching\u2026";
  $("results").setAttribute("aria-busy", "true");
  const started = performance.now();
  let response, body;
  try {
    response = await fetch("/search", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ query, pipeline: pipeline || undefined, k: Number.isNaN(k) ? undefined : k, extras: true, max_chars: maxChars }),
    });
    body = await response.json().catch(() => ({}));
  } catch (error) {
    body = { error: `the service did not answer (${error.message})` };
  }
  if (ticket !== searching) return; // a newer search is on its way
  $("results").removeAttribute("aria-busy");
  if (!response || !response.ok) {
    $("status").textContent = "";
    $("results").replaceChildren();
    renderSent(null);
    showError(`Error${response ? ` ${response.status}` : ""}: ${body.error || "the request failed"}`);
    return;
  }
  const pattern = termPattern(queryTerms(body.query));
  const sent = perQueryExtras.map((key) => body[key]).find((value) => Array.isArray(value)) || null;
  renderSent(sent);
  $("results").replaceChildren(...body.hits.map((hit) => renderHit(hit, pattern, sent ? sent.length : 0)));
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  $("status").textContent = body.hits.length
    ? `${body.hits.length} result${body.hits.length === 1 ? "" : "s"} from ${body.pipeline} in ${seconds} s`
    : `No results from ${body.pipeline}.`;
  if (asked > k) $("status").textContent += ` (${asked} asked; ${body.pipeline} gives at most ${k} a query)`;
  const params = new URLSearchParams({ q: query, pipeline: body.pipeline, k: String(k) });
  history.replaceState(null, "", `?${params}`);
}

async function start() {
  $("search-form").addEventListener("submit", search);
  $("pipeline").addEventListener("change", describePipeline);
  await Promise.all([loadPipelines(), loadExtras()]);
  const params = new URLSearchParams(location.search);
  if (params.get("pipeline") && pipelines.some((p) => p.name === params.get("pipeline"))) {
    $("pipeline").value = params.get("pipeline");
    describePipeline();
  }
  if (params.get("k")) $("k").value = params.get("k");
  if (params.get("q")) {
    $("query").value = params.get("q");
    search();
  }
  document.body.dataset.ready = "true";
}

start();
