// The Quarry extension: starts `quarry lsp` through vscode-languageclient,
// offers "Quarry: Search Code" (a live QuickPick over `quarry/search`), a
// status bar item from `quarry/status`, and "Quarry: Reindex". Workspace
// symbols (Ctrl+T) and indexing progress come through the language client.

import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";
import {
  Debouncer,
  SearchHit,
  SearchResult,
  Settings,
  initializationOptions,
  statusText,
  CLICK_HINT,
  toPickItem,
  pickTitle,
  unmatchable,
} from "./logic";

let client: LanguageClient | undefined;
let statusItem: vscode.StatusBarItem | undefined;
let statusTimer: ReturnType<typeof setInterval> | undefined;

function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration("quarry");
  return {
    serverPath: config.get<string>("serverPath", "quarry") || "quarry",
    modelPath: config.get<string>("modelPath", ""),
    limit: config.get<number>("limit", 30),
    perFileCap: config.get<number>("perFileCap", 2),
    exclude: config.get<string[]>("exclude", []),
  };
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const settings = readSettings();
  // No `transport`: the client then talks over stdio without adding
  // `--stdio` to the arguments (the server accepts it anyway).
  const serverOptions: ServerOptions = {
    command: settings.serverPath,
    args: ["lsp"],
  };
  const clientOptions: LanguageClientOptions = {
    // Every file: search covers the whole workspace, not one language.
    documentSelector: [{ scheme: "file" }],
    initializationOptions: initializationOptions(settings),
    outputChannelName: "Quarry",
  };
  client = new LanguageClient("quarry", "Quarry", serverOptions, clientOptions);
  try {
    await client.start();
  } catch (error) {
    client = undefined;
    const choice = await vscode.window.showErrorMessage(
      `Quarry: cannot start "${settings.serverPath} lsp" (${error}). Install quarry or set quarry.serverPath.`,
      "Open README",
    );
    if (choice === "Open README") {
      // The README ships inside the extension (vsce lowercases its name):
      // no network needed.
      const name = ["readme.md", "README.md"].find((n) =>
        fs.existsSync(path.join(context.extensionPath, n)),
      );
      if (name) {
        const readme = vscode.Uri.joinPath(context.extensionUri, name);
        void vscode.commands.executeCommand("markdown.showPreview", readme);
      }
    }
    return;
  }
  void refreshStatus();
}

async function stopClient(): Promise<void> {
  const running = client;
  client = undefined;
  if (running) {
    await running.stop();
  }
}

async function refreshStatus(): Promise<void> {
  if (!statusItem) {
    return;
  }
  if (!client) {
    statusItem.text = "$(error) Quarry";
    statusItem.tooltip = "The quarry language server is not running";
    statusItem.show();
    return;
  }
  try {
    const status = await client.sendRequest("quarry/status");
    const { text, tooltip } = statusText(status);
    statusItem.text = text;
    statusItem.tooltip = tooltip;
    statusItem.show();
  } catch {
    // The server may be restarting; the next tick tries again.
  }
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

function searchCommand(): void {
  if (!client) {
    void vscode.window.showErrorMessage("Quarry: the language server is not running.");
    return;
  }
  const running = client;
  const pick = vscode.window.createQuickPick<HitItem>();
  pick.placeholder = "Search code: a concept, an identifier or a \"quoted phrase\"";
  // The server ranks: nothing VS Code could match on (see `unmatchable`).
  pick.matchOnDescription = false;
  pick.matchOnDetail = false;
  const openBeside: vscode.QuickInputButton = {
    iconPath: new vscode.ThemeIcon("split-horizontal"),
    tooltip: "Open to the side",
  };
  const debouncer = new Debouncer<string>(120);
  let source: vscode.CancellationTokenSource | undefined;
  pick.onDidChangeValue((value) => {
    source?.cancel();
    if (value.trim() === "") {
      debouncer.cancel();
      pick.items = [];
      pick.busy = false;
      return;
    }
    pick.busy = true;
    debouncer.schedule(value, async (query, isCurrent) => {
      source?.cancel();
      source = new vscode.CancellationTokenSource();
      try {
        const result: SearchResult = await running.sendRequest(
          "quarry/search",
          { query, limit: readSettings().limit },
          source.token,
        );
        if (!isCurrent()) {
          return;
        }
        const folders = folderUris();
        pick.items = result.hits.map((hit) => {
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
        pick.title = pickTitle(result);
      } catch (error) {
        if (isCurrent() && !(error instanceof vscode.CancellationError)) {
          pick.title = `Quarry: ${error}`;
        }
      } finally {
        if (isCurrent()) {
          pick.busy = false;
        }
      }
    });
  });
  pick.onDidAccept(() => {
    const item = pick.selectedItems[0];
    if (item) {
      pick.hide();
      void openHit(item.hit, false);
    }
  });
  pick.onDidTriggerItemButton((event) => {
    pick.hide();
    void openHit(event.item.hit, true);
  });
  pick.onDidHide(() => {
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
  if (!client) {
    void vscode.window.showErrorMessage("Quarry: the language server is not running.");
    return;
  }
  await vscode.commands.executeCommand("quarry.reindex");
  void vscode.window.setStatusBarMessage("Quarry: reindexing", 3000);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  statusItem.command = "quarry.status";
  context.subscriptions.push(
    statusItem,
    vscode.commands.registerCommand("quarry.search", searchCommand),
    vscode.commands.registerCommand("quarry.status", async () => {
      await refreshStatus();
      // The tooltip without its "click" hint: the button is the action.
      const message = String(statusItem?.tooltip ?? "Quarry")
        .split("\n")
        .filter((line) => line !== CLICK_HINT)
        .join("\n");
      const choice = await vscode.window.showInformationMessage(message, "Reindex");
      if (choice === "Reindex") {
        await reindexCommand();
      }
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("quarry")) {
        await stopClient();
        await startClient(context);
      }
    }),
  );
  statusTimer = setInterval(() => void refreshStatus(), 3000);
  context.subscriptions.push({ dispose: () => statusTimer && clearInterval(statusTimer) });
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  await stopClient();
}
