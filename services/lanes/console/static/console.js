// Lanes Console: progressive enhancement of the server-rendered pages. No framework, no assets
// from elsewhere. Streams search results (NDJSON), renders values as text, collapsible JSON or
// hex, keeps saved filters in this browser, tails new records, draws the lag chart, switches
// the theme and adds keyboard shortcuts.
"use strict";


// ---- theme -------------------------------------------------------------------------------------
(function theme() {
  const root = document.documentElement;
  const saved = localStorage.getItem("lanes-theme");
  if (saved) root.dataset.theme = saved;
  document.getElementById("theme")?.addEventListener("click", () => {
    const dark = root.dataset.theme === "dark" || (root.dataset.theme === "auto" && matchMedia("(prefers-color-scheme: dark)").matches);
    root.dataset.theme = dark ? "light" : "dark";
    localStorage.setItem("lanes-theme", root.dataset.theme);
  });
})();

// ---- keyboard: "/" focuses the filter, "g t" topics, "g g" groups, "g c" cluster ------------------
(function keys() {
  let pending = "";
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return;
    if (event.key === "/") { document.getElementById("filter")?.focus(); event.preventDefault(); return; }
    if (pending === "g") {
      const to = { t: "/topics", g: "/groups", c: "/" }[event.key];
      if (to) location.href = to;
      pending = "";
      return;
    }
    pending = event.key === "g" ? "g" : "";
  });
})();

// ---- values --------------------------------------------------------------------------------------
function bytesOf(part) {
  if (part.text === null) return new Uint8Array();
  if (part.encoding === "base64") return Uint8Array.from(atob(part.text), (c) => c.charCodeAt(0));
  return new TextEncoder().encode(part.text);
}

function hexOf(part) {
  return Array.from(bytesOf(part), (b) => b.toString(16).padStart(2, "0")).join(" ");
}

function jsonTree(value, key) {
  const label = key === undefined ? "" : `${JSON.stringify(key)}: `;
  if (value === null || typeof value !== "object") {
    const leaf = document.createElement("div");
    leaf.textContent = label + JSON.stringify(value);
    return leaf;
  }
  const details = document.createElement("details");
  details.open = true;
  const summary = document.createElement("summary");
  const size = Array.isArray(value) ? `[${value.length}]` : `{${Object.keys(value).length}}`;
  summary.textContent = label + size;
  details.append(summary);
  for (const [k, v] of Object.entries(value)) details.append(jsonTree(v, Array.isArray(value) ? Number(k) : k));
  return details;
}

function renderValue(cell, part) {
  cell.replaceChildren();
  if (part.text === null) { cell.textContent = "null"; cell.classList.add("hint"); return; }
  let parsed;
  if (part.encoding === "utf-8") { try { parsed = JSON.parse(part.text); } catch { parsed = undefined; } }
  const body = document.createElement("div");
  const views = document.createElement("span");
  views.className = "views";
  const show = (kind) => {
    body.replaceChildren();
    if (kind === "json") { const tree = jsonTree(parsed); tree.classList?.add("json-tree"); body.className = "json-tree"; body.append(tree); }
    else { const pre = document.createElement("pre"); pre.textContent = kind === "hex" ? hexOf(part) : (part.encoding === "utf-8" ? part.text : `(base64) ${part.text}`); body.className = ""; body.append(pre); }
  };
  for (const kind of [parsed !== undefined && typeof parsed === "object" ? "json" : null, "text", "hex"]) {
    if (!kind) continue;
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = kind;
    button.addEventListener("click", () => show(kind));
    views.append(button);
  }
  cell.append(views, body);
  show(parsed !== undefined && typeof parsed === "object" ? "json" : "text");
}

// ---- the message view ----------------------------------------------------------------------------
function addRecords(table, records, seen) {
  const body = table.tBodies[0];
  const topic = table.dataset.topic;
  for (const record of records) {
    const id = `${record.partition}:${record.offset}`;
    if (seen.has(id)) continue;
    seen.add(id);
    const row = body.insertRow();
    row.dataset.partition = record.partition;
    row.dataset.offset = record.offset;
    const link = `/topics/${encodeURIComponent(topic)}/messages?partition=${record.partition}&from=offset:${record.offset}&limit=1`;
    const cells = [record.partition, null, new Date(record.timestamp).toISOString(), null, null, null, record.key.size + record.value.size];
    cells.forEach((text) => { const cell = row.insertCell(); if (text !== null) cell.textContent = text; });
    const anchor = document.createElement("a");
    anchor.href = link; anchor.textContent = record.offset; anchor.title = "Permalink";
    row.cells[1].append(anchor);
    row.cells[3].className = "key"; row.cells[3].textContent = record.key.text === null ? "null" : (record.key.encoding === "utf-8" ? record.key.text : hexOf(record.key));
    row.cells[4].className = "value"; renderValue(row.cells[4], record.value);
    row.cells[5].textContent = record.headers.map((h) => `${h.name}: ${h.text ?? "null"}`).join("\n");
    row.cells[0].className = row.cells[1].className = row.cells[6].className = "num";
  }
}

