import { test } from "node:test";
import * as assert from "node:assert/strict";
import {
  Debouncer,
  initializationOptions,
  kindIcon,
  oneLine,
  relativePath,
  statusText,
  toPickItem,
  pickTitle,
  unmatchable,
} from "../src/logic";

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
  assert.equal(pickTitle({ mode: "hybrid", coverage: { embedded: 5, total: 5 }, hits: [] }), "Quarry · hybrid");
  assert.equal(
    pickTitle({ mode: "partial", coverage: { embedded: 37, total: 100 }, hits: [] }),
    "Quarry · hybrid 37% embedded",
  );
  assert.ok(!pickTitle({ mode: "lexical", reason: "x".repeat(300), coverage: { embedded: 0, total: 1 }, hits: [] }).includes("xxx"));
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
});

test("settings map to initializationOptions", () => {
  const base = { serverPath: "quarry", modelPath: "", limit: 30, perFileCap: 0, exclude: ["vendor"] };
  assert.deepEqual(initializationOptions(base), { limit: 30, perFileCap: 0, exclude: ["vendor"] });
  assert.equal(initializationOptions({ ...base, modelPath: "/m" }).modelPath, "/m");
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
