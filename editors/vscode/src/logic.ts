// Pure logic of the extension: no `vscode` import, so `node --test` can
// exercise it. The glue in extension.ts turns these values into UI.

/** A hit as `quarry/search` returns it. */
export interface SearchHit {
  uri: string;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  /** Where to open: the symbol's name, or the phrase (older servers omit it). */
  selectionRange?: { start: { line: number; character: number }; end: { line: number; character: number } };
  symbol: string;
  kind: string;
  language: string;
  score: number;
  sources: string[];
  snippet: string;
}

export interface SearchResult {
  mode: "hybrid" | "partial" | "lexical";
  reason?: string;
  coverage: { embedded: number; total: number };
  hits: SearchHit[];
}

export interface Settings {
  serverPath: string;
  modelPath: string;
  limit: number;
  perFileCap: number;
  exclude: string[];
}

/** The codicon shown for a definition kind. */
export function kindIcon(kind: string): string {
  const icons: Record<string, string> = {
    function: "symbol-function",
    method: "symbol-method",
    class: "symbol-class",
    struct: "symbol-struct",
    enum: "symbol-enum",
    trait: "symbol-interface",
    interface: "symbol-interface",
    impl: "symbol-class",
    module: "symbol-module",
    constant: "symbol-constant",
    static: "symbol-constant",
    variable: "symbol-variable",
    type: "symbol-type-parameter",
    macro: "symbol-misc",
    field: "symbol-field",
    section: "markdown",
    lines: "file-text",
  };
  return icons[kind] ?? "symbol-misc";
}

/** `uri` relative to the first workspace folder that holds it, else its path. */
export function relativePath(uri: string, folders: string[]): string {
  for (const folder of folders) {
    const base = folder.endsWith("/") ? folder : folder + "/";
    if (uri.startsWith(base)) {
      return decodeURIComponent(uri.slice(base.length));
    }
  }
  return decodeURIComponent(uri.replace(/^file:\/\//, ""));
}

/** The first line of a snippet that has text, trimmed and shortened. */
export function oneLine(snippet: string, max = 120): string {
  const line = snippet.split("\n").map((l) => l.trim()).find((l) => l.length > 0) ?? "";
  return line.length > max ? line.slice(0, max - 1) + "…" : line;
}

/** What a QuickPick item shows for a hit. */
export interface PickItem {
  label: string;
  description: string;
  detail: string;
  icon: string;
}

/**
 * `text` with a zero-width space between its characters. VS Code's
 * QuickPick re-sorts items whose label matches the typed text (there is no
 * stable API to keep an extension's order); such a label never matches, so
 * with `alwaysShow` the items stay in the server's ranking.
 */
export function unmatchable(text: string): string {
  return [...text].join("\u200B");
}

/** The picker's one-line title for a search result. */
export function pickTitle(result: SearchResult): string {
  if (result.mode === "hybrid") {
    return "Quarry · hybrid";
  }
  if (result.mode === "partial") {
    const { embedded, total } = result.coverage;
    return `Quarry · hybrid ${total > 0 ? Math.floor((embedded * 100) / total) : 0}% embedded`;
  }
  return "Quarry · lexical-only (see the status bar)";
}

export function toPickItem(hit: SearchHit, folders: string[]): PickItem {
  const path = relativePath(hit.uri, folders);
  return {
    label: hit.symbol,
    description: `${path}:${(hit.selectionRange ?? hit.range).start.line + 1} · ${hit.sources.join("+")}`,
    detail: oneLine(hit.snippet),
    icon: kindIcon(hit.kind),
  };
}

/** The tooltip's last line; the status notification leaves it out. */
export const CLICK_HINT = "Click for the status and a Reindex button";

/** The status bar text and tooltip for a `quarry/status` answer. */
export function statusText(status: any): { text: string; tooltip: string } {
  const folders: any[] = Array.isArray(status?.folders) ? status.folders : [];
  const files = folders.reduce((n, f) => n + (f.files ?? 0), 0);
  const chunks = folders.reduce((n, f) => n + (f.chunks ?? 0), 0);
  const embedded = folders.reduce((n, f) => n + (f.embedded ?? 0), 0);
  const ready = folders.length > 0 && folders.every((f) => f.ready);
  const mode = status?.mode === "hybrid" || status?.mode === "partial" ? status.mode : "lexical";
  // While embedding runs, say how far it is: never "hybrid" with the ready
  // icon before every chunk has a vector.
  const percent = chunks > 0 ? Math.floor((embedded * 100) / chunks) : 0;
  const label = mode === "partial" ? `hybrid ${percent}%` : mode === "lexical" ? "lexical-only" : "hybrid";
  const icon = !ready || mode === "partial" ? "$(sync~spin)" : mode === "hybrid" ? "$(search)" : "$(warning)";
  const text = `${icon} Quarry ${label} · ${files} files`;
  const lines = [`Quarry: ${label} search, ${files} files, ${chunks} chunks, ${embedded} embedded`];
  if (mode === "partial") {
    lines.push(status?.reason ?? "embedding in progress");
  }
  if (mode === "lexical") {
    const reason = status?.model?.error ?? "no embedding model";
    lines.push(`Lexical-only: ${reason}`);
  }
  for (const f of folders) {
    if (f.lastError) {
      lines.push(`${f.root}: ${f.lastError}`);
    }
  }
  lines.push(CLICK_HINT);
  return { text, tooltip: lines.join("\n") };
}

/** `initializationOptions` for the server from the extension's settings. */
export function initializationOptions(settings: Settings): Record<string, unknown> {
  const options: Record<string, unknown> = {
    limit: settings.limit,
    perFileCap: settings.perFileCap,
    exclude: settings.exclude,
  };
  if (settings.modelPath.trim() !== "") {
    options.modelPath = settings.modelPath;
  }
  return options;
}

/**
 * Runs `fn` for the latest value only, `ms` after the last call; a new
 * call cancels the pending one (and signals the running one's token).
 */
export class Debouncer<T> {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private generation = 0;

  constructor(private readonly ms: number) {}

  /** Schedules `fn(value, isCurrent)`; `isCurrent()` turns false once superseded. */
  schedule(value: T, fn: (value: T, isCurrent: () => boolean) => void): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    const generation = ++this.generation;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      fn(value, () => generation === this.generation);
    }, this.ms);
  }

  cancel(): void {
    this.generation++;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}
