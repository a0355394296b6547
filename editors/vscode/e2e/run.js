// End-to-end in a real VS Code: code-server (its npm package carries the
// VS Code build) with the packaged extension installed, driven through
// Chromium by playwright-core, against the real `quarry lsp` on a copy of
// the fixture. Three passes, each a fresh code-server:
// - lexical (no model): Enter pressed in "Quarry: Search Code" before the
//   results arrive opens the top hit, at the definition's name; impl blocks
//   are labelled `impl …` and the detail line is not the doc comment; a
//   query nothing matches says "No results"; Ctrl+T (workspace/symbol)
//   opens a decorated class at its name, not at the decorator; "Quarry:
//   Restart Server" twice says "starting" each time and leaves exactly one
//   "Quarry" output channel;
// - hybrid (the installed model; skipped with a message when there is none,
//   failed when QUARRY_REQUIRE_MODEL=1): the status bar says "starting"
//   first, then counts the coverage up to "hybrid", a natural-language
//   query's top hit is the one only the dense branch finds, the picker
//   shows a one-word query's hits in the server's order (the order `quarry
//   search` prints for the same index), and an identifier that exists
//   nowhere says "No match … showing nearest by meaning";
// - restricted (Restricted Mode): the status bar and the commands say why
//   the server does not start.
// Screenshots of each step go to $E2E_ARTIFACTS (default e2e/artifacts).
//
//   node e2e/run.js CODE_SERVER [QUARRY_BIN]
//
// QUARRY_BIN defaults to $QUARRY_BIN, then `quarry` on PATH, then the
// repository's target/release, then target/debug.
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

/** The quarry binary a user would run: argument, $QUARRY_BIN, PATH, then
 * the repository's release and debug builds. */
function findQuarry() {
  const given = process.argv[3] || process.env.QUARRY_BIN;
  if (given) return fs.existsSync(given) ? path.resolve(given) : null;
  const candidates = (process.env.PATH || "")
    .split(path.delimiter)
    .filter(Boolean)
    .map((dir) => path.join(dir, "quarry"))
    .concat([path.join(repo, "target", "release", "quarry"), path.join(repo, "target", "debug", "quarry")]);
  return candidates.find((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  }) || null;
}

const quarryBin = findQuarry();
if (!codeServer || !quarryBin) {
  console.error(
    "e2e: no quarry binary (looked at the argument, $QUARRY_BIN, PATH, target/release, target/debug): " +
      "build it with `cargo build` first\nusage: node e2e/run.js CODE_SERVER [QUARRY_BIN]",
  );
  process.exit(2);
}
console.log(`e2e: quarry binary ${quarryBin}`);
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

/** Runs a command to its end; resolves with its stdout when `capture`,
 * which otherwise goes to this process's output. */
