import { test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  Debouncer,
  PendingAccept,
  SearchHit,
  SearchResult,
  initializationOptions,
  kindIcon,
  notInitialized,
  oneLine,
  relativePath,
  resolveServer,
  statusText,
  toPickItem,
  pickTitle,
  unmatchable,
} from "../src/logic";

const extensionDir = path.resolve(__dirname, "..", "..");
const repo = path.resolve(extensionDir, "..", "..");

const hit = (extra: Partial<SearchHit> = {}): SearchHit => ({
  uri: "file:///w/src/a.rs",
  range: { start: { line: 9, character: 0 }, end: { line: 20, character: 1 } },
  symbol: "CounterWriter",
  kind: "impl",
  language: "rust",
  score: 0.3,
  sources: ["lexical"],
  snippet: "/// Counts bytes.\nimpl<W: Write> Write for CounterWriter<W> {",
  ...extra,
});

test("hits become QuickPick items with path:line, branches and a one-line snippet", () => {
  const item = toPickItem(
    {
      uri: "file:///w/app/src/graph%20store.rs",
      range: { start: { line: 53, character: 4 }, end: { line: 58, character: 5 } },
      symbol: "GraphStore::insert",
      kind: "method",
      language: "rust",
      score: 0.5,
      sources: ["lexical", "symbol", "exact"],
      snippet: "\n    /// Inserts a node.\n    pub fn insert(&mut self) {}",
    },
    ["file:///w/other", "file:///w/app"],
  );
  assert.equal(item.label, "GraphStore::insert");
  assert.equal(item.description, "src/graph store.rs:54 · lexical+symbol+exact");
  assert.equal(item.detail, "/// Inserts a node.");
  assert.equal(item.icon, "symbol-method");
});

test("paths outside every folder stay absolute; unknown kinds get a generic icon", () => {
  assert.equal(relativePath("file:///elsewhere/a.py", ["file:///w"]), "/elsewhere/a.py");
  assert.equal(kindIcon("no-such-kind"), "symbol-misc");
  assert.equal(oneLine("x".repeat(200), 10), "xxxxxxxxx…");
});

test("labels never match the typed text, so the server's order stays", () => {
  assert.equal(unmatchable("abc"), "a\u200Bb\u200Bc");
  assert.ok(!unmatchable("walk_dir").includes("walk"));
  assert.equal(pickTitle({ mode: "hybrid", coverage: { embedded: 5, total: 5 }, hits: [hit()] }), "Quarry · hybrid");
  assert.equal(
    pickTitle({ mode: "partial", coverage: { embedded: 37, total: 100 }, hits: [hit()] }),
    "Quarry · hybrid 37% embedded",
  );
  assert.ok(!pickTitle({ mode: "lexical", reason: "x".repeat(300), coverage: { embedded: 0, total: 1 }, hits: [hit()] }).includes("xxx"));
});

test("status text says hybrid or lexical, with the reason", () => {
  const lexical = statusText({
    mode: "lexical",
    model: { id: null, error: "no embedding model found" },
    folders: [{ root: "/w", ready: true, files: 12, chunks: 130, embedded: 0, lastError: null }],
  });
  assert.match(lexical.text, /Quarry lexical-only · 12 files/);
  assert.match(lexical.tooltip, /Lexical-only: no embedding model found/);
  const hybrid = statusText({
    mode: "hybrid",
    model: { id: "m" },
    folders: [
      { root: "/a", ready: true, files: 2, chunks: 5, embedded: 5 },
      { root: "/b", ready: true, files: 3, chunks: 7, embedded: 7, lastError: "disk full" },
    ],
  });
  assert.match(hybrid.text, /hybrid · 5 files/);
  assert.match(hybrid.tooltip, /12 chunks, 12 embedded/);
  assert.match(hybrid.tooltip, /\/b: disk full/);
  assert.match(statusText({ folders: [{ ready: false }] }).text, /sync~spin/);
  const partial = statusText({
    mode: "partial",
    reason: "embedding in progress: 37 of 100 chunks have vectors",
    model: { id: "m" },
    folders: [{ root: "/a", ready: true, files: 2, chunks: 100, embedded: 37 }],
  });
  assert.match(partial.text, /sync~spin\) Quarry hybrid 37% · 2 files/);
  assert.match(partial.tooltip, /37 of 100 chunks/);
  // A second Quarry process on the workspace: this one reads its index.
  const reader = statusText({
    mode: "hybrid",
    model: { id: "m" },
    folders: [{ root: "/a", ready: true, files: 2, chunks: 5, embedded: 5, role: "reader", indexAgeSecs: 3.4 }],
  });
  assert.match(reader.tooltip, /\/a: reading the index another Quarry process writes \(committed 3 s ago\)/);
  assert.doesNotMatch(hybrid.tooltip, /another Quarry process/);
});

