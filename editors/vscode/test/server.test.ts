// Drives the real `quarry lsp` with vscode-jsonrpc (the protocol layer the
// extension's language client uses) on a temp copy of the fixture.

import { test } from "node:test";
import * as assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import { SearchResult, notInitialized, pickTitle, statusText, toPickItem } from "../src/logic";

const repo = path.resolve(__dirname, "..", "..", "..", "..");

function quarryBinary(): string {
  const candidates = [
    process.env.QUARRY_BIN,
    path.join(repo, "target", "debug", "quarry"),
    path.join(repo, "target", "release", "quarry"),
  ].filter((p): p is string => !!p);
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) {
    throw new Error(`no quarry binary (tried ${candidates.join(", ")}); run cargo build first`);
  }
  return found;
}

test("quarry lsp answers quarry/search and workspace/symbol", { timeout: 120_000 }, async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "quarry-vscode-"));
  const root = path.join(work, "root");
  fs.cpSync(path.join(repo, "tests", "fixtures", "polyglot"), root, { recursive: true });
  const child = spawn(quarryBinary(), ["lsp"], {
    env: { ...process.env, XDG_CACHE_HOME: path.join(work, "cache"), QUARRY_MODEL: path.join(work, "none") },
    stdio: ["pipe", "pipe", "ignore"],
  });
  const connection = createMessageConnection(
    new StreamMessageReader(child.stdout!),
    new StreamMessageWriter(child.stdin!),
  );
  let ended!: () => void;
  const indexed = new Promise<void>((resolve) => (ended = resolve));
  connection.onRequest("window/workDoneProgress/create", () => null);
  connection.onRequest("client/registerCapability", () => null);
  connection.onNotification("$/progress", (params: any) => {
    if (params?.value?.kind === "end") {
      ended();
    }
  });
  connection.listen();
  try {
    // Before `initialize`: answered, or an error the extension recognises
    // (it waits for the client to be ready, and says "starting" if it
    // ever gets one).
    const early = await connection.sendRequest("quarry/status").then(
      (answer) => ({ answer }),
      (error) => ({ error }),
    );
    assert.ok(
      "answer" in early ? typeof early.answer === "object" : notInitialized(early.error),
      `before initialize: ${JSON.stringify(early)}`,
    );
    const rootUri = pathToFileURL(fs.realpathSync(root)).toString();
    const init: any = await connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: null,
      capabilities: { window: { workDoneProgress: true } },
      workspaceFolders: [{ uri: rootUri, name: "fixture" }],
      initializationOptions: { limit: 10, perFileCap: 2 },
    });
    assert.equal(init.serverInfo.name, "quarry");
    await connection.sendNotification("initialized", {});
    // Right after `initialized` the index is loading: the status says
    // starting (or, on a fast machine, is already ready), never a bare
    // "lexical-only · 0 files".
    const first: any = await connection.sendRequest("quarry/status");
    assert.ok(first.state === "starting" || first.state === "ready", JSON.stringify(first));
    assert.doesNotMatch(statusText(first).text, /· 0 files/);
    await indexed;

    const result: SearchResult = await connection.sendRequest("quarry/search", {
      query: "GraphStore::insert",
      limit: 5,
    });
    assert.equal(result.mode, "lexical");
    const item = toPickItem(result.hits[0], [rootUri]);
    assert.equal(item.label, "GraphStore::insert");
    // The row names the line of the name, not of the doc comment above it.
    assert.match(item.description, /^src\/graph_store\.rs:55 · .*exact/);
    assert.deepEqual(result.hits[0].selectionRange?.start, { line: 54, character: 11 });
    assert.equal(result.noMatch, false);
    assert.equal(result.state, "ready");
    // The detail line is the signature or the matched line, not the doc comment.
    assert.doesNotMatch(item.detail, /^\/\/\//);
    for (let i = 1; i < result.hits.length; i++) {
      assert.ok(result.hits[i].score < result.hits[i - 1].score, "scores fall down the list");
    }

    // Impl blocks are labelled as such.
    const store: SearchResult = await connection.sendRequest("quarry/search", { query: "GraphStore", limit: 10 });
    const labels = store.hits.map((h) => toPickItem(h, [rootUri]).label);
    assert.ok(labels.some((l) => /^impl\b.*GraphStore/.test(l)), JSON.stringify(labels));

    // A name that exists nowhere: said (lexical-only here, so no hits at all).
    const none: SearchResult = await connection.sendRequest("quarry/search", { query: "quokka_trampoline_gauge" });
    assert.equal(none.noMatch, true);
    assert.match(pickTitle(none, "quokka_trampoline_gauge"), /No (results|match) for 'quokka_trampoline_gauge'/);

    const symbols: any[] = await connection.sendRequest("workspace/symbol", { query: "GraphStore" });
    assert.ok(symbols.some((s) => s.name === "GraphStore"), JSON.stringify(symbols.slice(0, 3)));

    const status: any = await connection.sendRequest("quarry/status");
    assert.ok(status.folders[0].files > 10);

    await connection.sendRequest("shutdown");
    await connection.sendNotification("exit");
  } finally {
    connection.dispose();
    child.kill();
    fs.rmSync(work, { recursive: true, force: true });
  }
});
