-- CodeCompanion.nvim's chat (its ACP adapter, set up as the README says) driving
-- `patchwise acp` in headless Neovim, as a user would: an edit accepted, one rejected, one
-- stopped while the approval is up, one stopped while the model answers, then the mode switched
-- to research with the chat's own /acp_session_options picker and a question asked.
--
-- Run by tests/codecompanion.rs: nvim --headless --clean -l panel.lua. Environment:
--   PATCHWISE_CODECOMPANION, PATCHWISE_PLENARY  the plugin checkouts
--   PATCHWISE_BIN     the patchwise binary
--   PATCHWISE_FILE    the file the edits change (opened in a buffer first)
--   PATCHWISE_EDIT    the edit prompt (`@src/lib.rs:14-17 return the sum directly`)
--   PATCHWISE_ASK     the research question
--   PATCHWISE_OUT     where the JSON result goes
--   PATCHWISE_WAIT_MS how long a turn may take (default 60000; more for a real model)
-- The result: `trace` (every JSON-RPC line each way with its time in ms), `turns` (each turn's
-- name, stop reason and timings), `file` / `buffer` (the file on disk and in its buffer after
-- each turn), `chat` (the chat buffer's text at the end), `errors`.

local env = vim.env
vim.opt.rtp:prepend(env.PATCHWISE_PLENARY)
vim.opt.rtp:prepend(env.PATCHWISE_CODECOMPANION)
vim.o.swapfile = false

local out = { trace = {}, turns = {}, file = {}, buffer = {}, errors = {} }
local started = vim.uv.hrtime()
local function now()
  return (vim.uv.hrtime() - started) / 1e6
end

local function finish(code)
  local f = assert(io.open(env.PATCHWISE_OUT, "w"))
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd((code == 0 and "qall!" or "cquit! " .. code))
end

local ok, err = pcall(function()
  require("codecompanion").setup({
    adapters = {
      acp = {
        patchwise = function()
          return require("codecompanion.adapters").extend("goose", {
            name = "patchwise",
            formatted_name = "patchwise",
            commands = { default = { env.PATCHWISE_BIN, "acp" } },
            -- The session starts in edit mode (a session config option, set when it opens).
            defaults = { session_config_options = { mode = "edit" } },
          })
        end,
      },
    },
    interactions = { chat = { adapter = "patchwise" } },
  })

  -- Every JSON-RPC line, each way, with its time.
  local Connection = require("codecompanion.acp")
  local handle = Connection.handle_rpc_message
  function Connection:handle_rpc_message(line)
    if line and line:match("^%s*{") then
      table.insert(out.trace, { ms = now(), dir = "in", msg = vim.json.decode(line) })
    end
    return handle(self, line)
  end
  local write = Connection.write_message
  function Connection:write_message(data)
    for line in data:gmatch("[^\n]+") do
      table.insert(out.trace, { ms = now(), dir = "out", msg = vim.json.decode(line) })
    end
    return write(self, data)
  end

  -- The file the edits change is open in a buffer, as it would be in a real session.
  vim.cmd.edit(vim.fn.fnameescape(env.PATCHWISE_FILE))
  local file_buf = vim.api.nvim_get_current_buf()

  local approvals = 0
  vim.api.nvim_create_autocmd("User", {
    pattern = "CodeCompanionToolApprovalRequested",
    callback = function()
      approvals = approvals + 1
    end,
  })

  local chat = require("codecompanion").chat()
  assert(chat, "no chat opened")

  local turn_ms = tonumber(env.PATCHWISE_WAIT_MS or "") or 60000
  local function wait(ms, what, cond)
    if not vim.wait(ms, cond, 10) then
      error("timed out waiting for " .. what)
    end
  end

  -- The chat connects and opens its session as it opens; a prompt submitted before that is
  -- done connects again (its quirk, docs/editors.md). A user types once the panel is up.
  wait(30000, "the chat's session", function()
    return chat.acp_connection ~= nil and chat.acp_connection:is_connected()
  end)

  -- The trace index where the last prompt went out, and helpers over what came after it.
  local prompt_at
  local function since(pred)
    for i = prompt_at, #out.trace do
      local t = out.trace[i]
      if pred(t) then
        return t
      end
    end
  end
  local function answered()
    local sent = since(function(t)
      return t.dir == "out" and t.msg.method == "session/prompt"
    end)
    return sent
      and since(function(t)
        return t.dir == "in" and t.msg.id == sent.msg.id and t.msg.method == nil
      end)
  end
  -- The first session/update of the prompt's run after the prompt went out (not an option's
  -- update, which can arrive after the prompt: the chat sends both without waiting).
  local function first_update(sent_at)
    return since(function(t)
      if t.dir ~= "in" or t.msg.method ~= "session/update" or t.ms < sent_at then
        return false
      end
      local kind = t.msg.params.update.sessionUpdate
      return kind ~= "current_mode_update" and kind ~= "config_option_update"
    end)
  end

  local function press(key)
    local map = vim.fn.maparg(key, "n", false, true)
    assert(map and map.callback, "no approval keymap " .. key .. " in the chat")
    map.callback()
  end

  local keys = require("codecompanion.interactions.chat.tools.labels").keymaps()

  -- One turn: the prompt submitted in the chat, `act` run once `ready` holds, then the answer
  -- awaited; the turn's timings recorded.
  local function turn(name, text, ready, act)
    prompt_at = #out.trace + 1
    local approvals_before = approvals
    chat:add_buf_message({ role = "user", content = text })
    chat:submit()
    local sent_at
    wait(30000, name .. ": the prompt", function()
      local sent = since(function(t)
        return t.dir == "out" and t.msg.method == "session/prompt"
      end)
      sent_at = sent and sent.ms
      return sent ~= nil
    end)
    local stop_at
    if ready then
      wait(turn_ms, name .. ": ready", function()
        return ready(approvals - approvals_before)
      end)
      stop_at = now()
      act()
    end
    wait(turn_ms, name .. ": the answer", function()
      return answered() ~= nil
    end)
    local answer = answered()
    local cancel = since(function(t)
      return t.dir == "out" and t.msg.method == "session/cancel"
    end)
    local update = first_update(sent_at)
    -- Let the chat settle (its done handlers run scheduled).
    vim.wait(300, function()
      return false
    end)
    wait(10000, name .. ": the chat ready for input", function()
      return chat.current_request == nil
    end)
    table.insert(out.turns, {
      name = name,
      stopReason = answer.msg.result and answer.msg.result.stopReason,
      error = answer.msg.error,
      prompt = (since(function(t)
        return t.dir == "out" and t.msg.method == "session/prompt"
      end) or {}).msg,
      firstUpdateMs = update and (update.ms - sent_at),
      cancelledAfterMs = cancel and (answer.ms - cancel.ms),
      stopToCancelMs = stop_at and cancel and (cancel.ms - stop_at),
      answerMs = answer.ms - sent_at,
    })
    out.file[name] = table.concat(vim.fn.readfile(env.PATCHWISE_FILE, "b"), "\n")
    out.buffer[name] = table.concat(vim.api.nvim_buf_get_lines(file_buf, 0, -1, false), "\n")
  end

  -- 1. Rejected: nothing written.
  turn("reject", env.PATCHWISE_EDIT, function(n)
    return n > 0
  end, function()
    press(keys.reject)
  end)
  -- 2. Stopped while the approval is up.
  turn("stop during the approval", env.PATCHWISE_EDIT, function(n)
    return n > 0
  end, function()
    chat:stop()
  end)
  -- 3. Accepted: written through the editor (its buffer of the file).
  turn("accept", env.PATCHWISE_EDIT, function(n)
    return n > 0
  end, function()
    press(keys.accept)
  end)
  -- 4. Stopped while the model answers (this answer never comes).
  turn("stop during the answer", env.PATCHWISE_EDIT, function()
    return since(function(t)
      return t.dir == "in"
        and t.msg.method == "session/update"
        and t.msg.params.update.sessionUpdate == "agent_thought_chunk"
    end) ~= nil
  end, function()
    -- A moment for the request to reach the model.
    vim.wait(300, function()
      return false
    end)
    chat:stop()
  end)

  -- 5. Research, chosen with the chat's own picker for the session's options.
  local choices = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(choices, { prompt = opts.prompt, items = items })
    -- Each item is "* name - description" (the current value) or "  name - description".
    local want = opts.prompt == "Mode" and "Research" or "plan/planner-model"
    for i, item in ipairs(items) do
      if item:sub(3, 2 + #want) == want then
        return on_choice(item, i)
      end
    end
    on_choice(nil, nil)
  end
  local SlashCommand = require("codecompanion.interactions.chat.slash_commands.builtin.acp_session_options")
  local conn = chat.acp_connection
  for _, option in ipairs(conn:get_config_options()) do
    if option.id == "mode" or option.id == "model" then
      SlashCommand.new({ Chat = chat, config = {}, context = {} }):show_values(option)
    end
  end
  out.choices = choices
  out.options = conn:get_config_options()
  turn("research", env.PATCHWISE_ASK)

  out.chat = table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n")
end)

if not ok then
  table.insert(out.errors, tostring(err))
  finish(1)
else
  finish(0)
end
