-- Loads the plugin from this checkout and starts it on the real server:
-- QUARRY_BIN (default target/debug/quarry), lexical-only, no telescope.
local plugin = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
local repo = vim.fn.fnamemodify(plugin, ":h:h")
vim.opt.rtp:prepend(plugin)
vim.cmd.runtime("plugin/quarry.lua")
vim.o.swapfile = false
require("quarry").setup({
  cmd = { os.getenv("QUARRY_BIN") or (repo .. "/target/debug/quarry"), "lsp" },
  settings = { lexicalOnly = true, debounceMs = 30 },
  telescope = false,
})
return { plugin = plugin, repo = repo }
