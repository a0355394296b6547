// The Quarry extension: starts `quarry lsp` through vscode-languageclient,
// offers "Quarry: Search Code" (a live QuickPick over `quarry/search`), a
// status bar item from `quarry/status`, "Quarry: Reindex" and "Quarry:
// Restart Server". Workspace symbols (Ctrl+T) and indexing progress come
// through the language client. In Restricted Mode the server does not
// start and every command says why.

import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";
import {
  Debouncer,
  PendingAccept,
  SearchHit,
  SearchResult,
  Settings,
  initializationOptions,
  isStarting,
  notInitialized,
  resolveServer,
  startingText,
  statusText,
  CLICK_HINT,
  toPickItem,
  pickTitle,
  unmatchable,
} from "./logic";

/**
 * The language client, minus the toast it forces on a failed start: the
 * extension shows one message of its own for that (with what to do), and
 * the client's details still go to the output channel.
 */
class QuarryClient extends LanguageClient {
  error(message: string, data?: any, showNotification: boolean | "force" = true): void {
    const startFailure = /couldn't create connection to server/.test(message);
    super.error(message, data, startFailure ? false : showNotification);
  }
}

let client: QuarryClient | undefined;
/** Settles once the current client answered `initialize` (or failed to). */
let clientReady: Promise<boolean> = Promise.resolve(false);
let starting = false;
/** Serializes starts and stops (a restart while one runs waits for it). */
let lifecycle: Promise<void> = Promise.resolve();
let output: vscode.OutputChannel | undefined;
let statusItem: vscode.StatusBarItem | undefined;
let statusTimer: ReturnType<typeof setInterval> | undefined;

const RESTRICTED =
  "Quarry does not start in Restricted Mode: its language server runs the program named by quarry.serverPath " +
  "and reads every file of the workspace to index it. Trust this workspace to search it.";
const MANAGE_TRUST = "Manage Workspace Trust";

/** The value of `quarry.<key>` when the user set it anywhere, else undefined. */
function explicit<T>(config: vscode.WorkspaceConfiguration, key: string): T | undefined {
  const inspected = config.inspect<T>(key);
  const set =
    inspected?.workspaceFolderValue !== undefined ||
    inspected?.workspaceValue !== undefined ||
    inspected?.globalValue !== undefined;
  return set ? config.get<T>(key) : undefined;
}

