-- Loads the plugin from this checkout and starts it on the real server:
-- the binary found as a user would (see quarry_bin). No
-- telescope unless $QUARRY_TEST_PLUGINS names telescope.nvim and
-- plenary.nvim checkouts (colon-separated; tests/telescope.sh sets it).
local plugin = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
local repo = vim.fn.fnamemodify(plugin, ":h:h")
vim.opt.rtp:prepend(plugin)
vim.cmd.runtime("plugin/quarry.lua")
vim.o.swapfile = false
-- The binary a user would run: QUARRY_BIN, else `quarry` on PATH, else
-- this checkout's release build, else its debug build.
local function quarry_bin()
  local env = os.getenv("QUARRY_BIN")
  if env and env ~= "" then
    return env
  end
  if vim.fn.executable("quarry") == 1 then
    return vim.fn.exepath("quarry")
  end
  for _, profile in ipairs({ "release", "debug" }) do
    local path = repo .. "/target/" .. profile .. "/quarry"
    if vim.fn.executable(path) == 1 then
      return path
    end
  end
  error("no quarry binary: build it (cargo build) or set QUARRY_BIN")
end

local plugins = os.getenv("QUARRY_TEST_PLUGINS") or ""
for dir in vim.gsplit(plugins, ":", { plain = true, trimempty = true }) do
  vim.opt.rtp:prepend(dir)
end

-- Lexical-only unless $QUARRY_TEST_HYBRID is 1 (then the model loads, if
-- installed: tests/tmux.sh's start-up and no-match screens).
local hybrid = os.getenv("QUARRY_TEST_HYBRID") == "1"
require("quarry").setup({
  cmd = { quarry_bin(), "lsp" },
  settings = { lexicalOnly = not hybrid, debounceMs = 30 },
  telescope = plugins ~= "",
})
return { plugin = plugin, repo = repo }
