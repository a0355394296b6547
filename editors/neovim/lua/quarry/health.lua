-- :checkhealth quarry
local M = {}

function M.check()
  local quarry = require("quarry")
  vim.health.start("quarry")
  local bin = quarry.config.cmd[1]
  if vim.fn.executable(bin) == 1 then
    local version = vim.fn.system({ bin, "--version" })
    vim.health.ok(string.format("binary %s (%s)", vim.fn.exepath(bin), vim.trim(version)))
  else
    vim.health.error(
      "quarry binary not found: " .. bin,
      { "build it with `cargo install --path server` in the Quarry repository", "or set cmd in require('quarry').setup()" }
    )
    return
  end
  local clients = vim.lsp.get_clients({ name = "quarry", _uninitialized = true })
  if #clients == 0 then
    vim.health.warn("no quarry client running (open a file in a project)")
    return
  end
  for _, line in ipairs(quarry.status_lines()) do
    if line:find("lexical%-only") then
      vim.health.warn(line, { "install the model with scripts/fetch-model.sh, or set settings.modelPath" })
    elseif line:find("error:") then
      vim.health.error(line)
    else
      vim.health.ok(line)
    end
  end
end

return M
