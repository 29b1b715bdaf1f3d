#include "gateway/endpoints/admin_page.hpp"

namespace troupe::gateway {

namespace {

constexpr std::string_view page = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Troupe admin</title>
<style>
  :root { font: 14px/1.4 system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
  body { margin: 0 1.5rem 2rem; }
  header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .8rem 0;
           border-bottom: 1px solid #d8dce3; }
  h1 { font-size: 1.3rem; margin: 0; }
  h2 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
  h2 small { font-weight: normal; color: #667; }
  table { border-collapse: collapse; width: 100%; background: #fff; }
  th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #e6e8ec;
           vertical-align: top; }
  th { background: #eef0f4; font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  tr.bad td { background: #fde8e8; }
  tr.warn td { background: #fff6dc; }
  tr.pick { cursor: pointer; }
  tr.pick:hover td { background: #eef4ff; }
  #status.err { color: #b42318; }
  #status { color: #3b6; }
  pre { background: #fff; border: 1px solid #d8dce3; padding: .6rem; overflow: auto;
        max-height: 24rem; }
  .muted { color: #889; }
  input, select, button { font: inherit; }
</style>
</head>
<body>
<header>
  <h1>Troupe <span id="node" class="muted"></span></h1>
  <span id="status">loading&hellip;</span>
  <form id="keyform">
    <input id="key" type="password" placeholder="admin API key" autocomplete="off">
    <button type="submit">Use key</button>
  </form>
  <label>Refresh every
    <select id="every">
      <option value="1000">1 s</option>
      <option value="2000" selected>2 s</option>
      <option value="5000">5 s</option>
      <option value="0">paused</option>
    </select>
  </label>
</header>

<h2>Cluster <small id="cluster-note"></small></h2>
<table id="cluster"><thead><tr>
  <th>Member</th><th>Address</th><th>State</th><th>Last heard (ms)</th>
  <th>Registry version</th><th>Workers</th></tr></thead><tbody></tbody></table>

<h2>Workers <small id="workers-note"></small></h2>
<table id="workers"><thead><tr>
  <th>Id</th><th>URL</th><th>Type</th><th>Models</th><th>Health</th><th>Breaker</th>
  <th>Load</th><th>Load by node</th><th>Requests</th><th>Failures</th></tr></thead>
  <tbody></tbody></table>

<h2>Requests in flight <small id="requests-note"></small>
  <label class="muted">older than <input id="older" type="number" min="0" value="0"
    style="width:6rem"> ms</label></h2>
<table id="requests"><thead><tr>
  <th>Id</th><th>Route</th><th>Model</th><th>Phase</th><th>Workers</th><th>Age (ms)</th>
  </tr></thead><tbody></tbody></table>

<h2>Actors <small id="actors-note"></small></h2>
<table id="actors"><thead><tr>
  <th>Id</th><th>Kind</th><th>Name</th><th>Status</th><th>Mailbox</th><th>State</th>
  </tr></thead><tbody></tbody></table>
<pre id="detail" class="muted">Click an actor to see its full state.</pre>

<script>
"use strict";
const $ = (id) => document.getElementById(id);
const storeKey = "troupe-admin-key";
let key = sessionStorage.getItem(storeKey) || "";
const fromHash = location.hash.match(/(?:^#|&)key=([^&]*)/);
if (fromHash) {
  key = decodeURIComponent(fromHash[1]);
  sessionStorage.setItem(storeKey, key);
  history.replaceState(null, "", location.pathname + location.search);
}
let selected = null;
let timer = null;

async function get(path) {
  const headers = key ? { "Authorization": "Bearer " + key } : {};
  const r = await fetch(path, { headers, cache: "no-store" });
  const body = await r.json().catch(() => null);
  if (!r.ok) {
    const why = body && body.error ? body.error.message : r.statusText;
    throw new Error(path + ": " + r.status + " " + why);
  }
  return body;
}

function text(v) {
  if (v === null || v === undefined || v === "") return "\u2014";
  if (Array.isArray(v)) return v.join(", ");
  if (typeof v === "object") {
    return Object.entries(v).map(([k, x]) => k + "=" + (typeof x === "object" ? JSON.stringify(x) : x)).join("  ");
  }
  return String(v);
}

function fill(tableId, rows, columns, rowClass, onPick) {
  const body = $(tableId).tBodies[0];
  const out = document.createDocumentFragment();
  for (const row of rows) {
    const tr = document.createElement("tr");
    tr.dataset.id = String(row.id !== undefined ? row.id : row.name);
    const cls = rowClass ? rowClass(row) : "";
    if (cls) tr.className = cls;
    if (onPick) { tr.classList.add("pick"); tr.addEventListener("click", () => onPick(row)); }
    for (const [field, numeric] of columns) {
      const td = document.createElement("td");
      td.textContent = text(typeof field === "function" ? field(row) : row[field]);
      if (numeric) td.className = "num";
      tr.appendChild(td);
    }
    out.appendChild(tr);
  }
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = columns.length;
    td.className = "muted";
    td.textContent = "none";
    tr.appendChild(td);
    out.appendChild(tr);
  }
  body.replaceChildren(out);
}

function renderCluster(c) {
  $("node").textContent = c.self;
  $("cluster-note").textContent = "registry version " + c.registry_version;
  fill("cluster", c.members, [["name"], ["address"], ["state"], ["last_heard_ms", true],
       ["registry_version", true], ["workers", true]],
       (m) => m.state === "down" ? "bad" : m.state === "up" ? "" : "warn");
}

function renderWorkers(w) {
  $("workers-note").textContent = w.total + " worker(s), load " + w.load + " across " +
      w.nodes.length + " node(s)" + (w.listed < w.total
          ? "; " + w.listed + " listed, troubled ones first (all of them: /admin/workers)" : "");
  fill("workers", w.workers, [["id"], ["url"], ["worker_type"], ["models"], ["health"],
       ["circuit_breaker"], ["load_total", true], ["load_by_node"], ["requests_total", true],
       ["failures_total", true]],
       (x) => x.health === "unhealthy" || x.circuit_breaker === "open" ? "bad"
            : x.health !== "healthy" || x.circuit_breaker === "half_open" ? "warn" : "");
}

function renderRequests(r) {
  $("requests-note").textContent = r.in_flight + " in flight";
  fill("requests", r.requests, [["id"], ["route"], ["model"], ["phase"], ["workers"],
       ["age_ms", true]], (x) => x.age_ms > 30000 ? "bad" : x.age_ms > 5000 ? "warn" : "");
}

function renderActors(a) {
  $("actors-note").textContent = a.actors.length < a.registered
      ? "the first " + a.actors.length + " of " + a.registered +
        " long-lived actors (all of them: /admin/actors)"
      : a.actors.length + " long-lived actor(s)";
  fill("actors", a.actors, [["id", true], ["kind"], ["name"], ["status"], ["mailbox_size", true],
       ["summary"]],
       (x) => x.status !== "ok" ? "bad" : x.mailbox_size > 100 ? "warn" : "",
       (x) => { selected = x.id; showActor(); });
}

async function showActor() {
  if (selected === null) return;
  try {
    $("detail").textContent = JSON.stringify(await get("/admin/actors/" + selected), null, 2);
    $("detail").className = "";
  } catch (e) {
    $("detail").textContent = String(e.message);
  }
}

const actorLimit = 100;
const workerLimit = 200; // the troubled ones first, then the rest

async function refresh() {
  clearTimeout(timer);
  const older = Math.max(0, parseInt($("older").value, 10) || 0);
  const parts = await Promise.allSettled([
    get("/admin/cluster").then(renderCluster),
    get("/admin/workers?limit=" + workerLimit).then(renderWorkers),
    get("/admin/requests?older_than_ms=" + older).then(renderRequests),
    // Each listed actor is asked for its state: a bounded page stays cheap with 4,000 workers.
    get("/admin/actors?limit=" + actorLimit).then(renderActors),
  ]);
  const failed = parts.filter((p) => p.status === "rejected").map((p) => p.reason.message);
  const status = $("status");
  status.textContent = failed.length ? failed.join("; ")
                                     : "updated " + new Date().toLocaleTimeString();
  status.className = failed.length ? "err" : "";
  if (selected !== null) showActor();
  const every = parseInt($("every").value, 10);
  if (every > 0) timer = setTimeout(refresh, every);
}

$("keyform").addEventListener("submit", (e) => {
  e.preventDefault();
  key = $("key").value;
  sessionStorage.setItem(storeKey, key);
  $("key").value = "";
  refresh();
});
$("every").addEventListener("change", refresh);
$("older").addEventListener("change", refresh);
refresh();
</script>
</body>
</html>
)html";

} // namespace

std::string_view admin_page_html() noexcept {
  return page;
}

} // namespace troupe::gateway
