-- :Quarry search [query] | symbols [query] | status | reindex
if vim.g.loaded_quarry then
  return
end
vim.g.loaded_quarry = true

vim.api.nvim_create_user_command("Quarry", function(opts)
  local sub = opts.fargs[1] or "search"
  local rest = table.concat(vim.list_slice(opts.fargs, 2), " ")
  local quarry = require("quarry")
  if sub == "search" then
    quarry.search(rest)
  elseif sub == "symbols" then
    quarry.symbols(rest)
  elseif sub == "status" then
    quarry.status()
  elseif sub == "reindex" then
    quarry.reindex()
  else
    vim.notify("Quarry: unknown subcommand " .. sub .. " (search, symbols, status, reindex)", vim.log.levels.ERROR)
  end
end, {
  nargs = "*",
  complete = function(_, line)
    if #vim.split(line, "%s+") <= 2 then
      return { "search", "symbols", "status", "reindex" }
    end
    return {}
  end,
})
