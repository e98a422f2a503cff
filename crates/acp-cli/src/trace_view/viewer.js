// acp trace view: draws the rows that acp computed (crates/acp-cli/src/trace_view/model.rs) as
// a sequence diagram. Only the rows in view are in the DOM (a virtual list over `view`, the
// indices that pass the filters and folds), so that 100,000 messages stay usable. The same
// code runs the file (rows embedded) and the live view (rows arriving as server-sent events).
"use strict";
(async function () {
  const started = performance.now();
  const data = await embedded(document.getElementById("trace-data"));
  const parsed = performance.now();
  const ROW = 26;
  const OVERSCAN = 12;
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  // Rows by index (a live view that lost its oldest rows has holes), and what later rows tell
  // about earlier ones: the answer of a request, the chunks of a run, the size of a turn.
  const rows = [];
  const answeredBy = new Map();
  const foldMembers = new Map();
  const turnSize = new Map();
  const sessions = new Map();
  const methods = new Map();
  let view = [];
  let selected = -1;
  const expandedFolds = new Set();
  let allExpanded = false;
  const collapsedTurns = new Set();
  const filter = { session: "", method: "", text: "", errors: false };
  let optionsDirty = true;

  function ingest(r) {
    rows[r.i] = r;
    if (r.answers != null) answeredBy.set(r.answers, r.i);
    if (r.fold != null) {
      let members = foldMembers.get(r.fold);
      if (!members) foldMembers.set(r.fold, (members = []));
      members.push(r.i);
    }
    if (r.turn != null && r.turn !== r.i) turnSize.set(r.turn, (turnSize.get(r.turn) || 0) + 1);
    if (r.session != null && !sessions.has(r.session)) { sessions.set(r.session, 0); optionsDirty = true; }
    if (r.session != null) sessions.set(r.session, sessions.get(r.session) + 1);
    if (r.method != null) {
      if (!methods.has(r.method)) { methods.set(r.method, 0); optionsDirty = true; }
      methods.set(r.method, methods.get(r.method) + 1);
    }
  }

  function failed(r) {
    if (r.error) return true;
    const answer = answeredBy.get(r.i);
    return answer != null && rows[answer] != null && !!rows[answer].error;
  }

  function passes(r) {
    if (filter.session && r.session !== filter.session) return false;
    if (filter.method && r.method !== filter.method) return false;
    if (filter.errors && !failed(r)) return false;
    if (filter.text) {
      const hay = ((r.method || "") + " " + r.summary + " " + (r.text || "")).toLowerCase();
      if (!hay.includes(filter.text)) return false;
    }
    return true;
  }

  function shown(r) {
    if (r.fold != null && !allExpanded && !expandedFolds.has(r.fold)) return false;
    if (r.turn != null && collapsedTurns.has(r.turn) && r.turn !== r.i && r.answers !== r.turn) return false;
    return passes(r);
  }

  function rebuildView() {
    const next = [];
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      if (r !== undefined && shown(r)) next.push(i);
    }
    view = next;
    $("spacer").style.height = view.length * ROW + "px";
    $("stats").textContent = view.length === rows.length
      ? rows.length.toLocaleString() + " messages"
      : view.length.toLocaleString() + " of " + rows.length.toLocaleString() + " messages shown";
  }

  const lanes = data.lanes;
  function lanePos(k) {
    return lanes.length < 2 ? 50 : 8 + (k * 84) / (lanes.length - 1);
  }

  function drawLanes() {
    $("lanes").innerHTML = lanes
      .map((name, k) => `<span class="lane" data-lane="${k}" style="left:${lanePos(k)}%">${esc(name)}</span>`)
      .join("");
  }

  function fmtMs(ms) {
    if (ms == null) return "";
    if (ms < 1) return ms.toFixed(3) + " ms";
    if (ms < 1000) return ms.toFixed(1) + " ms";
    return (ms / 1000).toFixed(2) + " s";
  }

  function foldText(head) {
    const members = foldMembers.get(head) || [];
    let text = rows[head].text || "";
    for (const m of members) if (rows[m]) text += rows[m].text || "";
    return text;
  }

  function labelOf(r) {
    let html = "";
    const members = r.fold == null ? foldMembers.get(r.i) : null;
    if (members) {
      const open = allExpanded || expandedFolds.has(r.i);
      html += `<span class="tog" data-fold="${r.i}">${open ? "▾" : "▸"}</span>`;
    } else if (r.i === r.turn && turnSize.get(r.i)) {
      html += `<span class="tog" data-turn="${r.i}">${collapsedTurns.has(r.i) ? "▸" : "▾"}</span>`;
    }
    const name = r.kind === "response" ? "↩ " + (r.method || "response") : r.update || r.method || (r.kind === "other" ? "?" : "");
    html += `<b${r.update ? ' title="session/update"' : ""}>${esc(name)}</b> `;
    if (r.error) html += `<span class="flag">✖ </span>`;
    else if (r.cancel) html += `<span class="flag">⊘ </span>`;
    if (members && !(allExpanded || expandedFolds.has(r.i))) {
      html += `<span class="sum">×${members.length + 1}: ${esc(foldText(r.i).slice(0, 300))}</span>`;
    } else {
      html += `<span class="sum">${esc(r.summary)}</span>`;
    }
    if (r.kind === "request") {
      const answer = answeredBy.get(r.i);
      html += answer != null
        ? ` <span class="join">→ #${answer}${rows[answer] && rows[answer].elapsed != null ? " · " + fmtMs(rows[answer].elapsed) : ""}</span>`
        : ` <span class="pending">· no answer</span>`;
    } else if (r.kind === "response") {
      html += r.answers != null
        ? ` <span class="join">← #${r.answers}${r.elapsed != null ? " · " + fmtMs(r.elapsed) : ""}</span>`
        : "";
    }
    if (r.i === r.turn && collapsedTurns.has(r.i)) html += ` <span class="join">(${turnSize.get(r.i)} messages folded)</span>`;
    return html;
  }

  function turnColor(turn) {
    return `hsl(${(turn * 137) % 360} 70% 55%)`;
  }

  function rowHtml(r, top) {
    const a = lanePos(Math.min(r.from, r.to));
    const b = lanePos(Math.max(r.from, r.to));
    const cls = `row k-${r.kind}${r.error ? " error" : ""}${r.cancel ? " cancel" : ""}${r.i === selected ? " sel" : ""}`;
    const answer = answeredBy.get(r.i);
    const members = r.fold == null ? foldMembers.get(r.i) : null;
    let attrs = `data-i="${r.i}" data-kind="${r.kind}" data-from="${r.from}" data-to="${r.to}"`;
    if (answer != null) attrs += ` data-answer="${answer}"`;
    if (r.answers != null) attrs += ` data-answers="${r.answers}"`;
    if (members) attrs += ` data-folded="${members.length + 1}"`;
    if (r.fold != null) attrs += ` data-fold-of="${r.fold}"`;
    if (r.turn != null) attrs += ` data-turn="${r.turn}"`;
    let lifelines = "";
    for (let k = 0; k < lanes.length; k++) lifelines += `<i class="life" style="left:${lanePos(k)}%"></i>`;
    const turn = r.turn != null ? `<i class="turn" style="background:${turnColor(r.turn)}" title="turn of #${r.turn}"></i>` : "";
    return `<div class="${cls}" ${attrs} style="top:${top}px"><span class="idx">${r.i}</span><span class="time">${r.t != null ? "+" + fmtMs(r.t) : ""}</span>` +
      `<div class="dia">${turn}${lifelines}<div class="arrow ${r.from <= r.to ? "ltr" : "rtl"}" style="left:${a}%;width:${b - a}%"></div>` +
      `<div class="label" style="left:${a}%;width:${b - a}%">${labelOf(r)}</div></div></div>`;
  }

  let drawn = "";
  function draw() {
    const scroller = $("scroller");
    const first = Math.max(0, Math.floor(scroller.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(view.length, Math.ceil((scroller.scrollTop + scroller.clientHeight) / ROW) + OVERSCAN);
    let html = "";
    for (let k = first; k < last; k++) html += rowHtml(rows[view[k]], k * ROW);
    if (html !== drawn) {
      $("rows").innerHTML = html;
      drawn = html;
    }
  }

  let frame = 0;
  function redraw() {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; draw(); });
  }

  function refresh() {
    if (optionsDirty) fillOptions();
    rebuildView();
    drawn = "";
    draw();
  }

  function fillOptions() {
    optionsDirty = false;
    const fill = (select, entries, current) => {
      select.innerHTML = `<option value="">all</option>` + entries
        .map(([value, count]) => `<option value="${esc(value)}"${value === current ? " selected" : ""}>${esc(value)} (${count})</option>`)
        .join("");
    };
    fill($("f-session"), [...sessions], filter.session);
    fill($("f-method"), [...methods].sort((x, y) => x[0].localeCompare(y[0])), filter.method);
  }

  function describe(r) {
    const answer = answeredBy.get(r.i);
    let html = `<h3>#${r.i} ${esc(r.kind)} ${esc(r.method || "")}${r.update ? " · " + esc(r.update) : ""}</h3>`;
    html += `<p>${esc(lanes[r.from])} → ${esc(lanes[r.to])}${r.t != null ? " · at +" + fmtMs(r.t) : ""}`;
    if (r.id != null) html += ` · id ${esc(r.id)}`;
    if (r.session != null) html += `<br>session ${esc(r.session)}`;
    if (r.turn != null) html += `<br>turn of <a data-jump="${r.turn}">#${r.turn}</a>`;
    html += "</p>";
    if (r.error) html += `<p class="err">✖ ${esc(r.error)}</p>`;
    if (r.cancel) html += `<p class="cancel">⊘ cancellation</p>`;
    if (r.kind === "request") {
      html += answer != null
        ? `<p>answered by <a data-jump="${answer}">#${answer}</a>${rows[answer] && rows[answer].elapsed != null ? " after " + fmtMs(rows[answer].elapsed) : ""}</p>`
        : `<p class="err">no answer in this transcript</p>`;
    }
    if (r.kind === "response") {
      html += r.answers != null
        ? `<p>answers <a data-jump="${r.answers}">#${r.answers}</a>${r.elapsed != null ? " after " + fmtMs(r.elapsed) : ""}</p>`
        : `<p class="err">answers no request of this transcript</p>`;
    }
    const head = r.fold != null ? r.fold : foldMembers.has(r.i) ? r.i : null;
    if (head != null) {
      const count = (foldMembers.get(head) || []).length + 1;
      html += `<p>${count} streamed chunks, from <a data-jump="${head}">#${head}</a>, joined:</p><div class="folded-text">${esc(foldText(head))}</div>`;
    }
    html += `<pre class="json">${esc(JSON.stringify(r.msg, null, 2))}</pre>`;
    $("detail").innerHTML = html;
  }

  function select(i, scroll) {
    const r = rows[i];
    if (!r) return;
    selected = i;
    let k = indexInView(i);
    if (k < 0 && scroll) {
      if (r.fold != null) expandedFolds.add(r.fold);
      if (r.turn != null) collapsedTurns.delete(r.turn);
      rebuildView();
      k = indexInView(i);
    }
    if (scroll && k >= 0) {
      const scroller = $("scroller");
      const top = k * ROW;
      if (top < scroller.scrollTop || top + ROW > scroller.scrollTop + scroller.clientHeight) {
        scroller.scrollTop = Math.max(0, top - scroller.clientHeight / 3);
      }
    }
    describe(r);
    drawn = "";
    draw();
  }

  function indexInView(i) {
    let lo = 0, hi = view.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (view[mid] === i) return mid;
      if (view[mid] < i) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
  }

  function toggle(target) {
    if (target.dataset.fold != null) {
      const head = Number(target.dataset.fold);
      if (allExpanded) {
        allExpanded = false;
        for (const h of foldMembers.keys()) if (h !== head) expandedFolds.add(h);
      } else if (expandedFolds.has(head)) expandedFolds.delete(head);
      else expandedFolds.add(head);
      refresh();
      return true;
    }
    if (target.dataset.turn != null && target.classList.contains("tog")) {
      const turn = Number(target.dataset.turn);
      if (collapsedTurns.has(turn)) collapsedTurns.delete(turn); else collapsedTurns.add(turn);
      refresh();
      return true;
    }
    return false;
  }

  $("rows").addEventListener("click", (event) => {
    const tog = event.target.closest(".tog");
    if (tog && toggle(tog)) return;
    const row = event.target.closest(".row");
    if (row) select(Number(row.dataset.i), false);
  });
  $("detail").addEventListener("click", (event) => {
    const link = event.target.closest("a[data-jump]");
    if (link) select(Number(link.dataset.jump), true);
  });
  $("scroller").addEventListener("scroll", redraw);
  window.addEventListener("resize", redraw);
  $("scroller").addEventListener("keydown", (event) => {
    const k = indexInView(selected);
    if (event.key === "ArrowDown" || event.key === "j") {
      if (view.length) select(view[Math.min(view.length - 1, k + 1)], true);
    } else if (event.key === "ArrowUp" || event.key === "k") {
      if (view.length) select(view[Math.max(0, k < 0 ? 0 : k - 1)], true);
    } else if (event.key === "Enter" && selected >= 0) {
      const r = rows[selected];
      const head = r.fold != null ? r.fold : foldMembers.has(r.i) ? r.i : null;
      if (head != null) toggle({ dataset: { fold: head } });
      else if (r.i === r.turn) toggle({ dataset: { turn: r.i }, classList: { contains: () => true } });
    } else return;
    event.preventDefault();
  });
  const onFilter = () => {
    filter.session = $("f-session").value;
    filter.method = $("f-method").value;
    filter.text = $("f-text").value.trim().toLowerCase();
    filter.errors = $("f-errors").checked;
    $("scroller").scrollTop = 0;
    refresh();
  };
  for (const id of ["f-session", "f-method", "f-errors"]) $(id).addEventListener("change", onFilter);
  let typing = 0;
  $("f-text").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(onFilter, 150); });
  $("fold-all").addEventListener("click", () => {
    allExpanded = !allExpanded;
    expandedFolds.clear();
    $("fold-all").textContent = allExpanded ? "fold chunks" : "expand chunks";
    refresh();
  });

  document.title = data.title + " · ACP trace";
  $("title").textContent = data.title;
  $("notes").textContent = (data.notes || []).join(" ");
  drawLanes();
  for (const r of data.rows) ingest(r);
  const ingested = performance.now();
  refresh();

  if (data.events) live(data.events);

  function live(url) {
    const status = $("live");
    status.className = "on";
    status.textContent = "● live";
    const source = new EventSource(url);
    let pending = 0;
    source.onmessage = (event) => {
      for (const r of JSON.parse(event.data)) ingest(r);
      status.className = "on";
      status.textContent = "● live";
      if (pending) return;
      pending = requestAnimationFrame(() => {
        pending = 0;
        const scroller = $("scroller");
        const atEnd = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - ROW;
        refresh();
        if (atEnd) scroller.scrollTop = scroller.scrollHeight;
        draw();
      });
    };
    source.addEventListener("gap", (event) => {
      $("notes").textContent = `The live view keeps a bounded history: ${event.data} earlier messages are not shown.`;
    });
    source.addEventListener("end", () => {
      source.close();
      status.className = "ended";
      status.textContent = "session ended";
      document.body.dataset.ended = "1";
    });
    source.onerror = () => {
      if (status.className !== "ended") { status.className = ""; status.textContent = "reconnecting…"; }
    };
  }

  // The rows as page.rs embedded them: JSON, or (large transcripts) gzip in base64.
  async function embedded(element) {
    if (element.dataset.encoding !== "gzip-base64") return JSON.parse(element.textContent);
    const binary = atob(element.textContent);
    const bytes = new Uint8Array(binary.length);
    for (let k = 0; k < binary.length; k++) bytes[k] = binary.charCodeAt(k);
    const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(inflated).text());
  }

  // For the browser test and the load-time measurement (docs/performance.md).
  const now = performance.now();
  window.acpTrace = {
    loadMs: now, htmlMs: started, parseMs: parsed - started, ingestMs: ingested - parsed, drawMs: now - ingested,
    rows: () => rows.length, view: () => view.length,
  };
  document.body.dataset.ready = "1";
})();