test("settings map to initializationOptions: limit and perFileCap always, the rest when set", () => {
  const base = { serverPath: "quarry", limit: 30, perFileCap: 0 };
  assert.deepEqual(initializationOptions(base), { limit: 30, perFileCap: 0 });
  // Empty values mean the server's default: not sent.
  assert.deepEqual(initializationOptions({ ...base, modelPath: " ", exclude: [], depth: 0 }), { limit: 30, perFileCap: 0 });
  assert.deepEqual(
    initializationOptions({
      ...base,
      perFileCap: 3,
      modelPath: "/m",
      lexicalOnly: true,
      staticTier: false,
      maxSymbols: 50,
      rrfK: 20,
      depth: 80,
      exclude: ["vendor/**"],
      debounceMs: 300,
      hub: ["postgres://q@hub/db"],
      hubRepos: ["myorg/*"],
      hubRepo: " app ",
      hubRetryMs: 1000,
    }),
    {
      limit: 30,
      perFileCap: 3,
      modelPath: "/m",
      lexicalOnly: true,
      staticTier: false,
      maxSymbols: 50,
      rrfK: 20,
      depth: 80,
      exclude: ["vendor/**"],
      debounceMs: 300,
      hub: ["postgres://q@hub/db"],
      hubRepos: ["myorg/*"],
      hubRepo: "app",
      hubRetryMs: 1000,
    },
  );
  // An empty hub list or repository name means none.
  assert.deepEqual(initializationOptions({ ...base, hub: [], hubRepos: [], hubRepo: "" }), { limit: 30, perFileCap: 0 });
});

test("package.json exposes every server setting, perFileCap 0 by default, and Restricted Mode", () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(extensionDir, "package.json"), "utf8"));
  const properties = manifest.contributes.configuration.properties;
  // The keys `Settings::from_options` reads, from the server's source.
  const source = fs.readFileSync(path.join(repo, "server", "src", "lsp", "settings.rs"), "utf8");
  const keys = [...source.matchAll(/^\s*"(\w+)" =>/gm)].map((m) => m[1]);
  assert.ok(keys.length >= 10 && keys.includes("perFileCap"), `keys read from settings.rs: ${keys}`);
  for (const key of keys) {
    assert.ok(properties[`quarry.${key}`], `quarry.${key} is not a setting`);
    const described = properties[`quarry.${key}`].markdownDescription ?? properties[`quarry.${key}`].description;
    assert.ok(described && described.length > 20, `quarry.${key} has no real description`);
  }
  const cap = properties["quarry.perFileCap"];
  assert.equal(cap.default, 0);
  assert.match(cap.markdownDescription, /before other files get a turn/);
  assert.match(cap.markdownDescription, /backfill only when no other file has any left/);
  assert.match(cap.markdownDescription, /`0`: no hard cap/);
  const untrusted = manifest.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, "limited");
  assert.match(untrusted.description, /Restricted Mode/);
  assert.ok(!/example\.invalid/.test(JSON.stringify(manifest.repository ?? "")), "placeholder repository URL");
  // Every command the extension registers is contributed, and back.
  const ext = fs.readFileSync(path.join(extensionDir, "src", "extension.ts"), "utf8");
  const registered = [...ext.matchAll(/registerCommand\("([\w.]+)"/g)].map((m) => m[1]).sort();
  assert.deepEqual(manifest.contributes.commands.map((c: any) => c.command).sort(), registered);
});

test("the lexical-only tooltip names the quarry.modelPath setting", () => {
  const { tooltip } = statusText({
    state: "ready",
    mode: "lexical",
    model: { id: null, error: "no embedding model found (searched: x); pass --model DIR / set QUARRY_MODEL" },
    folders: [{ root: "/w", ready: true, files: 1, chunks: 1, embedded: 0 }],
  });
  assert.match(tooltip, /quarry\.modelPath/);
  const bySetting = statusText({
    mode: "lexical",
    model: { id: null, error: "lexical-only by setting" },
    folders: [{ root: "/w", ready: true, files: 1, chunks: 1, embedded: 0 }],
  });
  assert.match(bySetting.tooltip, /quarry\.lexicalOnly/);
});

test("while the server starts the status says starting, not lexical-only with 0 files", () => {
  const starting = statusText({
    state: "starting",
    stateReason: "loading the embedding model",
    mode: "lexical",
    model: { id: null, error: "not loaded yet" },
    folders: [{ root: "/w", ready: false }],
  });
  assert.equal(starting.text, "$(sync~spin) Quarry starting…");
  assert.match(starting.tooltip, /loading the embedding model/);
  assert.ok(!/lexical|0 files/.test(starting.text));
  // An older server (no `state`): a folder not loaded yet and without an
  // error is starting; one that failed is not.
  assert.match(statusText({ mode: "lexical", folders: [{ root: "/w", ready: false }] }).text, /starting/);
  assert.doesNotMatch(
    statusText({ mode: "lexical", folders: [{ root: "/w", ready: false, lastError: "disk full" }] }).text,
    /starting/,
  );
  // `state: "ready"` is believed.
  assert.doesNotMatch(statusText({ state: "ready", mode: "lexical", folders: [] }).text, /starting/);
});


