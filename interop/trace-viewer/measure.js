// node measure.js PAGE.html...: how long each page takes to load in headless Chromium, from
// navigation start to the first rows drawn (the page sets body[data-ready] then), best and
// median of 5 loads, and how many row elements are in the DOM (virtualized: only those in view).
"use strict";
const path = require("path");
const { launch } = require("./browser");

(async () => {
  const { context, close } = await launch();
  try {
    for (const file of process.argv.slice(2)) {
      const times = [];
      let info;
      for (let run = 0; run < 5; run++) {
        const page = await context.newPage();
        await page.goto("file://" + path.resolve(file), { timeout: 120000 });
        await page.waitForSelector("body[data-ready]", { timeout: 120000, state: "attached" });
        info = await page.evaluate(() => ({ load: window.acpTrace.loadMs, html: window.acpTrace.htmlMs, parse: window.acpTrace.parseMs, ingest: window.acpTrace.ingestMs, draw: window.acpTrace.drawMs, rows: window.acpTrace.rows(), dom: document.querySelectorAll(".row").length }));
        if (process.env.DETAIL) console.log(JSON.stringify(info));
        times.push(info.load);
        await page.close();
      }
      times.sort((a, b) => a - b);
      console.log(`${path.basename(file)}: ${info.rows} messages, ${info.dom} rows in the DOM, load ${times[0].toFixed(0)} ms best, ${times[2].toFixed(0)} ms median`);
    }
  } finally {
    await close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
