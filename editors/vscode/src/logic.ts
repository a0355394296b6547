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
  /** The display name (`impl X`, `impl Trait for X` for impl blocks); older servers omit it. */
  label?: string;
  /** The line that matched the query, or the signature; older servers omit it. */
  detail?: string;
}

export interface SearchResult {
  mode: "hybrid" | "partial" | "lexical";
  reason?: string;
  coverage: { embedded: number; total: number };
  hits: SearchHit[];
  /** No chunk matched the query's words or names: the hits are only nearest by meaning. */
  noMatch?: boolean;
  /** "starting" while the server still loads its index (older servers omit it). */
  state?: "starting" | "ready";
  stateReason?: string;
}

/**
 * The extension's settings. `limit` and `perFileCap` always go to the
 * server; the optional ones only when the user set them, so the server's
 * own defaults hold otherwise.
 */
export interface Settings {
  serverPath: string;
  limit: number;
  perFileCap: number;
  modelPath?: string;
  lexicalOnly?: boolean;
  staticTier?: boolean;
  maxSymbols?: number;
  rrfK?: number;
  depth?: number;
  exclude?: string[];
  debounceMs?: number;
  hub?: string[];
  hubRepos?: string[];
  hubRepo?: string;
  hubTimeoutMs?: number;
  hubRetryMs?: number;
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

/** The query as the picker quotes it: one line, shortened. */
function quoted(query: string, max = 60): string {
  const line = query.trim().replace(/\s+/g, " ");
  return `'${line.length > max ? line.slice(0, max - 1) + "…" : line}'`;
}

/** Whether a search answer says the server is still loading (no results yet, not none). */
export function isStarting(result: Partial<SearchResult> | undefined): boolean {
  return result?.state === "starting";
}

/** The picker's one-line title for a search result of `query`. */
export function pickTitle(result: SearchResult, query = ""): string {
  if (isStarting(result)) {
    return `Quarry is starting…${result.stateReason ? ` (${result.stateReason})` : ""}`;
  }
  let mode: string;
  if (result.mode === "hybrid") {
    mode = "Quarry · hybrid";
  } else if (result.mode === "partial") {
    const { embedded, total } = result.coverage ?? { embedded: 0, total: 0 };
    mode = `Quarry · hybrid ${total > 0 ? Math.floor((embedded * 100) / total) : 0}% embedded`;
  } else {
    mode = "Quarry · lexical-only (see the status bar)";
  }
  const hits = Array.isArray(result.hits) ? result.hits.length : 0;
  if (hits === 0) {
    return `${mode} · No results${query.trim() ? ` for ${quoted(query)}` : ""}`;
  }
  if (result.noMatch === true) {
    return `${mode} · No match for ${quoted(query)} — showing nearest by meaning`;
  }
  return mode;
}

export function toPickItem(hit: SearchHit, folders: string[]): PickItem {
  const path = relativePath(hit.uri, folders);
  const label = typeof hit.label === "string" && hit.label.trim() !== "" ? hit.label : hit.symbol;
  const detail = typeof hit.detail === "string" && hit.detail.trim() !== "" ? oneLine(hit.detail) : oneLine(hit.snippet ?? "");
  return {
    label,
    description: `${path}:${(hit.selectionRange ?? hit.range).start.line + 1} · ${(hit.sources ?? []).join("+")}`,
    detail,
    icon: kindIcon(hit.kind),
  };
}

/** The tooltip's last line; the status notification leaves it out. */
export const CLICK_HINT = "Click for the status and a Reindex button";

/**
 * Whether a `quarry/status` answer says the server is still starting.
 * Servers that send `state` say so; older ones are starting while a folder
 * is not loaded yet and has no error.
 */
export function statusStarting(status: any): boolean {
  if (status?.state === "starting") {
    return true;
  }
  if (status?.state === "ready") {
    return false;
  }
  const folders: any[] = Array.isArray(status?.folders) ? status.folders : [];
  return folders.some((f) => !f?.ready && !f?.lastError);
}

/** What the lexical-only tooltip says to do about it. */
export const MODEL_HINT =
  "Set the quarry.modelPath setting to the model's directory (the server also reads --model DIR and QUARRY_MODEL); scripts/fetch-model.sh installs it";

/** The status bar text and tooltip while the server is starting. */
export function startingText(reason?: string): { text: string; tooltip: string } {
  return {
    text: "$(sync~spin) Quarry starting…",
    tooltip: [`Quarry is starting${reason ? `: ${reason}` : ""}`, CLICK_HINT].join("\n"),
  };
}

/** ", committed N s ago" for a folder's `indexAgeSecs`, or nothing. */
export function ageText(seconds: unknown): string {
  return typeof seconds === "number" && Number.isFinite(seconds) ? ` (committed ${Math.round(seconds)} s ago)` : "";
}

/** The status bar text and tooltip for a `quarry/status` answer. */
export function statusText(status: any): { text: string; tooltip: string } {
  if (statusStarting(status)) {
    const reason = typeof status?.stateReason === "string" && status.stateReason ? status.stateReason : "loading the index";
    return startingText(reason);
  }
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
    lines.push(
      /by setting/.test(String(reason))
        ? "Turn off the quarry.lexicalOnly setting for hybrid search"
        : MODEL_HINT,
    );
  }
  for (const f of folders) {
    if (f.role === "reader") {
      lines.push(`${f.root}: reading the index another Quarry process writes${ageText(f.indexAgeSecs)}`);
    }
    if (f.lastError) {
      lines.push(`${f.root}: ${f.lastError}`);
    }
  }
  lines.push(CLICK_HINT);
  return { text, tooltip: lines.join("\n") };
}