function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration("quarry");
  return {
    serverPath: config.get<string>("serverPath", "quarry") || "quarry",
    limit: config.get<number>("limit", 30),
    perFileCap: config.get<number>("perFileCap", 0),
    modelPath: explicit<string>(config, "modelPath"),
    lexicalOnly: explicit<boolean>(config, "lexicalOnly"),
    staticTier: explicit<boolean>(config, "staticTier"),
    maxSymbols: explicit<number>(config, "maxSymbols"),
    rrfK: explicit<number>(config, "rrfK"),
    depth: explicit<number>(config, "depth"),
    exclude: explicit<string[]>(config, "exclude"),
    debounceMs: explicit<number>(config, "debounceMs"),
    hub: explicit<string[]>(config, "hub"),
    hubRepos: explicit<string[]>(config, "hubRepos"),
    hubRepo: explicit<string>(config, "hubRepo"),
    hubTimeoutMs: explicit<number>(config, "hubTimeoutMs"),
    hubRetryMs: explicit<number>(config, "hubRetryMs"),
  };
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** One message for a server that cannot start, with what to do about it. */
async function reportStartFailure(context: vscode.ExtensionContext, message: string): Promise<void> {
  output?.appendLine(message);
  const choice = await vscode.window.showErrorMessage(message, "Open README", "Show Output");
  if (choice === "Show Output") {
    output?.show(true);
  } else if (choice === "Open README") {
    // The README ships inside the extension (vsce lowercases its name):
    // no network needed.
    const name = ["readme.md", "README.md"].find((n) => fs.existsSync(path.join(context.extensionPath, n)));
    if (name) {
      const readme = vscode.Uri.joinPath(context.extensionUri, name);
      void vscode.commands.executeCommand("markdown.showPreview", readme);
    }
  }
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  starting = false;
  if (!vscode.workspace.isTrusted) {
    void refreshStatus();
    return;
  }
  const settings = readSettings();
  const command = resolveServer(settings.serverPath, process.env.PATH, isExecutable);
  if (!command) {
    void refreshStatus();
    void reportStartFailure(
      context,
      `Quarry: no quarry binary at "${settings.serverPath}"` +
        (settings.serverPath.includes("/") ? "" : " on PATH") +
        ". Install quarry (cargo install --path server) or set quarry.serverPath.",
    );
    return;
  }
  // No `transport`: the client then talks over stdio without adding
  // `--stdio` to the arguments (the server accepts it anyway).
  const serverOptions: ServerOptions = { command, args: ["lsp"] };
  const clientOptions: LanguageClientOptions = {
    // Every file: search covers the whole workspace, not one language.
    documentSelector: [{ scheme: "file" }],
    initializationOptions: initializationOptions(settings),
    // One channel for the extension's life: every (re)start writes to it.
    outputChannel: output,
  };
  output?.appendLine(`Starting ${command} lsp (initializationOptions ${JSON.stringify(clientOptions.initializationOptions)})`);
  const created = new QuarryClient("quarry", "Quarry", serverOptions, clientOptions);
  client = created;
  starting = true;
  void refreshStatus();
  // A server that exits (and is not restarted by the client) shows at once.
  created.onDidChangeState(() => void refreshStatus());
  const started = created.start().then(
    () => true,
    async (error) => {
      if (client === created) {
        client = undefined;
      }
      // Not awaited: the toast waits for the user, the next start must not.
      void reportStartFailure(
        context,
        `Quarry: cannot start "${command} lsp" (${error instanceof Error ? error.message : error}). ` +
          "See the Quarry output; install quarry or set quarry.serverPath.",
      );
      return false;
    },
  );
  clientReady = started;
  await started;
  starting = false;
  void refreshStatus();
}

async function stopClient(): Promise<void> {
  const running = client;
  client = undefined;
  clientReady = Promise.resolve(false);
  if (running) {
    try {
      // dispose, not stop: it also drops the client's registrations (the
      // server's `quarry.reindex` command) so the next start can make them
      // again. It leaves the output channel alone: the client did not make it.
      await running.dispose();
    } catch (error) {
      output?.appendLine(`Quarry: stopping the server: ${error}`);
    }
  }
}

/** Runs `step` after every start and stop queued before it. */
function queued(step: () => Promise<void>): Promise<void> {
  lifecycle = lifecycle.then(step).catch((error) => {
    output?.appendLine(`Quarry: ${error instanceof Error ? error.message : error}`);
  });
  return lifecycle;
}

function restart(context: vscode.ExtensionContext): Promise<void> {
  return queued(async () => {
    // "Starting" from the moment the old server is asked to stop.
    starting = vscode.workspace.isTrusted;
    void refreshStatus();
    await stopClient();
    await startClient(context);
  });
}

/**
 * The client once it answered `initialize` (after any start or restart
 * under way); undefined if none will.
 */
async function readyClient(): Promise<QuarryClient | undefined> {
  await lifecycle;
  const current = client;
  return current && (await clientReady) && client === current ? current : undefined;
}

async function refreshStatus(): Promise<void> {
  if (!statusItem) {
    return;
  }
  const show = ({ text, tooltip }: { text: string; tooltip: string }, command = "quarry.status") => {
    statusItem!.text = text;
    statusItem!.tooltip = tooltip;
    statusItem!.command = command;
    statusItem!.show();
  };
  if (!vscode.workspace.isTrusted) {
    show({ text: "$(shield) Quarry: Restricted Mode", tooltip: RESTRICTED }, "workbench.trust.manage");
    return;
  }
  if (starting) {
    show(startingText("starting the language server"));
    return;
  }
  const running = client;
  if (!running || !running.isRunning()) {
    show({ text: "$(error) Quarry", tooltip: "The quarry language server is not running\n" + CLICK_HINT });
    return;
  }
  try {
    show(statusText(await running.sendRequest("quarry/status")));
  } catch (error) {
    if (notInitialized(error)) {
      show(startingText("waiting for the server to initialize"));
    }
    // Otherwise the server may be restarting; the next tick tries again.
  }
}

