-- Headless end-to-end: the plugin against the real `quarry lsp` on a temp
-- copy of the fixture. Run: nvim --headless -u NONE -l tests/headless.lua
-- (tests/run.sh wraps it in `timeout`). The README's lazy.nvim spec runs in
-- tests/lazy.sh (with a real lazy.nvim), its plain setup() call here.

local failures = 0
local function check(name, fn)
  local ok, err = pcall(fn)
  if ok then
    print("ok   " .. name)
  else
    failures = failures + 1
    print("FAIL " .. name .. ": " .. tostring(err))
  end
end

local function wait(what, pred, ms)
  local deadline = vim.uv.now() + (ms or 30000)
  while vim.uv.now() < deadline do
    if pred() then
      return
    end
    vim.wait(50)
  end
  error("timed out waiting for " .. what)
end

local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
local repo = vim.fn.fnamemodify(here, ":h:h:h")
local work = vim.fn.tempname()
vim.fn.mkdir(work, "p")
local root = work .. "/root"
vim.fn.system({ "cp", "-r", repo .. "/tests/fixtures/polyglot", root })
vim.fn.mkdir(root .. "/.git", "p")
-- A name after multi-byte characters: LSP's column (UTF-16 units) and the
-- quickfix list's (bytes) differ by 3 on this line.
local wide_line = "/* äöü */ pub fn after_umlauts_nvim() -> u32 { 1 }"
vim.fn.writefile({ "// Columns past non-ASCII text.", wide_line }, root .. "/src/wide.rs")
vim.env.XDG_CACHE_HOME = work .. "/cache"
local model_env = vim.env.QUARRY_MODEL
vim.env.QUARRY_MODEL = work .. "/no-model"
dofile(here .. "/minimal_init.lua")
local quarry = require("quarry")

local function capture_notify()
  local said = {}
  vim.notify = function(msg)
    table.insert(said, msg)
  end
  return said
end

vim.cmd.edit(root .. "/README.md")

