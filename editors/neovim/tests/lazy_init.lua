-- The README's lazy.nvim spec, as written, under a real lazy.nvim: used as
-- `nvim --headless -u tests/lazy_init.lua [FILE]` by tests/lazy.sh, with
-- $LAZY_NVIM (a lazy.nvim checkout), $QUARRY_LAZY_ROOT (lazy's state) and
-- `quarry` on PATH. The spec is cut from README.md; only its placeholder
-- path is replaced by this checkout's. With FILE, `event = "BufReadPost"`
-- loads the plugin; without, `cmd = "Quarry"` does. Prints ok/FAIL lines
-- and exits 1 on a failure.
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
local plugin = vim.fn.fnamemodify(here, ":h")
local failures = 0
local function say(line)
  io.stdout:write(line .. "\n")
end
local function check(name, fn)
  local ok, err = pcall(fn)
  say((ok and "ok   " or "FAIL ") .. "lazy.nvim: " .. name .. (ok and "" or (": " .. tostring(err))))
  failures = failures + (ok and 0 or 1)
end
local function finish()
  vim.schedule(function()
    for _, client in ipairs(vim.lsp.get_clients({ name = "quarry" })) do
      client:stop(true)
    end
    os.exit(failures > 0 and 1 or 0)
  end)
end

local spec
for block in table.concat(vim.fn.readfile(plugin .. "/README.md"), "\n"):gmatch("```lua\n(.-)\n```") do
  if block:find("lazy.nvim", 1, true) then
    spec = block
  end
end
local placeholder = "/path/to/quarry/editors/neovim"
if not spec or not spec:find(placeholder, 1, true) then
  say("FAIL lazy.nvim: no lazy.nvim block with dir = \"" .. placeholder .. "\" in README.md")
  os.exit(1)
end
local as_written = spec:gsub(vim.pesc(placeholder), (plugin:gsub("%%", "%%%%")))
spec = assert(load("return " .. as_written, "=README.md"))()

vim.opt.rtp:prepend(os.getenv("LAZY_NVIM"))
local state = os.getenv("QUARRY_LAZY_ROOT")
require("lazy").setup({ spec }, {
  root = state .. "/plugins",
  lockfile = state .. "/lazy-lock.json",
  state = state .. "/state.json",
  install = { missing = false },
  checker = { enabled = false },
  change_detection = { enabled = false },
  rocks = { enabled = false },
  readme = { enabled = false },
})

local said = {}
vim.notify = function(msg)
  table.insert(said, tostring(msg))
end

local function wait(what, pred, ms)
  if not vim.wait(ms or 20000, pred, 50) then
    error("timed out waiting for " .. what)
  end
end

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  callback = vim.schedule_wrap(function()
    local file = vim.api.nvim_buf_get_name(0)
    if file ~= "" then
      check("event = BufReadPost loads the plugin and a client attaches to the file", function()
        wait("a client for the buffer", function()
          return #vim.lsp.get_clients({ name = "quarry", bufnr = 0 }) == 1
        end)
        local quarry = require("quarry")
        local client = vim.lsp.get_clients({ name = "quarry", bufnr = 0 })[1]
        assert(quarry.config.settings.perFileCap == 2, "opts did not reach setup(): " .. vim.inspect(quarry.config))
        local status, err = quarry.request(client, "quarry/status", nil, 10000)
        assert(status and status.folders, tostring(err))
        assert(status.folders[1].root == vim.fn.getcwd(), vim.inspect(status.folders))
      end)
      return finish()
    end
    check("the plugin is not loaded before its command", function()
      assert(package.loaded.quarry == nil, "loaded at start-up")
    end)
    check("cmd = Quarry loads it, :Quarry status answers with no file open", function()
      vim.cmd("Quarry status")
      local mine = vim.tbl_filter(function(m)
        return m:find("Quarry", 1, true) ~= nil
      end, said)
      assert(#mine == 1, vim.inspect(said))
      assert(mine[1]:match("^Quarry: "), mine[1])
      assert(not mine[1]:find("not initialized", 1, true) and not mine[1]:find("{", 1, true), mine[1])
      -- lazy.nvim ran setup(opts): without `main` it could not tell which
      -- of the folder's modules to set up.
      assert(require("quarry").config.settings.perFileCap == 2, "opts did not reach setup(): " .. vim.inspect(said))
      local client = vim.lsp.get_clients({ name = "quarry" })[1]
      assert(client and client.initialized, "no client")
      assert(client.root_dir == vim.fn.getcwd(), tostring(client.root_dir))
    end)
    check(":Quarry search with no file open lists the hits", function()
      local shown
      vim.ui.select = function(items, opts, on_choice)
        shown = vim.tbl_map(opts.format_item, items)
        on_choice(nil)
      end
      vim.cmd("Quarry search GraphStore::insert")
      assert(shown and shown[1]:find("GraphStore::insert [method] src/graph_store.rs:55", 1, true), vim.inspect({ shown, said }))
    end)
    check("a file opened later joins the same client", function()
      vim.cmd.edit("src/graph_store.rs")
      wait("the buffer attached", function()
        return #vim.lsp.get_clients({ name = "quarry", bufnr = 0 }) == 1
      end, 5000)
      assert(#vim.lsp.get_clients({ name = "quarry" }) == 1, "a second client")
    end)
    finish()
  end),
})
