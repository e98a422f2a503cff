// node screenshot.js PAGE.html OUT.png [ROW]: a screenshot of the viewer (docs/trace-viewer.png),
// with message ROW selected so that the detail pane shows it.
"use strict";
const path = require("path");
const { launch } = require("./browser");

(async () => {
  const [page_, out, row] = process.argv.slice(2);
  const { context, close } = await launch();
  try {
    const page = await context.newPage();
    // Tall enough for the demo's turn whole (36 rows once its chunks are folded).
    await page.setViewportSize({ width: 1400, height: Number(process.env.HEIGHT || 1080) });
    await page.goto("file://" + path.resolve(page_));
    await page.waitForSelector("body[data-ready]");
    if (process.env.SCROLL) await page.evaluate(() => { document.getElementById("scroller").scrollTop = 1e9; });
    if (row) await page.click(`.row[data-i="${row}"]`);
    await page.screenshot({ path: out });
  } finally {
    await close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
