// End-to-end in a real VS Code: code-server (its npm package carries the
// VS Code build) with the packaged extension installed, driven through
// Chromium by playwright-core. Runs "Quarry: Search Code" against the real
// `quarry lsp` on a copy of the fixture, picks a result and checks that the
// editor opened the right file and line; then Ctrl+T finds a symbol.
// Screenshots of each step go to $E2E_ARTIFACTS (default e2e/artifacts).
//
//   node e2e/run.js CODE_SERVER [QUARRY_BIN]   (QUARRY_BIN: target/debug/quarry)
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const net = require("node:net");
const { chromium } = require("playwright-core");

const here = path.resolve(__dirname, "..");
const repo = path.resolve(here, "..", "..");
const codeServer = process.argv[2];
const quarryBin = path.resolve(process.argv[3] || path.join(repo, "target", "debug", "quarry"));
if (!codeServer || !fs.existsSync(quarryBin)) {
  console.error("usage: node e2e/run.js CODE_SERVER [QUARRY_BIN] (build quarry first)");
  process.exit(2);
}
const artifacts = process.env.E2E_ARTIFACTS || path.join(here, "e2e", "artifacts");
fs.mkdirSync(artifacts, { recursive: true });

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

async function waitForHttp(url, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer`);
}

function run(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: "inherit" });
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}`))));
  });
}

async function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "quarry-e2e-"));
  const workspace = path.join(work, "workspace");
  fs.cpSync(path.join(repo, "tests", "fixtures", "polyglot"), workspace, { recursive: true });
  const userData = path.join(work, "user");
  const extensions = path.join(work, "extensions");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(
    path.join(userData, "User", "settings.json"),
    JSON.stringify({
      "quarry.serverPath": quarryBin,
      "workbench.startupEditor": "none",
      "security.workspace.trust.enabled": false,
      "workbench.tips.enabled": false,
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "telemetry.telemetryLevel": "off",
    }),
  );
  const env = {
    ...process.env,
    XDG_CACHE_HOME: path.join(work, "cache"),
    XDG_CONFIG_HOME: path.join(work, "config"),
    QUARRY_MODEL: path.join(work, "no-model"),
  };
  const vsix = path.join(here, "quarry.vsix");
  await run(codeServer, ["--user-data-dir", userData, "--extensions-dir", extensions, "--install-extension", vsix], env);

  const port = await freePort();
  const server = spawn(
    codeServer,
    ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--user-data-dir", userData,
     "--extensions-dir", extensions, "--disable-telemetry", "--disable-update-check", workspace],
    { env, stdio: ["ignore", "inherit", "inherit"] },
  );
  let browser;
  try {
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const shot = async (name) => page.screenshot({ path: path.join(artifacts, `${name}.png`) });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: 60_000 });
    // The status bar item appears once the server answers quarry/status.
    const status = page.locator(".statusbar-item", { hasText: "Quarry" });
    await status.first().waitFor({ timeout: 30_000 });
    await page.waitForFunction(
      () => [...document.querySelectorAll(".statusbar-item")].some((e) => /Quarry [\w%\- ]+ · [1-9]\d* files/.test(e.textContent || "")),
      null,
      { timeout: 30_000 },
    );
    await shot("1-workbench");

    // Quarry: Search Code.
    await page.keyboard.press("F1");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10_000 });
    await page.keyboard.type("Quarry: Search Code");
    await page.waitForSelector(".quick-input-list .monaco-list-row", { timeout: 10_000 });
    await page.keyboard.press("Enter");
    await page.waitForFunction(
      () => (document.querySelector(".quick-input-widget input")?.getAttribute("placeholder") || "").includes("Search code"),
      null,
      { timeout: 10_000 },
    );
    await page.keyboard.type("GraphStore::insert");
    // Labels carry zero-width spaces (they keep VS Code from re-sorting).
    const spaced = (text) => new RegExp([...text].map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("\u200B?"));
    const row = page.locator(".quick-input-list .monaco-list-row", { hasText: spaced("GraphStore::insert") });
    await row.first().waitFor({ timeout: 30_000 });
    await shot("2-search-results");
    await page.keyboard.press("Enter");
    const tab = page.locator(".tabs-container .tab", { hasText: "graph_store.rs" });
    await tab.first().waitFor({ timeout: 15_000 });
    await page.waitForFunction(
      () => [...document.querySelectorAll(".statusbar-item")].some((e) => /Ln 55,/.test(e.textContent || "")),
      null,
      { timeout: 15_000 },
    );
    await shot("3-opened-at-line-55");

    // Go to Symbol in Workspace (Ctrl+T), served by workspace/symbol.
    await page.keyboard.press("Control+T");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10_000 });
    await page.keyboard.type("RetryPolicy");
    const symbol = page.locator(".quick-input-list .monaco-list-row", { hasText: "RetryPolicy" });
    await symbol.first().waitFor({ timeout: 30_000 });
    await shot("4-workspace-symbols");
    await page.keyboard.press("Enter");
    await page.waitForFunction(
      () => !!document.querySelector(".tabs-container .tab.active") &&
        !/graph_store\.rs/.test(document.querySelector(".tabs-container .tab.active").textContent || ""),
      null,
      { timeout: 15_000 },
    );
    await shot("5-symbol-opened");
    console.log("e2e: search opened graph_store.rs at line 55 (the name); Ctrl+T found RetryPolicy");
  } catch (error) {
    if (browser) {
      const page = browser.contexts()[0]?.pages()[0];
      if (page) {
        await page.screenshot({ path: path.join(artifacts, "failure.png") }).catch(() => {});
        const items = await page
          .$$eval(".statusbar-item", (els) => els.map((e) => e.textContent))
          .catch(() => []);
        console.error("status bar:", JSON.stringify(items));
      }
    }
    process.exitCode = 1;
    throw error;
  } finally {
    if (browser) await browser.close();
    server.kill();
    if (process.exitCode === undefined || process.exitCode === 0) {
      fs.rmSync(work, { recursive: true, force: true });
    } else {
      console.error(`kept ${work} for inspection`);
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
