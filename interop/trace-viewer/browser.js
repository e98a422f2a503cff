// The headless Chromium the trace viewer's scripts drive: Debian's chromium package through
// playwright-core (`npx playwright install` cannot download a browser here), with a fresh
// profile and nothing that reaches the network on its own.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";

async function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "acp-trace-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const close = async () => {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return { context, close };
}

module.exports = { launch, executablePath };