check("a request sent right after the start is answered, or says starting", function()
  -- The client is started, its initialize not answered yet: without
  -- waiting at all the plugin says starting...
  local client = vim.lsp.get_clients({ name = "quarry", _uninitialized = true })[1]
  assert(client and not client.initialized, "the client should still be initializing")
  quarry.config.start_timeout_ms = 0
  local lines = quarry.status_lines()
  quarry.config.start_timeout_ms = 5000
  assert(lines[1] == "Quarry: starting (the server is initializing)", vim.inspect(lines))
  -- ...and waits for initialize otherwise: an answer, never "Server not
  -- initialized" (-32002) or a raw table.
  local result, err = quarry.search_sync("GraphStore")
  assert(result or err == quarry.STARTING, tostring(err))
  local said = capture_notify()
  vim.cmd("Quarry status")
  assert(#said == 1 and said[1]:match("^Quarry: "), vim.inspect(said))
  assert(not said[1]:find("not initialized", 1, true) and not said[1]:find("{", 1, true), said[1])
end)

check("the server starts and indexes the project", function()
  wait("indexing", function()
    local client = vim.lsp.get_clients({ name = "quarry" })[1]
    if not client or not client.initialized then
      return false
    end
    local lines = quarry.status_lines()
    return lines[2] ~= nil and lines[2]:match(": [1-9]%d* files") ~= nil
  end)
  local client = vim.lsp.get_clients({ name = "quarry" })[1]
  assert(client.root_dir == root, "root " .. tostring(client.root_dir))
end)

check(":Quarry search through vim.ui.select jumps to the hit", function()
  local shown
  vim.ui.select = function(items, opts, on_choice)
    shown = vim.tbl_map(opts.format_item, items)
    for i, item in ipairs(items) do
      if item.symbol == "GraphStore::insert" then
        return on_choice(item, i)
      end
    end
    error("GraphStore::insert not offered: " .. vim.inspect(shown))
  end
  vim.cmd("Quarry search GraphStore::insert")
  -- The row and the jump land on the name (line 55), not the doc comment.
  assert(shown[1]:find("GraphStore::insert [method] src/graph_store.rs:55", 1, true), shown[1])
  wait("the jump", function()
    local cursor = vim.api.nvim_win_get_cursor(0)
    return vim.api.nvim_buf_get_name(0):match("src/graph_store%.rs$") ~= nil
      and cursor[1] == 55
      and vim.api.nvim_get_current_line():sub(cursor[2] + 1, cursor[2] + 6) == "insert"
  end, 5000)
end)

check("long paths are cut in the middle, never path:line", function()
  local long = "src/" .. string.rep("deep/", 20) .. "graph_store.rs"
  local row = quarry.format_hit({
    uri = vim.uri_from_fname(root .. "/" .. long),
    range = { start = { line = 502, character = 0 } },
    symbol = "insert",
    kind = "method",
    sources = { "lexical" },
  }, root)
  assert(row:find("src/…/graph_store.rs:503", 1, true), row)
end)

--- The quickfix item whose text names `name`, after `:Quarry symbols`.
local function qf_item(name)
  for _, item in ipairs(vim.fn.getqflist()) do
    if item.text:find(name, 1, true) then
      return item
    end
  end
end

check("workspace symbols land in the quickfix list at the server's column", function()
  -- From README.md, whose line 14 is not the symbol's: Neovim's own
  -- symbols_to_items measured the column there (column 1).
  vim.cmd.edit(root .. "/README.md")
  vim.cmd("Quarry symbols RetryPolicy")
  local item = qf_item("RetryPolicy")
  assert(item, vim.inspect(vim.fn.getqflist()))
  assert(vim.api.nvim_buf_get_name(item.bufnr):match("python/retry_policy%.py$"), vim.inspect(item))
  assert(item.lnum == 14 and item.col == 7, "RetryPolicy at " .. item.lnum .. ":" .. item.col .. ", not 14:7")
  vim.cmd("cclose")
  -- After multi-byte characters: the byte column, not the UTF-16 one.
  vim.cmd.edit(root .. "/README.md")
  vim.cmd("Quarry symbols after_umlauts_nvim")
  item = qf_item("after_umlauts_nvim")
  local want = wide_line:find("after_umlauts_nvim", 1, true)
  assert(item and item.lnum == 2 and item.col == want, vim.inspect(item) .. " want col " .. want)
  vim.cmd("cclose")
  -- A search hit as a quickfix item (telescope's <C-q>): same column.
  local result = assert(quarry.search_sync("after_umlauts_nvim"))
  local hit = result.hits[1]
  assert(hit and hit.symbol == "after_umlauts_nvim", vim.inspect(hit))
  local qf = quarry.hit_to_qf(hit)
  assert(qf.lnum == 2 and qf.col == want, vim.inspect(qf))
  assert(qf.text:find("after_umlauts_nvim [function]", 1, true), qf.text)
  assert(qf.text:find("pub fn after_umlauts_nvim", 1, true), "detail missing: " .. qf.text)
end)

check(":Quarry symbols without a query asks for one", function()
  local asked
  local input = vim.ui.input
  vim.ui.input = function(opts, on_confirm)
    asked = opts.prompt
    on_confirm("RetryPolicy")
  end
  vim.fn.setqflist({}, "r")
  vim.cmd("Quarry symbols")
  vim.ui.input = input
  assert(asked == "Quarry symbols: ", tostring(asked))
  wait("the quickfix list", function()
    return qf_item("RetryPolicy") ~= nil
  end, 5000)
  vim.cmd("cclose")
end)

check("a query nothing matches says so", function()
  local said = capture_notify()
  local offered
  vim.ui.select = function(items, opts)
    offered = opts.prompt .. " " .. #items
  end
  vim.cmd("Quarry search quokka_trampoline_gauge")
  -- Lexical-only: nothing at all (with a model: the nearest by meaning,
  -- under "No match for ...", see tests/tmux.sh).
  assert(offered == nil, "offered " .. tostring(offered))
  assert(said[1] == "Quarry: no results for 'quokka_trampoline_gauge'", vim.inspect(said))
  -- The wording for each answer the server gives.
  local hit = { hits = { {} }, mode = "hybrid", state = "ready" }
  hit.noMatch = true
  assert(quarry.describe(hit, "X") == "No match for 'X' — nearest by meaning (hybrid)", quarry.describe(hit, "X"))
  hit.noMatch = false
  assert(quarry.describe(hit, "X") == "Quarry (hybrid)")
  hit.state = "starting"
  assert(quarry.describe(hit, "X") == "Quarry is starting… (hybrid)")
  -- Older servers: no noMatch, no state.
  assert(quarry.describe({ hits = {}, mode = "lexical" }, "X") == "Quarry: no results for 'X' (lexical-only)")
end)

check("rows show the label and the matched line or signature", function()
  local row = quarry.format_hit({
    uri = vim.uri_from_fname(root .. "/src/graph_store.rs"),
    range = { start = { line = 9, character = 0 } },
    symbol = "GraphStore",
    label = "impl Display for GraphStore",
    detail = "impl fmt::Display for GraphStore {",
    kind = "impl",
    sources = { "lexical" },
  }, root)
  assert(row == "impl Display for GraphStore [impl] src/graph_store.rs:10 (lexical)  impl fmt::Display for GraphStore {", row)
  -- Older servers: symbol, and the snippet's first non-blank line.
  row = quarry.format_hit({
    uri = vim.uri_from_fname(root .. "/src/graph_store.rs"),
    range = { start = { line = 9, character = 0 } },
    symbol = "GraphStore",
    snippet = "\n  pub struct GraphStore {\n}",
    kind = "struct",
    sources = { "lexical" },
  }, root)
  assert(row == "GraphStore [struct] src/graph_store.rs:10 (lexical)  pub struct GraphStore {", row)
end)

check("unsaved edits are found, at their line in the buffer", function()
  vim.cmd.edit(root .. "/src/graph_store.rs")
  local buf = vim.api.nvim_get_current_buf()
  local n = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_buf_set_lines(buf, n, n, false, { "", "pub fn brand_new_unsaved_nvim() -> u32 { 7 }" })
  vim.cmd("normal! gg")
  local hit
  wait("the unsaved symbol", function()
    local result = quarry.search_sync("brand_new_unsaved_nvim")
    hit = result and result.hits[1]
    return hit ~= nil and hit.symbol == "brand_new_unsaved_nvim"
  end, 10000)
  vim.ui.select = function(items, _, on_choice)
    on_choice(items[1], 1)
  end
  vim.cmd("Quarry search brand_new_unsaved_nvim")
  wait("the jump", function()
    return vim.api.nvim_win_get_cursor(0)[1] == n + 2
  end, 5000)
  assert(vim.bo[buf].modified, "the buffer stays unsaved")
end)

check(":Quarry status reports the mode, counts and cache", function()
  local said = capture_notify()
  vim.cmd("Quarry status")
  said = said[1]
  assert(said and said:find("^Quarry: lexical%-only %(lexical%-only by setting%)"), tostring(said))
  assert(said:find("files") and said:find(work .. "/cache", 1, true), said)
  -- While the server starts: its reason, never "lexical-only".
  local client = quarry.client()
  local request_sync = client.request_sync
  client.request_sync = function()
    return {
      result = {
        state = "starting",
        stateReason = "loading the index",
        mode = "lexical",
        model = { id = vim.NIL, error = "not loaded yet" },
        folders = { { root = root, ready = false, lastError = vim.NIL } },
      },
    }
  end
  local lines = quarry.status_lines()
  client.request_sync = request_sync
  assert(lines[1] == "Quarry: starting (loading the index)", vim.inspect(lines))
  assert(lines[2] == root .. ": loading the index", vim.inspect(lines))
end)

check(":checkhealth quarry", function()
  vim.cmd("checkhealth quarry")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert(text:find("binary ", 1, true) and text:find("lexical", 1, true), text)
end)

local function stop_all()
  for _, client in ipairs(vim.lsp.get_clients({ name = "quarry" })) do
    client:stop(true)
  end
  wait("the clients to stop", function()
    return #vim.lsp.get_clients({ name = "quarry" }) == 0
  end, 10000)
end

--- The README's ```lua blocks, as written.
local function readme_snippets()
  local text = table.concat(vim.fn.readfile(here .. "/../README.md"), "\n")
  local blocks = {}
  for block in text:gmatch("```lua\n(.-)\n```") do
    table.insert(blocks, block)
  end
  return blocks
end

check("the README's plain setup() snippet, as written, starts one server per repository", function()
  local snippet
  for _, block in ipairs(readme_snippets()) do
    if block:find('require("quarry").setup(', 1, true) then
      snippet = block
    end
  end
  assert(snippet, "no require(\"quarry\").setup block in the README")
  stop_all()
  vim.cmd("%bwipeout!")
  -- `quarry` on PATH, as the snippet's cmd says.
  local bin = quarry.config.cmd[1]
  vim.fn.mkdir(work .. "/bin", "p")
  vim.uv.fs_symlink(bin, work .. "/bin/quarry")
  vim.env.PATH = work .. "/bin:" .. vim.env.PATH
  -- A Cargo workspace without .git: two member crates, one server at the
  -- outermost Cargo.toml.
  local mono = work .. "/mono"
  for _, dir in ipairs({ mono .. "/crates/a/src", mono .. "/crates/b/src" }) do
    vim.fn.mkdir(dir, "p")
  end
  vim.fn.writefile({ "[workspace]", 'members = ["crates/*"]' }, mono .. "/Cargo.toml")
  for _, name in ipairs({ "a", "b" }) do
    vim.fn.writefile({ "[package]", 'name = "' .. name .. '"' }, mono .. "/crates/" .. name .. "/Cargo.toml")
    vim.fn.writefile({ "pub fn from_crate_" .. name .. "() {}" }, mono .. "/crates/" .. name .. "/src/lib.rs")
  end
  assert(load(snippet, "=README.md"))()
  assert(quarry.config.cmd[1] == "quarry", vim.inspect(quarry.config.cmd))
  vim.cmd.edit(mono .. "/crates/a/src/lib.rs")
  vim.cmd.edit(mono .. "/crates/b/src/lib.rs")
  wait("one initialized client", function()
    local clients = vim.lsp.get_clients({ name = "quarry" })
    return #clients == 1 and clients[1].initialized
  end, 20000)
  local clients = vim.lsp.get_clients({ name = "quarry" })
  assert(#clients == 1, #clients .. " clients")
  assert(clients[1].root_dir == mono, "root " .. tostring(clients[1].root_dir))
  assert(#vim.lsp.get_clients({ name = "quarry", bufnr = 0 }) == 1, "the buffer is not attached")
  local status = assert(quarry.request(clients[1], "quarry/status", nil, 5000))
  assert(status.folders and status.folders[1].root == mono, vim.inspect(status))
  wait("both crates indexed", function()
    local result = quarry.search_sync("from_crate_a from_crate_b")
    local names = {}
    for _, hit in ipairs(result and result.hits or {}) do
      names[hit.symbol] = true
    end
    return names.from_crate_a and names.from_crate_b
  end, 20000)
end)

check(":Quarry search with no file open starts the server for the working directory", function()
  stop_all()
  vim.cmd("%bwipeout!")
  vim.cmd.cd(root)
  assert(vim.api.nvim_buf_get_name(0) == "", "a file is open")
  local shown
  vim.ui.select = function(items, opts, on_choice)
    shown = vim.tbl_map(opts.format_item, items)
    on_choice(nil)
  end
  local said = capture_notify()
  vim.cmd("Quarry search GraphStore::insert")
  assert(shown, "no list; said: " .. vim.inspect(said))
  assert(shown[1]:find("GraphStore::insert [method] src/graph_store.rs:55", 1, true), vim.inspect(shown))
  local client = vim.lsp.get_clients({ name = "quarry" })[1]
  assert(client.root_dir == root, client.root_dir)
end)

-- Start-up with the model (if installed): the status says "starting (the
-- reason)" while the index or the model loads, not "lexical-only".
local data = os.getenv("XDG_DATA_HOME") or (os.getenv("HOME") .. "/.local/share")
local model = model_env or (data .. "/quarry/models/all-MiniLM-L6-v2")
if vim.uv.fs_stat(model .. "/model.safetensors") then
  check("the status during start-up says starting", function()
    stop_all()
    vim.cmd("%bwipeout!")
    vim.env.QUARRY_MODEL = model
    quarry.config.settings = { debounceMs = 30 }
    local fresh = work .. "/fresh"
    vim.fn.system({ "cp", "-r", root, fresh })
    vim.fn.delete(work .. "/cache", "rf")
    vim.cmd.edit(fresh .. "/README.md")
    local lines = quarry.status_lines()
    assert(lines[1]:match("^Quarry: starting %(.+%)$"), vim.inspect(lines))
    assert(not lines[1]:find("lexical", 1, true), lines[1])
    print("     (said: " .. lines[1] .. ")")
  end)
else
  print("skip the status during start-up says starting: no model at " .. model .. " (scripts/fetch-model.sh)")
end

stop_all()
vim.fn.delete(work, "rf")
if failures > 0 then
  io.stdout:write("\n" .. failures .. " failed\n")
  os.exit(1)
end
io.stdout:write("\nall passed\n")
os.exit(0)