/** In Restricted Mode: says why nothing runs, with the way out. */
function restricted(): boolean {
  if (vscode.workspace.isTrusted) {
    return false;
  }
  void vscode.window.showWarningMessage(RESTRICTED, MANAGE_TRUST).then((choice) => {
    if (choice === MANAGE_TRUST) {
      void vscode.commands.executeCommand("workbench.trust.manage");
    }
  });
  return true;
}

function notRunning(): void {
  void vscode.window.showErrorMessage(
    "Quarry: the language server is not running (see the Quarry output; Quarry: Restart Server starts it again).",
  );
}

function folderUris(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
}

interface HitItem extends vscode.QuickPickItem {
  hit: SearchHit;
}

async function openHit(hit: SearchHit, beside: boolean): Promise<void> {
  const uri = vscode.Uri.parse(hit.uri);
  // At the name (or the phrase), not the doc comment or decorator above it.
  const at = (hit.selectionRange ?? hit.range).start;
  const range = new vscode.Range(at.line, at.character, at.line, at.character);
  await vscode.window.showTextDocument(uri, {
    selection: range,
    viewColumn: beside ? vscode.ViewColumn.Beside : vscode.ViewColumn.Active,
    preserveFocus: false,
  });
}

const PLACEHOLDER = "Search code: a concept, an identifier or a \"quoted phrase\"";
/** How long to wait before asking a starting server again. */
const STARTING_RETRY_MS = 1000;

function searchCommand(): void {
  if (restricted()) {
    return;
  }
  if (!client && !starting) {
    notRunning();
    return;
  }
  const pick = vscode.window.createQuickPick<HitItem>();
  pick.placeholder = PLACEHOLDER;
  // The server ranks: nothing VS Code could match on (see `unmatchable`).
  pick.matchOnDescription = false;
  pick.matchOnDetail = false;
  if (starting) {
    pick.title = "Quarry is starting…";
  }
  const openBeside: vscode.QuickInputButton = {
    iconPath: new vscode.ThemeIcon("split-horizontal"),
    tooltip: "Open to the side",
  };
  const debouncer = new Debouncer<string>(120);
  const pendingAccept = new PendingAccept();
  let source: vscode.CancellationTokenSource | undefined;
  let hidden = false;
  /** The query the shown items answer. */
  let itemsQuery: string | undefined;

  const search = (query: string, isCurrent: () => boolean): void => {
    void (async () => {
      source?.cancel();
      const mine = (source = new vscode.CancellationTokenSource());
      let retry = false;
      try {
        // Requests wait for `initialize`: one sent before it finished would
        // get "Server not initialized".
        const running = await readyClient();
        if (!isCurrent() || hidden) {
          return;
        }
        if (!running) {
          pick.title = "Quarry: the language server is not running";
          return;
        }
        const result: SearchResult = await running.sendRequest(
          "quarry/search",
          { query, limit: readSettings().limit },
          mine.token,
        );
        if (!isCurrent() || hidden) {
          return;
        }
        pick.title = pickTitle(result, query);
        if (isStarting(result)) {
          // The index is still loading: say so, and ask again shortly.
          pick.items = [];
          itemsQuery = undefined;
          retry = true;
          return;
        }
        const folders = folderUris();
        pick.items = (result.hits ?? []).map((hit) => {
          const item = toPickItem(hit, folders);
          return {
            label: `$(${item.icon}) ${unmatchable(item.label)}`,
            description: item.description,
            detail: item.detail,
            hit,
            buttons: [openBeside],
            alwaysShow: true,
          };
        });
        itemsQuery = query;
        if (pendingAccept.take(query, result)) {
          pick.hide();
          void openHit(result.hits[0], false);
        }
      } catch (error) {
        if (!isCurrent() || hidden || error instanceof vscode.CancellationError) {
          return;
        }
        if (notInitialized(error)) {
          pick.title = "Quarry is starting…";
          retry = true;
        } else {
          pick.title = `Quarry: ${error instanceof Error ? error.message : error}`;
        }
      } finally {
        if (isCurrent() && !hidden) {
          pick.busy = retry;
          if (retry) {
            setTimeout(() => {
              if (isCurrent() && !hidden) {
                search(query, isCurrent);
              }
            }, STARTING_RETRY_MS);
          }
        }
      }
    })();
  };

  pick.onDidChangeValue((value) => {
    source?.cancel();
    pendingAccept.clear();
    if (value.trim() === "") {
      debouncer.cancel();
      pick.items = [];
      itemsQuery = undefined;
      pick.busy = false;
      pick.title = undefined;
      return;
    }
    pick.busy = true;
    debouncer.schedule(value, search);
  });
  pick.onDidAccept(() => {
    const item = pick.selectedItems[0] ?? pick.activeItems[0];
    // Enter before the results for the typed text came (no items, or the
    // previous query's with the first one still active): open the first
    // hit when they do. An item the user moved to opens now.
    const stale = itemsQuery !== pick.value && (!item || item === pick.items[0]);
    if (pick.busy && stale) {
      pendingAccept.remember(pick.value);
    } else if (item) {
      pick.hide();
      void openHit(item.hit, false);
    }
  });
  pick.onDidTriggerItemButton((event) => {
    pick.hide();
    void openHit(event.item.hit, true);
  });
  pick.onDidHide(() => {
    hidden = true;
    debouncer.cancel();
    source?.cancel();
    pick.dispose();
  });
  pick.show();
}

