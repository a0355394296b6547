-- Quarry for Neovim: starts `quarry lsp` with the built-in client (one per
-- project root) and offers :Quarry search / symbols / status / reindex.
-- The search UI is telescope's when telescope is installed (see
-- lua/quarry/telescope.lua), vim.ui.input + vim.ui.select otherwise.
--
-- Fields of the server's answers that older servers leave out (`state`,
-- `stateReason`, `noMatch`, `label`, `detail`) are read defensively.

local M = {}

M.config = {
  cmd = { "quarry", "lsp" },
  -- Sent as initializationOptions (see the server's README).
  settings = {},
  root_markers = { ".git", ".hg", ".jj", "Cargo.toml", "package.json", "pyproject.toml", "go.mod" },
  limit = 30,
  -- false: never use telescope even when it is installed.
  telescope = true,
  -- How long a request waits for a just-started server (initialize, and
  -- for :Quarry search without telescope, its first index walk).
  start_timeout_ms = 5000,
}

--- What every surface says while the server is not ready yet.
M.STARTING = "Quarry is starting…"

-- LSP's "Server not initialized".
local NOT_INITIALIZED = -32002

local vcs_markers = { ".git", ".hg", ".jj" }
local has_011 = vim.fn.has("nvim-0.11") == 1

--- `client:name(...)` on Neovim 0.11, `client.name(...)` on 0.10.
local function call(client, name, ...)
  if has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

--- A JSON value as a Lua value: `null` (vim.NIL) and "" become nil.
local function value(v)
  if v == vim.NIL or v == "" then
    return nil
  end
  return v
end

--- The project root of a file or folder: the version-control root if there
--- is one, else the outermost folder holding one of `root_markers` (so the
--- crates of a workspace share one server), else the working directory.
local function root_for_dir(dir)
  local vcs = vim.fs.root(dir, vcs_markers)
  if vcs then
    return vcs
  end
  local outermost
  for parent in vim.fs.parents(dir .. "/x") do
    for _, marker in ipairs(M.config.root_markers) do
      if vim.uv.fs_stat(parent .. "/" .. marker) then
        outermost = parent
        break
      end
    end
  end
  return outermost or vim.fn.getcwd()
end

local function root_for(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return root_for_dir(name ~= "" and vim.fs.dirname(name) or vim.fn.getcwd())
end

--- The running quarry clients (of `buf` when given), those whose
--- initialize is still pending included (get_clients leaves them out).
local function clients(buf)
  return vim.lsp.get_clients({ name = "quarry", bufnr = buf, _uninitialized = true })
end

--- A running quarry client whose root holds `path`, if any.
local function client_for_path(path)
  for _, client in ipairs(clients()) do
    local root = client.root_dir
    if root and path ~= "" and (path == root or path:sub(1, #root + 1) == root .. "/") then
      return client
    end
  end
end

--- Starts (or reuses) the client for `root`, attached to `buf` when given.
local function start(root, buf)
  -- An empty Lua table would be sent as `[]`: send `{}`.
  local settings = M.config.settings
  if settings == nil or next(settings) == nil then
    settings = vim.empty_dict()
  end
  local config = {
    name = "quarry",
    cmd = M.config.cmd,
    root_dir = root,
    init_options = settings,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
  }
  if buf then
    return vim.lsp.start(config, { bufnr = buf })
  end
  if has_011 then
    return vim.lsp.start(config, { attach = false })
  end
  return vim.lsp.start_client(config)
end

--- Starts (or reuses) the client for `buf`'s project; returns its id. A
--- file under a root a client already serves joins that client.
function M.attach(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local existing = client_for_path(vim.api.nvim_buf_get_name(buf))
  if existing then
    vim.lsp.buf_attach_client(buf, existing.id)
    return existing.id
  end
  return start(root_for(buf), buf)
end

--- The quarry client for the current buffer; else the one for the current
--- file (started if need be); without a file (an empty buffer, a scratch or
--- health buffer) the one serving the working directory, else any running
--- one, else one started for the working directory's root. Returns nil and
--- why when the server can not start.
function M.client()
  local mine = clients(0)
  if #mine > 0 then
    return mine[1]
  end
  local id
  if vim.bo.buftype == "" and vim.api.nvim_buf_get_name(0) ~= "" then
    id = M.attach(0)
  else
    local cwd = vim.fn.getcwd()
    local running = client_for_path(cwd) or clients()[1]
    if running then
      return running
    end
    id = start(root_for_dir(cwd), nil)
  end
  local client = id and vim.lsp.get_client_by_id(id)
  if not client then
    return nil, "could not start `" .. table.concat(M.config.cmd, " ") .. "` (see :checkhealth quarry)"
  end
  return client
end

--- Waits (up to `ms`) for `client`'s initialize to complete: a request sent
--- before gets "Server not initialized". True once it has.
function M.wait_ready(client, ms)
  if client.initialized then
    return true
  end
  vim.wait(ms or M.config.start_timeout_ms, function()
    return client.initialized == true or call(client, "is_stopped")
  end, 10)
  return client.initialized == true
end

--- A request through `client` once it is initialized: the result, else nil
--- and a message (M.STARTING while the server is not initialized).
function M.request(client, method, params, timeout_ms)
  if not M.wait_ready(client) then
    if call(client, "is_stopped") then
      return nil, "Quarry: the server stopped (see :LspLog)"
    end
    return nil, M.STARTING
  end
  -- Unsaved edits of every attached buffer reach the server first: Neovim
  -- sends pending changes (debounced) only for the current buffer, and
  -- telescope's prompt is the current buffer.
  pcall(function()
    require("vim.lsp._changetracking").flush(client)
  end)
  local response, err = call(client, "request_sync", method, params, timeout_ms or 10000, 0)
  if not response then
    return nil, "Quarry: no answer to " .. method .. " (" .. tostring(err or "the server stopped") .. ")"
  end
  if response.err then
    if response.err.code == NOT_INITIALIZED then
      return nil, M.STARTING
    end
    return nil, "Quarry: " .. tostring(response.err.message)
  end
  return response.result
end

--- `path` cut in the middle to at most `max` characters, keeping its first
--- folder and its file name whole (`src/…/graph_store.rs`).
function M.shorten_path(path, max)
  if #path <= max then
    return path
  end
  local parts = vim.split(path, "/", { plain = true })
  local name = parts[#parts]
  local head = #parts > 1 and parts[1] or ""
  local short = head ~= "" and (head .. "/…/" .. name) or name
  if #short > max then
    return "…" .. name
  end
  return short
end

--- How a hit is named: the server's `label` (`impl Trait for X` for an impl
--- block), else its `symbol`.
function M.label(hit)
  return value(hit.label) or value(hit.symbol) or "?"
end

--- What a hit says about itself: the server's `detail` (the line that
--- matched, or the signature), else the snippet's first non-blank line.
function M.detail(hit)
  local detail = value(hit.detail)
  if type(detail) ~= "string" then
    detail = nil
    for line in tostring(value(hit.snippet) or ""):gmatch("[^\n]+") do
      if line:match("%S") then
        detail = line
        break
      end
    end
  end
  detail = vim.trim(detail or ""):gsub("%s+", " ")
  if vim.fn.strchars(detail) > 100 then
    detail = vim.fn.strcharpart(detail, 0, 99) .. "…"
  end
  return detail
end

--- One line of a hit for a list: label, kind, path:line, branches, then
--- the detail. The path is relative to `root` (the root of the client that
--- answered) and shortened in the middle, so `path:line` is never cut.
function M.format_hit(hit, root)
  local path = vim.uri_to_fname(hit.uri)
  if root and path:sub(1, #root + 1) == root .. "/" then
    path = path:sub(#root + 2)
  end
  path = M.shorten_path(path, 60)
  local row = string.format(
    "%s [%s] %s:%d (%s)",
    M.label(hit),
    tostring(hit.kind),
    path,
    (hit.selectionRange or hit.range).start.line + 1,
    table.concat(hit.sources or {}, "+")
  )
  local detail = M.detail(hit)
  if detail ~= "" then
    row = row .. "  " .. detail
  end
  return row
end

--- The loaded buffer of file `path`, if any.
function M.loaded_buffer(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) == path then
      return buf
    end
  end
end

--- Line `line` (0-based) of `path` as the user has it: the loaded buffer's
--- (unsaved edits included), else the file's. `cache` keeps files read.
local function line_of(path, line, cache)
  local buf = M.loaded_buffer(path)
  if buf then
    return vim.api.nvim_buf_get_lines(buf, line, line + 1, false)[1]
  end
  cache = cache or {}
  if cache[path] == nil then
    local ok, lines = pcall(vim.fn.readfile, path)
    cache[path] = ok and lines or false
  end
  return cache[path] and cache[path][line + 1]
end

--- The 1-based byte column of an LSP position (`character` counts UTF-16
--- code units from 0) on line `position.line` of `path`, as the quickfix
--- list and nvim_win_set_cursor want it.
function M.byte_col(path, position, cache)
  local character = position.character or 0
  local text = line_of(path, position.line, cache)
  if not text then
    return character + 1
  end
  local ok, index = pcall(vim.str_byteindex, text, "utf-16", character, false)
  if not ok then
    ok, index = pcall(vim.str_byteindex, text, character, true)
  end
  return (ok and index or math.min(character, #text)) + 1
end

--- A search hit as a quickfix item (and telescope entry fields): the file,
--- the 1-based line and byte column of its name, label and detail.
function M.hit_to_qf(hit, cache)
  local path = vim.uri_to_fname(hit.uri)
  local at = (hit.selectionRange or hit.range).start
  local detail = M.detail(hit)
  return {
    filename = path,
    lnum = at.line + 1,
    col = M.byte_col(path, at, cache),
    text = string.format("%s [%s]%s", M.label(hit), tostring(hit.kind), detail ~= "" and ("  " .. detail) or ""),
  }
end

--- Opens a hit at its name (or phrase): `selectionRange`, else the start of
--- its range (UTF-16 positions, as LSP sends them).
function M.jump(hit, split)
  if split == "vertical" then
    vim.cmd("vsplit")
  elseif split == "horizontal" then
    vim.cmd("split")
  end
  local range = hit.selectionRange or hit.range
  vim.lsp.util.show_document({ uri = hit.uri, range = range }, "utf-16", { focus = true })
end

--- Runs quarry/search synchronously (through `client`, else the current
--- buffer's); returns the result table or nil, err (M.STARTING while the
--- server is not initialized).
function M.search_sync(query, opts, client)
  local why
  if not client then
    client, why = M.client()
  end
  if not client then
    return nil, "Quarry: " .. tostring(why or "not running")
  end
  local params = vim.tbl_extend("force", { query = query, limit = M.config.limit }, opts or {})
  local result, err = M.request(client, "quarry/search", params, 10000)
  if result and type(result.hits) ~= "table" then
    result.hits = {}
  end
  return result, err
end

--- True while `client`'s server is still starting: its status says so
--- (`state`), or a folder has no index yet, or its first walk has not
--- finished (no `lastWalk`: servers that send no `state`, and the first
--- walk, when the index is open but empty).
function M.is_starting(client)
  local status, err = M.request(client, "quarry/status", nil, 5000)
  if not status then
    return err == M.STARTING
  end
  if status.state == "starting" then
    return true
  end
  for _, folder in ipairs(status.folders or {}) do
    if folder.ready == false or (value(folder.lastWalk) == nil and value(folder.lastError) == nil) then
      return true
    end
  end
  return false
end

-- Clients whose server was seen ready: their empty answers are trusted.
local seen_ready = {}

--- quarry/search through `client`, its answer's `state` set to "starting"
--- when nothing was found while the server was still starting (asked
--- before the search too: a first walk that ends in between would make an
--- empty answer look final). Returns the result, or nil and a message.
function M.search_checked(query, client)
  local known = seen_ready[client.id]
  local before = not known and M.is_starting(client)
  local result, err = M.search_sync(query, nil, client)
  if not result then
    return nil, err
  end
  if result.state ~= "starting" and not known then
    if #result.hits == 0 and (before or M.is_starting(client)) then
      result.state = "starting"
    elseif not before then
      seen_ready[client.id] = true
    end
  end
  return result
end

--- One line about a search's answer, for a prompt or a picker title: the
--- mode, or that nothing matched the query's words (the hits only near it
--- in meaning), or that the server is starting.
function M.describe(result, query)
  local mode = value(result.mode) or "?"
  local how = ({ hybrid = "hybrid", partial = "partial: vectors filling in", lexical = "lexical-only" })[mode] or mode
  if result.state == "starting" then
    return M.STARTING .. " (" .. how .. ")"
  end
  if result.noMatch == true then
    if #result.hits == 0 then
      return "Quarry: no results for '" .. query .. "'"
    end
    return "No match for '" .. query .. "' — nearest by meaning (" .. how .. ")"
  end
  if #result.hits == 0 then
    return "Quarry: no results for '" .. query .. "' (" .. how .. ")"
  end
  return "Quarry (" .. how .. ")"
end

local function telescope_available()
  return M.config.telescope and pcall(require, "telescope")
end

--- Searches through `client`; while the server is starting and nothing
--- was found, waits up to start_timeout_ms for it, asking again.
local function search_when_ready(query, client)
  local result, err = M.search_checked(query, client)
  if not result or result.state ~= "starting" then
    return result, err
  end
  vim.api.nvim_echo({ { M.STARTING .. " (waiting for the index)" } }, false, {})
  vim.cmd("redraw")
  local deadline = vim.uv.now() + M.config.start_timeout_ms
  while result and result.state == "starting" and vim.uv.now() < deadline do
    vim.wait(200)
    result, err = M.search_checked(query, client)
  end
  vim.api.nvim_echo({ { "" } }, false, {})
  vim.cmd("redraw")
  return result, err
end

--- :Quarry search [query]
function M.search(query)
  if telescope_available() then
    return require("quarry.telescope").picker({ default_text = query })
  end
  local function run(q)
    if not q or q == "" then
      return
    end
    -- One client answers and names the root the rows are relative to.
    local client, why = M.client()
    if not client then
      vim.notify("Quarry: " .. why, vim.log.levels.ERROR)
      return
    end
    local result, err = search_when_ready(q, client)
    if not result then
      vim.notify(err, err == M.STARTING and vim.log.levels.WARN or vim.log.levels.ERROR)
      return
    end
    local said = M.describe(result, q)
    if #result.hits == 0 then
      if result.state == "starting" then
        said = M.STARTING .. " (no results for '" .. q .. "' yet: try again in a moment)"
      end
      vim.notify(said, vim.log.levels.INFO)
      return
    end
    local root = client.root_dir
    vim.ui.select(result.hits, {
      prompt = said .. ":",
      format_item = function(hit)
        return M.format_hit(hit, root)
      end,
    }, function(hit)
      if hit then
        M.jump(hit)
      end
    end)
  end
  if query and query ~= "" then
    run(query)
  else
    vim.ui.input({ prompt = "Quarry search: " }, function(q)
      -- Clear the answered prompt before the list: the two would otherwise
      -- run together on the command line.
      vim.schedule(function()
        vim.api.nvim_echo({ { "" } }, false, {})
        vim.cmd("redraw")
        run(q)
      end)
    end)
  end
end

local symbol_kinds = vim.lsp.protocol.SymbolKind

--- workspace/symbol results as quickfix items, at the server's column: LSP
--- counts UTF-16 units from 0, the quickfix list bytes from 1, on the
--- symbol's own line (Neovim's symbols_to_items measures it on the current
--- buffer's line instead).
function M.symbols_to_qf(symbols)
  local items, cache = {}, {}
  for _, symbol in ipairs(symbols or {}) do
    local location = symbol.location
    if location and location.uri and location.range then
      local path = vim.uri_to_fname(location.uri)
      local at = location.range.start
      local container = value(symbol.containerName)
      table.insert(items, {
        filename = path,
        lnum = at.line + 1,
        col = M.byte_col(path, at, cache),
        text = string.format(
          "[%s] %s%s",
          symbol_kinds[symbol.kind] or "Unknown",
          symbol.name,
          container and ("  in " .. container) or ""
        ),
      })
    end
  end
  return items
end

--- :Quarry symbols [query]: the server's workspace/symbol in the quickfix
--- list; without a query, asks for one.
function M.symbols(query)
  if not query or query == "" then
    vim.ui.input({ prompt = "Quarry symbols: " }, function(q)
      if q and q ~= "" then
        vim.schedule(function()
          vim.api.nvim_echo({ { "" } }, false, {})
          vim.cmd("redraw")
          M.symbols(q)
        end)
      end
    end)
    return
  end
  local client, why = M.client()
  if not client then
    vim.notify("Quarry: " .. why, vim.log.levels.ERROR)
    return
  end
  local symbols, err = M.request(client, "workspace/symbol", { query = query }, 10000)
  if not symbols then
    vim.notify(err, err == M.STARTING and vim.log.levels.WARN or vim.log.levels.ERROR)
    return
  end
  local items = M.symbols_to_qf(symbols)
  if #items == 0 then
    vim.notify("Quarry: no symbols match '" .. query .. "'", vim.log.levels.INFO)
    return
  end
  vim.fn.setqflist({}, " ", { title = "Quarry symbols: " .. query, items = items })
  vim.cmd("botright copen")
end

--- The status lines :Quarry status shows: the state or mode first, then a
--- line per folder.
function M.status_lines()
  local client, why = M.client()
  if not client then
    return { "Quarry: not running (" .. tostring(why) .. ")" }
  end
  local status, err = M.request(client, "quarry/status", nil, 5000)
  if not status then
    if err == M.STARTING then
      return { "Quarry: starting (the server is initializing)" }
    end
    return { err }
  end
  local lines = {}
  local model = type(status.model) == "table" and status.model or {}
  local reason = value(status.reason)
  if status.state == "starting" then
    table.insert(lines, "Quarry: starting (" .. tostring(value(status.stateReason) or "loading") .. ")")
  elseif status.mode == "hybrid" then
    table.insert(lines, "Quarry: hybrid (model " .. tostring(value(model.id) or "?") .. ")")
  elseif status.mode == "partial" then
    table.insert(lines, "Quarry: partial, hybrid while vectors fill in (" .. tostring(reason or "embedding") .. ")")
  else
    table.insert(lines, "Quarry: lexical-only (" .. tostring(value(model.error) or reason or "no model") .. ")")
  end
  for _, folder in ipairs(status.folders or {}) do
    local error = value(folder.lastError)
    if folder.ready == false then
      table.insert(lines, string.format("%s: loading the index%s", folder.root, error and (", error: " .. error) or ""))
    else
      table.insert(
        lines,
        string.format(
          "%s: %s files, %s chunks, %s embedded, cache %s%s%s",
          folder.root,
          tostring(value(folder.files) or 0),
          tostring(value(folder.chunks) or 0),
          tostring(value(folder.embedded) or 0),
          tostring(value(folder.cacheDir) or "?"),
          value(folder.role) == "reader" and ", reading the index another Quarry process writes" or "",
          error and (", error: " .. error) or ""
        )
      )
    end
  end
  return lines
end

function M.status()
  vim.notify(table.concat(M.status_lines(), "\n"), vim.log.levels.INFO)
end

function M.reindex()
  local client, why = M.client()
  if not client then
    vim.notify("Quarry: " .. why, vim.log.levels.ERROR)
    return
  end
  if not M.wait_ready(client) then
    vim.notify(M.STARTING, vim.log.levels.WARN)
    return
  end
  call(client, "request", "workspace/executeCommand", { command = "quarry.reindex", arguments = {} }, function() end, 0)
  vim.notify("Quarry: reindexing", vim.log.levels.INFO)
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", M.config, opts or {})
  local group = vim.api.nvim_create_augroup("quarry", { clear = true })
  vim.api.nvim_create_autocmd("BufReadPost", {
    group = group,
    callback = function(args)
      if vim.bo[args.buf].buftype == "" then
        M.attach(args.buf)
      end
    end,
  })
  -- Buffers already open when setup runs.
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" and vim.api.nvim_buf_get_name(buf) ~= "" then
      M.attach(buf)
    end
  end
end

return M