function run(cmd, args, env, { capture = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ["ignore", capture ? "pipe" : "inherit", "inherit"] });
    let out = "";
    child.stdout?.on("data", (d) => (out += d));
    child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}`))));
  });
}

/** Whether quarry finds a usable model the way it always does (QUARRY_MODEL,
 * the user data dir, the Hugging Face cache): asked of `quarry status`. */
async function modelInstalled() {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "quarry-e2e-model-"));
  try {
    const status = JSON.parse(
      await run(
        quarryBin,
        ["status", "--json", "--root", path.join(repo, "tests", "fixtures", "polyglot"), "--cache-dir", scratch],
        process.env,
        { capture: true },
      ),
    );
    return Boolean(status.model) && !status.model_error;
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

// Labels carry zero-width spaces (they keep VS Code from re-sorting).
const plain = (text) => text.replace(/\u200B/g, "");
const spaced = (text) =>
  new RegExp([...text].map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("\u200B?"));

const statusText = (page) =>
  page.$$eval(".statusbar-item", (els) => els.map((e) => e.textContent || "")).catch(() => []);

/** Runs one code-server session on a fresh copy of the fixture. */
async function session(name, { model, trusted = true }, steps) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), `quarry-e2e-${name}-`));
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
      // Trusted: trust off altogether. Untrusted: trust on, and no prompt,
      // so the never-trusted folder opens in Restricted Mode.
      "security.workspace.trust.enabled": !trusted,
      "security.workspace.trust.startupPrompt": "never",
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
    // Without a model the lookup is pointed at nothing; with one, quarry
    // finds it as it does for a user.
    ...(model ? {} : { QUARRY_MODEL: path.join(work, "no-model") }),
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
  let failed = true;
  try {
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const shot = async (step) => page.screenshot({ path: path.join(artifacts, `${name}-${step}.png`) });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: 60_000 });
    await steps({ page, shot, env, workspace });
    failed = false;
  } catch (error) {
    if (browser) {
      const page = browser.contexts()[0]?.pages()[0];
      if (page) {
        await page.screenshot({ path: path.join(artifacts, `${name}-failure.png`) }).catch(() => {});
        console.error("status bar:", JSON.stringify(await statusText(page)));
      }
    }
    throw error;
  } finally {
    if (browser) await browser.close();
    server.kill();
    if (failed) {
      console.error(`kept ${work} for inspection`);
    } else {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }
}

async function waitForStatus(page, pattern, timeout) {
  await page.waitForFunction(
    (source) => [...document.querySelectorAll(".statusbar-item")].some((e) => new RegExp(source).test(e.textContent || "")),
    pattern.source,
    { timeout },
  );
}

/** Runs the command palette's command titled `title`. */
async function palette(page, title) {
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget input", { timeout: 10_000 });
  await page.keyboard.type(title);
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title });
  await row.first().waitFor({ timeout: 10_000 });
  await row.first().click();
}

/** Opens "Quarry: Search Code" and types `query`. */
async function searchCode(page, query) {
  await palette(page, "Quarry: Search Code");
  await page.waitForFunction(
    () => (document.querySelector(".quick-input-widget input")?.getAttribute("placeholder") || "").includes("Search code"),
    null,
    { timeout: 10_000 },
  );
  await page.keyboard.type(query);
}

/** The picker's rows as shown, top to bottom: [label, description, whole row text]. */
async function pickerRows(page) {
  return page.$$eval(".quick-input-list .monaco-list-row", (rows) =>
    rows
      .map((row) => ({
        top: parseFloat(row.style.top || "0"),
        label: row.querySelector(".label-name")?.textContent || "",
        description: row.querySelector(".label-description")?.textContent || "",
        text: row.textContent || "",
      }))
      .sort((a, b) => a.top - b.top)
      .map((r) => [r.label, r.description, r.text]),
  );
}

/** Waits until the picker's title matches `pattern`; returns the title. */
async function waitForTitle(page, pattern, timeout) {
  await page.waitForFunction(
    (source) => new RegExp(source).test(document.querySelector(".quick-input-title")?.textContent || ""),
    pattern.source,
    { timeout },
  );
  return page.$eval(".quick-input-title", (e) => e.textContent || "");
}

/** The names in "Output: Show Output Channels...", one per channel. */
async function outputChannels(page) {
  await palette(page, "Output: Show Output Channels");
  // The channel list replaces the palette's rows; Quarry's own is one of them.
  await page.waitForFunction(
    () => [...document.querySelectorAll(".quick-input-list .monaco-list-row .label-name")]
      .some((e) => (e.textContent || "").trim() === "Quarry"),
    null,
    { timeout: 10_000 },
  );
  await page.waitForTimeout(300);
  return page.$$eval(".quick-input-list .monaco-list-row .label-name", (els) =>
    els.map((e) => (e.textContent || "").trim()),
  );
}

async function activeLine(page) {
  const items = await statusText(page);
  const found = items.map((t) => /Ln (\d+),/.exec(t)).find(Boolean);
  return found ? Number(found[1]) : null;
}

async function lexicalPass() {
  await session("lexical", { model: false }, async ({ page, shot }) => {
    // The status bar item appears once the server answers quarry/status.
    await waitForStatus(page, /Quarry lexical-only · [1-9]\d* files/, 60_000);
    await shot("1-workbench");

    // Enter right after typing, before any result is in: remembered, and
    // the top hit opens when the results arrive.
    await searchCode(page, "GraphStore::insert");
    await page.keyboard.press("Enter");
    await page.locator(".tabs-container .tab", { hasText: "graph_store.rs" }).first().waitFor({ timeout: 15_000 });
    // Line 55 holds `pub fn insert`; the doc comment above it is line 54.
    await waitForStatus(page, /Ln 55, Col 12/, 15_000);
    await shot("2-enter-before-results-opened-at-the-name");

    // Impl blocks are labelled as such, and the detail line is the match
    // or the signature, not the doc comment the chunk starts with.
    await searchCode(page, "GraphStore");
    await page
      .locator(".quick-input-list .monaco-list-row", { hasText: spaced("impl") })
      .first()
      .waitFor({ timeout: 30_000 });
    const rows = await pickerRows(page);
    const labels = rows.map(([label]) => plain(label).trim());
    if (!labels.some((l) => /^impl\b.*GraphStore/.test(l))) {
      throw new Error(`"GraphStore": no impl row labelled "impl …": ${JSON.stringify(labels)}`);
    }
    const seen = new Set(rows.map(([label, description]) => `${plain(label)} ${description}`));
    if (seen.size !== rows.length) throw new Error(`"GraphStore": two identical rows: ${JSON.stringify(rows)}`);
    const insert = rows.find(([label]) => plain(label).trim().endsWith("GraphStore::insert"));
    if (insert && /Inserts a node/.test(insert[2])) {
      throw new Error(`"GraphStore": GraphStore::insert's detail is its doc comment: ${JSON.stringify(insert)}`);
    }
    await shot("3-impl-labels-and-details");
    console.log(`e2e lexical: "GraphStore" rows ${labels.slice(0, 6).join(", ")}`);
    await page.keyboard.press("Escape");

    // A name that exists nowhere: said, not an empty list without a word.
    await searchCode(page, "quokka_trampoline_gauge");
    const title = await waitForTitle(page, /No (results|match) for 'quokka_trampoline_gauge'/, 30_000);
    await shot("4-no-match");
    console.log(`e2e lexical: no-match title "${title}"`);
    await page.keyboard.press("Escape");

    // Go to Symbol in Workspace (Ctrl+T), served by workspace/symbol: the
    // decorated class opens at `class RetryPolicy` (line 14), not at
    // `@dataclass` (line 13).
    await page.keyboard.press("Control+T");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10_000 });
    await page.keyboard.type("RetryPolicy");
    const symbol = page.locator(".quick-input-list .monaco-list-row", { hasText: "RetryPolicy" });
    await symbol.first().waitFor({ timeout: 30_000 });
    await shot("5-workspace-symbols");
    await page.keyboard.press("Enter");
    await page.locator(".tabs-container .tab.active", { hasText: "retry_policy.py" }).first().waitFor({ timeout: 15_000 });
    await waitForStatus(page, /Ln 14, Col 7/, 15_000);
    await shot("6-symbol-opened-at-the-name");

    // Two restarts: each says "starting", and one output channel remains.
    for (const n of [1, 2]) {
      await palette(page, "Quarry: Restart Server");
      await waitForStatus(page, /Quarry starting…/, 15_000);
      await shot(`7-restart-${n}-starting`);
      await waitForStatus(page, /Quarry lexical-only · [1-9]\d* files/, 60_000);
    }
    const channels = await outputChannels(page);
    await shot("8-output-channels-after-two-restarts");
    const quarry = channels.filter((c) => c === "Quarry").length;
    if (quarry !== 1) throw new Error(`${quarry} "Quarry" output channels after two restarts: ${JSON.stringify(channels)}`);
    await page.keyboard.press("Escape");
  });
  console.log(
    "e2e lexical: Enter before the results opened graph_store.rs at 55:12 (the name); Ctrl+T opened RetryPolicy at 14:7; " +
      "one Quarry output channel after two restarts",
  );
}

