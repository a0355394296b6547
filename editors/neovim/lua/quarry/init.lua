-- Quarry for Neovim: starts `quarry lsp` with the built-in client (one per
-- project root) and offers :Quarry search / symbols / status / reindex.
-- The search UI is telescope's when telescope is installed (see
-- lua/quarry/telescope.lua), vim.ui.input + vim.ui.select otherwise.

local M = {}

M.config = {
  cmd = { "quarry", "lsp" },
  -- Sent as initializationOptions (see the server's README).
  settings = {},
  root_markers = { ".git", ".hg", ".jj", "Cargo.toml", "package.json", "pyproject.toml", "go.mod" },
  limit = 30,
  -- false: never use telescope even when it is installed.
  telescope = true,
}

local vcs_markers = { ".git", ".hg", ".jj" }

--- The project root of `buf`: the version-control root if there is one,
--- else the outermost folder holding one of `root_markers` (so the crates
--- of a workspace share one server), else the working directory.
local function root_for(buf)
  local vcs = vim.fs.root(buf, vcs_markers)
  if vcs then
    return vcs
  end
  local name = vim.api.nvim_buf_get_name(buf)
  local start = name ~= "" and vim.fs.dirname(name) or vim.fn.getcwd()
  local outermost
  for dir in vim.fs.parents(start .. "/x") do
    for _, marker in ipairs(M.config.root_markers) do
      if vim.uv.fs_stat(dir .. "/" .. marker) then
        outermost = dir
        break
      end
    end
  end
  return outermost or vim.fn.getcwd()
end

--- A running quarry client whose root holds `path`, if any.
local function client_for_path(path)
  for _, client in ipairs(vim.lsp.get_clients({ name = "quarry" })) do
    local root = client.root_dir
    if root and path ~= "" and (path == root or path:sub(1, #root + 1) == root .. "/") then
      return client
    end
  end
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
  local root = root_for(buf)
  -- An empty Lua table would be sent as `[]`: send `{}`.
  local settings = M.config.settings
  if settings == nil or next(settings) == nil then
    settings = vim.empty_dict()
  end
  return vim.lsp.start({
    name = "quarry",
    cmd = M.config.cmd,
    root_dir = root,
    init_options = settings,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
  }, { bufnr = buf })
end

--- The quarry client for the current buffer; else any running one (from a
--- scratch or health buffer); else one started for the current file.
function M.client()
  local clients = vim.lsp.get_clients({ name = "quarry", bufnr = 0 })
  if #clients > 0 then
    return clients[1]
  end
  clients = vim.lsp.get_clients({ name = "quarry" })
  if #clients > 0 then
    return clients[1]
  end
  if vim.bo.buftype ~= "" then
    return nil
  end
  local id = M.attach(0)
  return id and vim.lsp.get_client_by_id(id) or nil
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

--- One line of a hit for a list: symbol, kind, path:line, branches. The
--- path is relative to `root` (the root of the client that answered) and
--- shortened in the middle, so `path:line` is never cut.
function M.format_hit(hit, root)
  local path = vim.uri_to_fname(hit.uri)
  if root and path:sub(1, #root + 1) == root .. "/" then
    path = path:sub(#root + 2)
  end
  path = M.shorten_path(path, 60)
  return string.format(
    "%s [%s] %s:%d (%s)",
    hit.symbol,
    hit.kind,
    path,
    (hit.selectionRange or hit.range).start.line + 1,
    table.concat(hit.sources, "+")
  )
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
--- buffer's); returns the result table or nil, err.
function M.search_sync(query, opts, client)
  client = client or M.client()
  if not client then
    return nil, "quarry is not running"
  end
  local params = vim.tbl_extend("force", { query = query, limit = M.config.limit }, opts or {})
  local response, err = client:request_sync("quarry/search", params, 10000, 0)
  if not response then
    return nil, err or "no response"
  end
  if response.err then
    return nil, response.err.message
  end
  return response.result
end

local function telescope_available()
  return M.config.telescope and pcall(require, "telescope")
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
    local client = M.client()
    local result, err = M.search_sync(q, nil, client)
    if not result then
      vim.notify("Quarry: " .. tostring(err), vim.log.levels.ERROR)
      return
    end
    if #result.hits == 0 then
      vim.notify("Quarry: no results for " .. q, vim.log.levels.INFO)
      return
    end
    local root = client and client.root_dir
    vim.ui.select(result.hits, {
      prompt = string.format("Quarry (%s)", result.mode),
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
    vim.ui.input({ prompt = "Quarry search: " }, run)
  end
end

--- :Quarry symbols [query]: the server's workspace/symbol.
function M.symbols(query)
  M.client()
  vim.lsp.buf.workspace_symbol(query or "")
end

--- The status lines :Quarry status shows.
function M.status_lines()
  local client = M.client()
  if not client then
    return { "quarry: not running" }
  end
  local response = client:request_sync("quarry/status", nil, 5000, 0)
  if not response or response.err then
    return { "quarry: no status (" .. vim.inspect(response and response.err) .. ")" }
  end
  local status = response.result
  local lines = {}
  local model = status.model or {}
  if status.mode == "hybrid" then
    table.insert(lines, "mode: hybrid (model " .. tostring(model.id) .. ")")
  elseif status.mode == "partial" then
    table.insert(lines, "mode: hybrid while vectors fill in (" .. tostring(status.reason) .. ")")
  else
    table.insert(lines, "mode: lexical-only (" .. tostring(model.error or "no model") .. ")")
  end
  for _, folder in ipairs(status.folders or {}) do
    table.insert(
      lines,
      string.format(
        "%s: %s files, %s chunks, %s embedded, cache %s%s",
        folder.root,
        tostring(folder.files or 0),
        tostring(folder.chunks or 0),
        tostring(folder.embedded or 0),
        tostring(folder.cacheDir or "?"),
        folder.lastError ~= vim.NIL and folder.lastError and (", error: " .. folder.lastError) or ""
      )
    )
  end
  return lines
end

function M.status()
  vim.notify(table.concat(M.status_lines(), "\n"), vim.log.levels.INFO)
end

function M.reindex()
  local client = M.client()
  if client then
    client:request("workspace/executeCommand", { command = "quarry.reindex", arguments = {} }, function() end, 0)
    vim.notify("Quarry: reindexing", vim.log.levels.INFO)
  end
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