test("rows use the server's label and detail, falling back to symbol and snippet", () => {
  const labelled = toPickItem(
    hit({ label: "impl Write for CounterWriter", detail: "    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {" }),
    ["file:///w"],
  );
  assert.equal(labelled.label, "impl Write for CounterWriter");
  assert.equal(labelled.detail, "fn write(&mut self, buf: &[u8]) -> io::Result<usize> {");
  const old = toPickItem(hit(), ["file:///w"]);
  assert.equal(old.label, "CounterWriter");
  assert.equal(old.detail, "/// Counts bytes.");
  assert.equal(toPickItem(hit({ label: "", detail: "  " }), []).label, "CounterWriter");
});

test("the picker says no match, no results and starting", () => {
  const result = (extra: Partial<SearchResult>): SearchResult => ({
    mode: "hybrid",
    coverage: { embedded: 5, total: 5 },
    hits: [hit()],
    ...extra,
  });
  assert.equal(
    pickTitle(result({ noMatch: true }), "quokka_trampoline_gauge"),
    "Quarry · hybrid · No match for 'quokka_trampoline_gauge' — showing nearest by meaning",
  );
  assert.equal(pickTitle(result({ noMatch: false }), "CounterWriter"), "Quarry · hybrid");
  assert.equal(pickTitle(result({ hits: [], noMatch: true }), "quokka"), "Quarry · hybrid · No results for 'quokka'");
  assert.match(
    pickTitle(result({ mode: "lexical", hits: [], noMatch: true }), "zzz"),
    /lexical-only .*No results for 'zzz'/,
  );
  assert.equal(
    pickTitle(result({ state: "starting", stateReason: "loading the index", hits: [] }), "x"),
    "Quarry is starting… (loading the index)",
  );
  // An older server sends neither field.
  assert.equal(pickTitle({ mode: "hybrid", coverage: { embedded: 1, total: 1 }, hits: [hit()] }, "x"), "Quarry · hybrid");
});

test("Enter before the results opens the first hit when they arrive", () => {
  const result = (extra: Partial<SearchResult> = {}): SearchResult => ({
    mode: "lexical",
    coverage: { embedded: 0, total: 1 },
    hits: [hit()],
    ...extra,
  });
  const pending = new PendingAccept();
  assert.equal(pending.take("q", result()), false, "no Enter, nothing to open");
  pending.remember("q");
  assert.equal(pending.take("other", result()), false, "results of another query");
  assert.equal(pending.take("q", result({ state: "starting", hits: [] })), false, "still starting");
  assert.ok(pending.pending, "kept for the retry");
  assert.equal(pending.take("q", result()), true);
  assert.equal(pending.take("q", result()), false, "once");
  pending.remember("q");
  assert.equal(pending.take("q", result({ noMatch: true })), false, "nothing matched: stay open");
  pending.remember("q");
  pending.clear();
  assert.equal(pending.take("q", result()), false, "typing after Enter drops it");
  pending.remember("q");
  assert.equal(pending.take("q", result({ hits: [] })), false);
});

test("the server binary resolves on PATH or as a path; not-initialized errors are recognised", () => {
  const files = new Set(["/opt/bin/quarry", "/x/quarry"]);
  const exec = (f: string) => files.has(f);
  assert.equal(resolveServer("quarry", "/usr/bin:/opt/bin/", exec), "/opt/bin/quarry");
  assert.equal(resolveServer("quarry", "/usr/bin", exec), undefined);
  assert.equal(resolveServer("/x/quarry", "", exec), "/x/quarry");
  assert.equal(resolveServer("/y/quarry", "/opt/bin", exec), undefined);
  assert.ok(notInitialized({ code: -32002, message: "Server not initialized" }));
  assert.ok(!notInitialized(new Error("x")));
  assert.ok(!notInitialized(undefined));
});

test("the debouncer runs only the latest value and marks superseded runs", async () => {
  const debouncer = new Debouncer<string>(20);
  const ran: string[] = [];
  let stale: (() => boolean) | undefined;
  debouncer.schedule("a", (v) => ran.push(v));
  debouncer.schedule("ab", (v, isCurrent) => {
    ran.push(v);
    stale = isCurrent;
  });
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(ran, ["ab"]);
  assert.equal(stale?.(), true);
  debouncer.schedule("abc", () => ran.push("never"));
  debouncer.cancel();
  assert.equal(stale?.(), false);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(ran, ["ab"]);
});