/**
 * "Quarry: Reindex". The language client registers the server's
 * `quarry.reindex` (from its executeCommandProvider) as a VS Code command
 * that forwards to `workspace/executeCommand`; this runs it.
 */
async function reindexCommand(): Promise<void> {
  if (restricted()) {
    return;
  }
  if (!(await readyClient())) {
    notRunning();
    return;
  }
  await vscode.commands.executeCommand("quarry.reindex");
  void vscode.window.setStatusBarMessage("Quarry: reindexing", 3000);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Quarry");
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  statusItem.command = "quarry.status";
  context.subscriptions.push(
    output,
    statusItem,
    vscode.commands.registerCommand("quarry.search", searchCommand),
    vscode.commands.registerCommand("quarry.reindexWorkspace", reindexCommand),
    vscode.commands.registerCommand("quarry.restart", async () => {
      if (!restricted()) {
        await restart(context);
      }
    }),
    vscode.commands.registerCommand("quarry.showOutput", () => output?.show(true)),
    vscode.commands.registerCommand("quarry.status", async () => {
      if (restricted()) {
        return;
      }
      await refreshStatus();
      // The tooltip without its "click" hint: the button is the action.
      const message = String(statusItem?.tooltip ?? "Quarry")
        .split("\n")
        .filter((line) => line !== CLICK_HINT)
        .join("\n");
      const choice = await vscode.window.showInformationMessage(message, "Reindex", "Restart", "Show Output");
      if (choice === "Reindex") {
        await reindexCommand();
      } else if (choice === "Restart") {
        await restart(context);
      } else if (choice === "Show Output") {
        output?.show(true);
      }
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("quarry")) {
        await restart(context);
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart(context)),
  );
  statusTimer = setInterval(() => void refreshStatus(), 3000);
  context.subscriptions.push({ dispose: () => statusTimer && clearInterval(statusTimer) });
  await queued(() => startClient(context));
}

export async function deactivate(): Promise<void> {
  await queued(stopClient);
}