async function hybridPass() {
  await session("hybrid", { model: true }, async ({ page, shot, env, workspace }) => {
    // "Starting" while the server loads its index and the model (not
    // "lexical-only · 0 files"), then the coverage counts up to full hybrid.
    await waitForStatus(page, /Quarry starting…/, 60_000);
    await shot("0-status-starting");
    await waitForStatus(page, /Quarry hybrid( \d+%)? · [1-9]\d* files/, 60_000);
    await shot("1-status-while-embedding");
    await waitForStatus(page, /Quarry hybrid · [1-9]\d* files/, 240_000);

    // A concept query whose answer only the dense branch ranks first.
    const concept = "probabilistic set membership";
    await searchCode(page, concept);
    const bloom = page.locator(".quick-input-list .monaco-list-row", { hasText: spaced("BloomFilter") });
    await bloom.first().waitFor({ timeout: 30_000 });
    const rows = await pickerRows(page);
    if (!plain(rows[0][0]).endsWith("quarry::filters::BloomFilter")) {
      throw new Error(`"${concept}": the top hit is ${JSON.stringify(rows[0])}, not BloomFilter`);
    }
    await shot("2-concept-query");
    await page.keyboard.press("Enter");
    await page.locator(".tabs-container .tab.active", { hasText: "bloom_filter.cpp" }).first().waitFor({ timeout: 15_000 });
    await shot("3-concept-opened");
    console.log(`e2e hybrid: "${concept}" -> ${plain(rows[0][0])} (${rows[0][1]}), opened at line ${await activeLine(page)}`);

    // A one-word query: the picker keeps the server's order although later
    // labels contain the typed word and earlier ones do not (VS Code's own
    // sort would pull those up).
    const word = "status";
    const printed = JSON.parse(
      await run(quarryBin, ["search", "--json", "--root", workspace, "--limit", "10", word], env, { capture: true }),
    );
    if (printed.mode !== "hybrid") throw new Error(`quarry search ran ${printed.mode}: ${printed.reason}`);
    const expected = printed.hits.map((h) => h.symbol);
    const lower = expected.map((s) => s.toLowerCase().includes(word));
    if (!lower.some((has, i) => has && lower.slice(0, i).some((h) => !h))) {
      throw new Error(`"${word}" no longer tests the order: ${JSON.stringify(expected)}`);
    }
    await page.keyboard.press("Escape");
    await searchCode(page, word);
    await page
      .locator(".quick-input-list .monaco-list-row", { hasText: spaced(expected[0]) })
      .first()
      .waitFor({ timeout: 30_000 });
    const shown = (await pickerRows(page)).map(([label]) => plain(label).trim());
    const n = Math.min(shown.length, expected.length, 6);
    for (let i = 0; i < n; i++) {
      if (!shown[i].endsWith(expected[i])) {
        throw new Error(`"${word}": row ${i + 1} is ${shown[i]}, the server's #${i + 1} is ${expected[i]}\n` +
          `shown ${JSON.stringify(shown)}\nserver ${JSON.stringify(expected)}`);
      }
    }
    await shot("4-one-word-query-in-server-order");
    console.log(`e2e hybrid: "${word}" rows keep the server's order: ${shown.slice(0, n).join(", ")}`);
    await page.keyboard.press("Escape");

    // An identifier that exists nowhere: the nearest by meaning, said so.
    await searchCode(page, "quokka_trampoline_gauge");
    const title = await waitForTitle(page, /No match for 'quokka_trampoline_gauge' — showing nearest by meaning/, 30_000);
    await page.waitForSelector(".quick-input-list .monaco-list-row", { timeout: 10_000 });
    await shot("5-no-match-nearest-by-meaning");
    console.log(`e2e hybrid: no-match title "${title}"`);
  });
}

async function restrictedPass() {
  await session("restricted", { model: false, trusted: false }, async ({ page, shot }) => {
    await waitForStatus(page, /Quarry: Restricted Mode/, 60_000);
    await palette(page, "Quarry: Search Code");
    const toast = page.locator(".notifications-toasts", { hasText: "does not start in Restricted Mode" });
    await toast.first().waitFor({ timeout: 10_000 });
    await shot("1-restricted-mode-says-why");
  });
  console.log("e2e restricted: the status bar and Quarry: Search Code say why the server does not start");
}

async function main() {
  await lexicalPass();
  await restrictedPass();
  if (await modelInstalled()) {
    await hybridPass();
  } else if (process.env.QUARRY_REQUIRE_MODEL === "1") {
    throw new Error("QUARRY_REQUIRE_MODEL=1 but no model is installed: run scripts/fetch-model.sh");
  } else {
    console.log("e2e hybrid: skipped, no embedding model installed (scripts/fetch-model.sh installs it)");
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
