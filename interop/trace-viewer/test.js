// The trace viewer in a real browser (headless Chromium, Debian's package, through
// playwright-core): `acp trace view` on the demo agent's turn and on a large synthetic
// transcript, and `acp --trace-view` live, checked through the page's DOM.
//
//   node test.js [ACP_BINARY]      (default: ../../target/debug/acp)
"use strict";
const assert = require("assert/strict");
const { spawn, execFileSync } = require("child_process");
const fs = require("fs");
const http = require("http");
const os = require("os");
const path = require("path");
const { launch } = require("./browser");

const acp = path.resolve(process.argv[2] || path.join(__dirname, "../../target/debug/acp"));
const work = fs.mkdtempSync(path.join(os.tmpdir(), "acp-trace-view-test-"));

function step(name) {
  console.log("ok   " + name);
}

async function rowsInDom(page) {
  return page.$$eval(".row", (rows) => rows.map((r) => ({
    i: Number(r.dataset.i), kind: r.dataset.kind, from: Number(r.dataset.from), to: Number(r.dataset.to),
    answer: r.dataset.answer, answers: r.dataset.answers, folded: r.dataset.folded, foldOf: r.dataset.foldOf,
    error: r.classList.contains("error"), cancel: r.classList.contains("cancel"),
    arrow: r.querySelector(".arrow").className, label: r.querySelector(".label").textContent,
  })));
}

async function fileView(context) {
  // A real transcript: the demo agent's turn, with fs, terminal, permission and a failed read.
  const trace = path.join(work, "demo.jsonl");
  execFileSync(acp, ["--yes", "--prompt", "Summarize my notes", "--trace", trace], { stdio: ["ignore", "ignore", "inherit"], timeout: 60000 });
  const html = path.join(work, "demo.html");
  execFileSync(acp, ["trace", "view", trace, "-o", html], { stdio: "inherit" });
  const lines = fs.readFileSync(trace, "utf8").trim().split("\n").length;

  const page = await context.newPage();
  const failures = [];
  page.on("pageerror", (e) => failures.push(e.message));
  page.on("request", (r) => { if (!r.url().startsWith("file:")) failures.push("fetched " + r.url()); });
  await page.goto("file://" + html);
  await page.waitForSelector("body[data-ready]");

  assert.deepEqual(await page.$$eval("#lanes .lane", (l) => l.map((x) => x.textContent)), ["client", "agent"]);
  step("two lanes, client and agent");

  let rows = await rowsInDom(page);
  assert.equal(await page.evaluate(() => window.acpTrace.rows()), lines, "every message of the file is a row");
  assert.ok(rows.length > 10 && rows.every((r) => r.arrow.includes("arrow")));
  const init = rows.find((r) => r.i === 0);
  assert.equal(init.kind, "request");
  assert.deepEqual([init.from, init.to], [0, 1]);
  assert.match(init.arrow, /ltr/);
  step(`${rows.length} arrows drawn, the first one client → agent`);

  // Requests joined to their answers, with the time between.
  assert.equal(init.answer, "1");
  const answer = rows.find((r) => r.i === 1);
  assert.equal(answer.kind, "response");
  assert.equal(answer.answers, "0");
  assert.match(answer.arrow, /rtl/);
  assert.match(init.label, /→ #1 · [\d.]+ (ms|s)/);
  assert.match(answer.label, /← #0 · [\d.]+ (ms|s)/);
  const prompt = rows.find((r) => r.kind === "request" && r.label.includes("session/prompt"));
  assert.ok(prompt.answer, "the prompt is answered");
  step("request–answer joins with elapsed time (initialize #0 ↔ #1, session/prompt)");

  // Clicking shows the whole message; a join link jumps to the answer.
  await page.click('.row[data-i="0"]');
  const json = JSON.parse(await page.textContent("#detail pre.json"));
  assert.equal(json.method, "initialize");
  await page.click('#detail a[data-jump="1"]');
  assert.ok(JSON.parse(await page.textContent("#detail pre.json")).result);
  step("full JSON on click, and the join link jumps to the answer");

  // Streamed chunks folded into one row that expands.
  const head = rows.find((r) => r.folded);
  assert.ok(head, "a run of chunks is folded");
  const count = Number(head.folded);
  assert.ok(count > 1);
  assert.equal(rows.filter((r) => r.foldOf === String(head.i)).length, 0, "its chunks are hidden");
  assert.match(head.label, new RegExp("×" + count + ": \\S"));
  await page.click(`.row[data-i="${head.i}"] .tog`);
  rows = await rowsInDom(page);
  assert.equal(rows.filter((r) => r.foldOf === String(head.i)).length, count - 1, "expanded: every chunk");
  await page.click(`.row[data-i="${head.i}"] .tog`);
  rows = await rowsInDom(page);
  assert.equal(rows.filter((r) => r.foldOf === String(head.i)).length, 0, "folded again");
  await page.click(`.row[data-i="${head.i}"]`);
  assert.ok((await page.textContent("#detail .folded-text")).length > 10, "the detail shows the joined text");
  step(`${count} streamed chunks folded into one row, expanded and folded again`);

  // Turns group their messages: the prompt's toggle folds the turn.
  const inTurn = rows.filter((r) => r.kind === "notification").length;
  await page.click(`.row[data-i="${prompt.i}"] .tog`);
  rows = await rowsInDom(page);
  assert.equal(rows.filter((r) => r.kind === "notification").length, 0, "the turn's notifications are folded");
  assert.ok(rows.some((r) => r.i === Number(prompt.answer)), "the turn's answer stays");
  await page.click(`.row[data-i="${prompt.i}"] .tog`);
  assert.equal((await rowsInDom(page)).filter((r) => r.kind === "notification").length, inTurn);
  step("a turn folds its messages and unfolds");

  // Errors marked, and the errors-only filter.
  await page.check("#f-errors");
  rows = await rowsInDom(page);
  assert.ok(rows.length >= 2, "the failed read and its request");
  assert.ok(rows.every((r) => r.error || (r.answer && rows.some((a) => a.i === Number(r.answer) && a.error))));
  assert.match(await page.textContent("#stats"), new RegExp(`${rows.length} of ${lines} messages shown`));
  await page.uncheck("#f-errors");
  step(`errors only: ${rows.length} rows, each an error or a request answered with one`);

  // The method filter.
  await page.selectOption("#f-method", "fs/read_text_file");
  rows = await rowsInDom(page);
  assert.ok(rows.length >= 2 && rows.every((r) => r.label.includes("fs/read_text_file")));
  await page.selectOption("#f-method", "");
  const sessions = await page.$$eval("#f-session option", (o) => o.map((x) => x.value).filter(Boolean));
  assert.ok(sessions.length >= 1);
  step(`method filter (fs/read_text_file: ${rows.length} rows), session filter offers ${sessions.length}`);

  assert.deepEqual(failures, []);
  await page.close();
}

async function largeView(context) {
  const trace = path.join(work, "large.jsonl");
  execFileSync("node", [path.join(__dirname, "generate.js"), "100000", trace]);
  const html = path.join(work, "large.html");
  execFileSync(acp, ["trace", "view", trace, "-o", html], { stdio: "inherit" });
  const page = await context.newPage();
  await page.goto("file://" + html, { timeout: 120000 });
  await page.waitForSelector("body[data-ready]", { timeout: 120000 });
  const { total, dom, load } = await page.evaluate(() => ({ total: window.acpTrace.rows(), dom: document.querySelectorAll(".row").length, load: window.acpTrace.loadMs }));
  assert.equal(total, 100000);
  assert.ok(dom < 200, `only the rows in view are in the DOM (${dom})`);
  await page.evaluate(() => { document.getElementById("scroller").scrollTop = 1e9; });
  await page.waitForFunction(() => [...document.querySelectorAll(".row")].some((r) => Number(r.dataset.i) > 99000));
  step(`100,000 messages: ${dom} rows in the DOM, loaded in ${load.toFixed(0)} ms, scrolled to the end`);
  await page.close();
}

function get(url) {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => { res.resume(); resolve(res.statusCode); }).on("error", reject);
  });
}

