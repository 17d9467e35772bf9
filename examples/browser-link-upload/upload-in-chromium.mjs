// Uploads files through the page as visitors would, in headless Chromium (driven by
// playwright-core, which downloads no browser: CHROMIUM names the one to run): for each FILE,
// opens PAGE_URL in a new tab, chooses the file in the page's file input, and waits for the page
// to show the CID and what the backend heard from Cairn's webhook. crates/cairn/tests/examples.rs
// runs it against examples/node-backend; by hand:
//
//   CHROMIUM=/usr/bin/chromium node upload-in-chromium.mjs http://127.0.0.1:3000/ photo.jpg
//
// Prints one JSON line: {"pageOrigin", "uploads": [{"file", "state", "status", "cid",
// "gatewayUrl", "progress", "webhook": {"state", "text"}}]}, where `state` is where the page
// ended (done or failed) and `progress` every value its progress bar took, in order. Exits 1
// with a message when the page cannot be driven or throws.

import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

/** Longer than anything a page of a few small files should take. */
const TIMEOUT_MS = 120_000;
const FINISHED = '#upload[data-state="done"], #upload[data-state="failed"]';
const WEBHOOK_ANSWERED = '#webhook:not([data-state="waiting"])';

const [pageUrl, ...files] = process.argv.slice(2);

async function main() {
  if (pageUrl === undefined || files.length === 0) {
    throw new Error("usage: node upload-in-chromium.mjs PAGE_URL FILE...");
  }
  const executablePath = process.env.CHROMIUM;
  if (!executablePath) {
    throw new Error("CHROMIUM is not set: give the path of a Chromium or Chrome to run");
  }
  const profile = mkdtempSync(join(tmpdir(), "cairn-example-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
    timeout: TIMEOUT_MS,
  });
  try {
    const uploads = [];
    for (const file of files) {
      uploads.push(await uploadOne(browser, file));
    }
    process.stdout.write(`${JSON.stringify({ pageOrigin: new URL(pageUrl).origin, uploads })}\n`);
  } finally {
    await browser.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}

/**
 * Open the page in a new tab (a new visitor), choose `file` and wait until its upload ends,
 * recording the progress bar as it moves.
 */
async function uploadOne(browser, file) {
  const tab = await browser.newPage();
  tab.setDefaultTimeout(TIMEOUT_MS);
  const errors = [];
  tab.on("pageerror", (error) => errors.push(error.message));
  await tab.goto(pageUrl);
  await tab.evaluate(() => {
    const bar = document.getElementById("progress");
    window.progressSeen = [];
    new MutationObserver(() => window.progressSeen.push(bar.value)).observe(bar, {
      attributes: true,
      attributeFilter: ["value"],
    });
  });
  await tab.locator("#file").setInputFiles(file);
  await tab.waitForSelector(FINISHED, { state: "attached" });
  const state = await tab.locator("#upload").getAttribute("data-state");
  if (state === "done") {
    await tab.waitForSelector(WEBHOOK_ANSWERED, { state: "attached" });
  }
  if (errors.length > 0) {
    throw new Error(`the page threw: ${errors.join("; ")}`);
  }
  const shown = {
    file: basename(file),
    state,
    status: await tab.locator("#status").textContent(),
    cid: await tab.locator("#cid").textContent(),
    gatewayUrl: await tab.locator("#gateway").getAttribute("href"),
    progress: await tab.evaluate(() => window.progressSeen),
    webhook: {
      state: await tab.locator("#webhook").getAttribute("data-state"),
      text: await tab.locator("#webhook").textContent(),
    },
  };
  await tab.close();
  return shown;
}

main().catch((error) => {
  process.stderr.write(`upload-in-chromium: ${error.message}\n`);
  process.exit(1);
});
