-- Headless end-to-end: the plugin against the real `quarry lsp` on a temp
-- copy of the fixture. Run: nvim --headless -u NONE -l tests/headless.lua
-- (tests/run.sh wraps it in `timeout`).

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
vim.env.XDG_CACHE_HOME = work .. "/cache"
vim.env.QUARRY_MODEL = work .. "/no-model"
dofile(here .. "/minimal_init.lua")
local quarry = require("quarry")

vim.cmd.edit(root .. "/README.md")

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

check("workspace symbols come from the server", function()
  vim.cmd("Quarry symbols RetryPolicy")
  wait("the quickfix list", function()
    for _, item in ipairs(vim.fn.getqflist()) do
      if item.text:find("RetryPolicy", 1, true) then
        return true
      end
    end
    return false
  end, 10000)
  vim.cmd("cclose")
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
  local said
  vim.notify = function(msg)
    said = msg
  end
  vim.cmd("Quarry status")
  assert(said and said:find("lexical%-only"), tostring(said))
  assert(said:find("files") and said:find(work .. "/cache", 1, true), said)
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

check("the README's setup call, without settings, starts one server per repository", function()
  local bin = quarry.config.cmd[1]
  stop_all()
  vim.cmd("%bwipeout!")
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
  require("quarry").setup({ cmd = { bin, "lsp" } })
  vim.cmd.edit(mono .. "/crates/a/src/lib.rs")
  vim.cmd.edit(mono .. "/crates/b/src/lib.rs")
  wait("one initialized client", function()
    local clients = vim.lsp.get_clients({ name = "quarry" })
    return #clients == 1 and clients[1].initialized
  end, 20000)
  local clients = vim.lsp.get_clients({ name = "quarry" })
  assert(#clients == 1, #clients .. " clients")
  assert(clients[1].root_dir == mono, "root " .. tostring(clients[1].root_dir))
  wait("both crates indexed", function()
    local result = quarry.search_sync("from_crate_a from_crate_b")
    local names = {}
    for _, hit in ipairs(result and result.hits or {}) do
      names[hit.symbol] = true
    end
    return names.from_crate_a and names.from_crate_b
  end, 20000)
end)

stop_all()
vim.fn.delete(work, "rf")
if failures > 0 then
  io.stdout:write("\n" .. failures .. " failed\n")
  os.exit(1)
end
io.stdout:write("\nall passed\n")
os.exit(0)
