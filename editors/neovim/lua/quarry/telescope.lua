-- The telescope picker: a thin layer over telescope's documented API
-- (pickers.new, finders.new_dynamic, previewers, actions). The logic it
-- calls (search_sync, format_hit, jump) lives in quarry/init.lua, covered by
-- the headless test; tests/telescope.sh drives this picker under tmux when
-- telescope.nvim and plenary.nvim are present (CI has no source for them).

local M = {}

function M.picker(opts)
  opts = opts or {}
  local quarry = require("quarry")
  local pickers = require("telescope.pickers")
  local finders = require("telescope.finders")
  local conf = require("telescope.config").values
  local actions = require("telescope.actions")
  local action_state = require("telescope.actions.state")
  local sorters = require("telescope.sorters")
  local client = quarry.client()
  local root = client and client.root_dir

  pickers
    .new(opts, {
      prompt_title = "Quarry",
      default_text = opts.default_text,
      finder = finders.new_dynamic({
        fn = function(prompt)
          if not prompt or prompt == "" then
            return {}
          end
          -- The client the rows' root comes from answers too.
          local result = quarry.search_sync(prompt, nil, client)
          return result and result.hits or {}
        end,
        entry_maker = function(hit)
          local path = vim.uri_to_fname(hit.uri)
          return {
            value = hit,
            display = quarry.format_hit(hit, root),
            -- The server ranks; keep its order whatever is typed.
            ordinal = hit.symbol,
            filename = path,
            lnum = (hit.selectionRange or hit.range).start.line + 1,
            col = (hit.selectionRange or hit.range).start.character + 1,
          }
        end,
      }),
      sorter = sorters.empty(),
      previewer = conf.grep_previewer(opts),
      attach_mappings = function(prompt_bufnr, map)
        local function open(split)
          return function()
            local entry = action_state.get_selected_entry()
            actions.close(prompt_bufnr)
            if entry then
              -- After the prompt's insert mode has ended: leaving it moves
              -- the cursor one column left, off the name.
              vim.schedule(function()
                quarry.jump(entry.value, split)
              end)
            end
          end
        end
        actions.select_default:replace(open(nil))
        map({ "i", "n" }, "<C-v>", open("vertical"))
        map({ "i", "n" }, "<C-x>", open("horizontal"))
        return true
      end,
    })
    :find()
end

return M