/**
 * `initializationOptions` for the server from the extension's settings:
 * `limit` and `perFileCap` always, the rest only when set (an empty
 * `modelPath` or `exclude` and a `depth` of 0 mean the server's default).
 */
export function initializationOptions(settings: Settings): Record<string, unknown> {
  const options: Record<string, unknown> = {
    limit: settings.limit,
    perFileCap: settings.perFileCap,
  };
  if (settings.modelPath !== undefined && settings.modelPath.trim() !== "") {
    options.modelPath = settings.modelPath.trim();
  }
  if (settings.exclude !== undefined && settings.exclude.length > 0) {
    options.exclude = settings.exclude;
  }
  if (settings.depth !== undefined && settings.depth > 0) {
    options.depth = settings.depth;
  }
  if (settings.hub !== undefined && settings.hub.length > 0) {
    options.hub = settings.hub;
  }
  if (settings.hubRepos !== undefined && settings.hubRepos.length > 0) {
    options.hubRepos = settings.hubRepos;
  }
  if (settings.hubRepo !== undefined && settings.hubRepo.trim() !== "") {
    options.hubRepo = settings.hubRepo.trim();
  }
  for (const key of ["lexicalOnly", "staticTier", "maxSymbols", "rrfK", "debounceMs", "hubTimeoutMs", "hubRetryMs"] as const) {
    if (settings[key] !== undefined) {
      options[key] = settings[key];
    }
  }
  return options;
}

/** The JSON-RPC code of "Server not initialized" (a request before `initialize` finished). */
export const SERVER_NOT_INITIALIZED = -32002;

/** Whether `error` is the server's "not initialized" answer. */
export function notInitialized(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === SERVER_NOT_INITIALIZED;
}

/**
 * Where `serverPath` resolves: a path (with a slash) as is, a bare name
 * on `PATH`; `undefined` when there is no executable file there.
 */
export function resolveServer(
  serverPath: string,
  pathEnv: string | undefined,
  isExecutable: (file: string) => boolean,
): string | undefined {
  if (serverPath.includes("/")) {
    return isExecutable(serverPath) ? serverPath : undefined;
  }
  for (const dir of (pathEnv ?? "").split(":")) {
    if (dir !== "") {
      const file = `${dir.replace(/\/$/, "")}/${serverPath}`;
      if (isExecutable(file)) {
        return file;
      }
    }
  }
  return undefined;
}

/**
 * Enter pressed in the picker before its results arrive: remembered, and
 * answered by the first results for the same query (open the top hit),
 * unless the query changed since or nothing matched it.
 */
export class PendingAccept {
  private query: string | undefined;

  /** Enter with no item to accept, while `query` is being searched. */
  remember(query: string): void {
    this.query = query.trim() === "" ? undefined : query;
  }

  /** The typed text changed: an earlier Enter no longer applies. */
  clear(): void {
    this.query = undefined;
  }

  get pending(): boolean {
    return this.query !== undefined;
  }

  /**
   * Results for `query` arrived: whether to open the first hit now. A
   * "starting" answer keeps the Enter for the retry; an empty or no-match
   * answer drops it (nothing the user asked for to open).
   */
  take(query: string, result: SearchResult): boolean {
    if (this.query === undefined || this.query !== query || isStarting(result)) {
      return false;
    }
    this.query = undefined;
    return Array.isArray(result.hits) && result.hits.length > 0 && result.noMatch !== true;
  }
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