async function stream(url, table, seen, progress, stopped) {
  const started = performance.now();
  const response = await fetch(url, { headers: { Accept: "application/x-ndjson" } });
  if (!response.ok) {
    const problem = await response.json().catch(() => ({ error: response.statusText }));
    progress.textContent = problem.error;
    progress.classList.add("problem");
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let first = true;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const message = JSON.parse(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      if (message.records) {
        addRecords(table, message.records, seen);
        if (first) { table.dataset.firstMatchMs = String(Math.round(performance.now() - started)); first = false; }
      }
      const state = message.progress ?? message.done;
      if (state) {
        const positions = Object.entries(state.positions).map(([p, o]) => `${p}@${o}`).join(" ");
        progress.textContent = `${message.done ? "Done" : "Searching"}: ${state.scanned.toLocaleString()} records scanned, ${seen.size.toLocaleString()} shown` + (positions ? ` (positions ${positions})` : "");
        if (message.done) progress.dataset.done = "true";
      }
      if (message.done?.stopped?.length) {
        stopped.hidden = false;
        stopped.textContent = message.done.stopped.map((s) => `partition ${s.partition} stopped at offset ${s.next_offset} (${s.why})`).join("; ");
      }
      if (message.error) { progress.textContent = message.error; progress.classList.add("problem"); }
    }
  }
}

(function messages() {
  const table = document.getElementById("records");
  if (!table) return;
  const progress = document.getElementById("progress");
  const stopped = document.getElementById("stopped");
  const topic = table.dataset.topic;
  const query = new URLSearchParams(location.search);
  const seen = new Set();
  const api = (params) => `/api/topics/${encodeURIComponent(topic)}/records?${params}`;
  stream(api(query), table, seen, progress, stopped);

  let tail = null;
  document.getElementById("follow")?.addEventListener("change", (event) => {
    if (tail) { clearInterval(tail); tail = null; }
    if (event.target.checked) {
      const params = new URLSearchParams(query);
      params.set("from", "latest");
      params.set("limit", "100");
      tail = setInterval(() => stream(api(params), table, seen, progress, stopped), 2000);
    }
  });

  const saved = document.getElementById("saved-filters");
  const load = () => JSON.parse(localStorage.getItem("lanes-filters") ?? "{}");
  const refresh = () => {
    saved.replaceChildren(new Option("Saved filters…", ""));
    for (const [label, search] of Object.entries(load())) saved.append(new Option(label, search));
  };
  refresh();
  saved.addEventListener("change", () => { if (saved.value) location.search = saved.value; });
  document.getElementById("save-filter")?.addEventListener("click", () => {
    const label = prompt("Name this filter", query.getAll("filter").join(" & ") || "all records");
    if (!label) return;
    const all = load();
    all[label] = location.search;
    localStorage.setItem("lanes-filters", JSON.stringify(all));
    refresh();
  });
})();

// ---- the lag chart ---------------------------------------------------------------------------------
(function lagChart() {
  const svg = document.getElementById("lag-chart");
  if (!svg) return;
  const points = [];
  const group = svg.dataset.group;
  const draw = () => {
    const max = Math.max(1, ...points.map((p) => p.lag));
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", points.map((p, i) => `${(i / Math.max(1, points.length - 1)) * 600},${78 - (p.lag / max) * 74}`).join(" "));
    svg.replaceChildren(line);
    svg.dataset.samples = String(points.length);
  };
  const sample = async () => {
    const response = await fetch(`/api/groups/${encodeURIComponent(group)}`);
    if (!response.ok) return;
    const described = await response.json();
    points.push({ at: described.sampled_ms, lag: described.lag });
    if (points.length > 120) points.shift();
    document.getElementById("total-lag").textContent = described.lag;
    draw();
  };
  sample();
  setInterval(sample, 5000);
})();