async function liveView(context) {
  const cwd = fs.mkdtempSync(path.join(work, "live-"));
  fs.writeFileSync(path.join(cwd, "notes.txt"), "buy milk\ncall Ada\n");
  const child = spawn(acp, ["--trace-view", "--yes", "--cwd", cwd], { stdio: ["pipe", "ignore", "pipe"] });
  let stderr = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no trace view URL on stderr: " + stderr)), 30000);
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const found = stderr.match(/trace view at (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+)/);
      if (found) { clearTimeout(timer); resolve(found[1]); }
    });
  });
  const { origin } = new URL(url);
  assert.equal(await get(origin + "/"), 403);
  assert.equal(await get(origin + "/events"), 403);
  assert.equal(await get(origin + "/?token=wrong"), 403);
  step("live view on 127.0.0.1; without the token: 403");

  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("body[data-ready]");
  assert.equal(await page.textContent("#live"), "● live");
  child.stdin.write("Summarize my notes\n");
  await page.waitForFunction(() => [...document.querySelectorAll(".row.k-response .label")].some((l) => l.textContent.includes("end_turn")), null, { timeout: 30000 });
  const rows = await rowsInDom(page);
  const prompt = rows.find((r) => r.kind === "request" && r.label.includes("session/prompt"));
  assert.ok(prompt && prompt.answer, "the live prompt is joined to its answer");
  step(`live: the turn arrived as it ran (${await page.evaluate(() => window.acpTrace.rows())} messages)`);

  // Listen before ending stdin: acp may exit before the page has seen the end, and an
  // "exit" listener added after the event would wait for ever.
  const exited = new Promise((resolve) => child.on("exit", resolve));
  child.stdin.end();
  await page.waitForSelector("body[data-ended]", { timeout: 30000 });
  assert.equal(await page.textContent("#live"), "session ended");
  const code = await exited;
  assert.equal(code, 0, stderr);
  step("live: the view ends with the session");
  await page.close();
}

(async () => {
  const { context, close } = await launch();
  try {
    await fileView(context);
    await liveView(context);
    await largeView(context);
  } finally {
    await close();
    fs.rmSync(work, { recursive: true, force: true });
  }
  finished = true;
  console.log("trace viewer: all browser checks passed");
})().catch((e) => { console.error(e); process.exit(1); });

// Node ends with status 0 when nothing is left to wait for, even in the middle of the checks
// (a promise nobody will resolve): that must not pass.
let finished = false;
process.on("exit", (code) => {
  if (code === 0 && !finished) {
    console.error("trace viewer: the checks stopped before the end");
    process.exitCode = 1;
  }
});
