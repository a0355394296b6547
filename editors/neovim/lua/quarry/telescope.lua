-- The telescope picker: a thin layer over telescope's documented API
-- (pickers.new, finders.new_dynamic, previewers, actions). The logic it
-- calls (search_sync, describe, format_hit, hit_to_qf, jump) lives in
-- quarry/init.lua, covered by the headless test; tests/telescope.sh drives
-- this picker under tmux when telescope.nvim and plenary.nvim are present
-- (CI has no source for them).

local M = {}

--- Shows a hit's file as the user has it: an open buffer's lines (unsaved
--- edits included, where the server found the hit), else the file on disk;
--- the hit's line highlighted and centred.
local function previewer(opts)
  local previewers = require("telescope.previewers")
  local conf = require("telescope.config").values
  local putils = require("telescope.previewers.utils")
  local quarry = require("quarry")
  local ns = vim.api.nvim_create_namespace("quarry.preview")

  local function show_line(self, bufnr, entry)
    if not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
    pcall(vim.api.nvim_buf_set_extmark, bufnr, ns, entry.lnum - 1, 0, {
      end_row = entry.lnum,
      hl_group = "TelescopePreviewLine",
      hl_eol = true,
    })
    if self.state.winid and vim.api.nvim_win_is_valid(self.state.winid) then
      pcall(vim.api.nvim_win_set_cursor, self.state.winid, { entry.lnum, math.max(entry.col - 1, 0) })
      vim.api.nvim_win_call(self.state.winid, function()
        vim.cmd("norm! zz")
      end)
    end
  end

  return previewers.new_buffer_previewer({
    title = "Quarry Preview",
    dyn_title = function(_, entry)
      return vim.fn.fnamemodify(entry.filename, ":~:.")
    end,
    define_preview = function(self, entry)
      local live = quarry.loaded_buffer(entry.filename)
      if live then
        local lines = vim.api.nvim_buf_get_lines(live, 0, -1, false)
        vim.api.nvim_buf_set_lines(self.state.bufnr, 0, -1, false, lines)
        putils.highlighter(self.state.bufnr, vim.bo[live].filetype)
        -- Once telescope has put the buffer in the preview window.
        local bufnr = self.state.bufnr
        vim.schedule(function()
          show_line(self, bufnr, entry)
        end)
      else
        conf.buffer_previewer_maker(entry.filename, self.state.bufnr, {
          bufname = self.state.bufname,
          winid = self.state.winid,
          preview = opts.preview,
          callback = function(bufnr)
            show_line(self, bufnr, entry)
          end,
        })
      end
    end,
  })
end

function M.picker(opts)
  opts = opts or {}
  local quarry = require("quarry")
  local pickers = require("telescope.pickers")
  local finders = require("telescope.finders")
  local actions = require("telescope.actions")
  local action_state = require("telescope.actions.state")
  local sorters = require("telescope.sorters")
  local client, why = quarry.client()
  if not client then
    vim.notify("Quarry: " .. why, vim.log.levels.ERROR)
    return
  end
  local root = client.root_dir
  local picker

  -- The results title says what the answer is: hybrid, partial or
  -- lexical-only, no match for the words, or that the server is starting.
  local function set_title(title)
    vim.schedule(function()
      local border = picker and picker.layout and picker.layout.results and picker.layout.results.border
      if border and not picker.closed then
        pcall(border.change_title, border, title)
      end
    end)
  end
  -- While the server starts, asks again until it has an answer (for a
  -- minute at most).
  local retries = 0
  local function retry(prompt)
    retries = retries + 1
    if retries > 120 then
      return
    end
    vim.defer_fn(function()
      if picker and not picker.closed and picker:_get_prompt() == prompt then
        picker:refresh()
      end
    end, 500)
  end

  picker = pickers.new(opts, {
    prompt_title = "Quarry",
    results_title = "Quarry",
    default_text = opts.default_text,
    finder = finders.new_dynamic({
      fn = function(prompt)
        if not prompt or prompt == "" then
          set_title("Quarry")
          return {}
        end
        -- The client the rows' root comes from answers too.
        local result, err = quarry.search_checked(prompt, client)
        if not result then
          set_title(err)
          if err == quarry.STARTING then
            retry(prompt)
          end
          return {}
        end
        set_title(quarry.describe(result, prompt))
        if result.state == "starting" then
          retry(prompt)
        end
        return result.hits
      end,
      entry_maker = function(hit)
        local cache = {}
        local item = quarry.hit_to_qf(hit, cache)
        return {
          value = hit,
          display = quarry.format_hit(hit, root),
          -- The server ranks; keep its order whatever is typed.
          ordinal = quarry.label(hit),
          filename = item.filename,
          lnum = item.lnum,
          col = item.col,
          -- <C-q> (send to quickfix) takes these.
          text = item.text,
        }
      end,
    }),
    sorter = sorters.empty(),
    previewer = previewer(opts),
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
  picker:find()
end

return M
