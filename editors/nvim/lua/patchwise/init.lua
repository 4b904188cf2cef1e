-- patchwise for Neovim: starts `patchwise serve` for file buffers and gives every feature a
-- command (see `:help`-style list below and docs/editors.md). The server does the work — hover
-- diffs, code lenses, Accept/Reject, applying edits; this plugin supplies what only the editor
-- can: the instruction, pickers, the diff split, progress in the statusline.
--
--   require('patchwise').setup({
--     cmd = { 'patchwise', 'serve' },          -- the binary (absolute path if not on PATH)
--     filetypes = nil,                         -- nil: every file buffer; or a list
--     root_markers = { '.patchwise', '.git' }, -- the workspace root is the nearest of these
--     init_options = {},                       -- settings, the shape of .patchwise/config.toml
--     capabilities = nil,                      -- extra client capabilities (deep-merged)
--     completion = { enabled = true, accept_key = '<C-l>' }, -- suggestions as you type
--   })
--
-- Neovim 0.11+: vim.lsp.config + vim.lsp.enable. Neovim 0.10: vim.lsp.start per buffer.
--
-- Commands: :PatchwiseEdit [instruction] (range), :PatchwiseDevelop [request],
-- :PatchwiseResearch [question], :PatchwiseLibrary, :PatchwiseProposals,
-- :PatchwiseAccept[!] / :PatchwiseReject[!] (the hunk under the cursor; ! the whole proposal),
-- :PatchwiseDiff[!] (diff split against the proposed text; ! a floating unified diff),
-- :PatchwiseCancel. Statusline: %{v:lua.require'patchwise'.status()}.

local M = {}

M.defaults = {
  cmd = { 'patchwise', 'serve' },
  filetypes = nil,
  root_markers = { '.patchwise', '.git' },
  init_options = {},
  capabilities = nil,
  completion = { enabled = true, accept_key = '<C-l>' },
}

local has_011 = vim.fn.has('nvim-0.11') == 1

--- Calls a client method on 0.11 (`client:request`) and 0.10 (`client.request`) alike.
local function call(client, method, ...)
  if has_011 then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function notify(message, level)
  vim.notify('patchwise: ' .. message, level or vim.log.levels.INFO)
end

local function capabilities(extra)
  local caps = vim.lsp.protocol.make_client_capabilities()
  -- This client asks the user for instructions (patchwise.editSelection): docs/editors.md.
  caps.experimental = vim.tbl_deep_extend('force', caps.experimental or {}, {
    patchwise = { instructionInput = true },
  })
  if extra then
    caps = vim.tbl_deep_extend('force', caps, extra)
  end
  return caps
end

-- Edit, develop and research runs end with `patchwise/runFinished`; the command that started one
-- answers with its run id first. A run that fails at once can finish before that answer: such
-- ends wait here.
local waiting, early = {}, {}

local function run_finished(params)
  local waiter = waiting[params.runId]
  if waiter then
    waiting[params.runId] = nil
    waiter(params)
  else
    early[params.runId] = params
  end
end

local function wait_run(run_id, callback)
  local done = early[run_id]
  if done then
    early[run_id] = nil
    callback(done)
  else
    waiting[run_id] = callback
  end
end

--- Runs `command`, a command that starts a run, and calls `on_done(err, result)` when the run
--- ends: `result` is its proposal (or research record), `err` `{ message }` when it failed.
local function follow(bufnr, command, args, on_done)
  M.execute(bufnr, command, args, function(err, result)
    if err then
      on_done(err, nil)
    elseif result and result.runId and result.id == nil then
      wait_run(
        result.runId,
        vim.schedule_wrap(function(finished)
          if finished.ok then
            on_done(nil, finished.proposal or finished.research)
          else
            on_done({ message = finished.error or 'the run failed', cancelled = finished.cancelled }, nil)
          end
        end)
      )
    else
      -- An older server answers with the result itself when the run ends.
      on_done(nil, result)
    end
  end)
end

-- Progress: `$/progress` from the patchwise client, as LspProgress events (0.10+).
local progress = {}
M.progress_log = {}

local function on_progress(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  if not client or client.name ~= 'patchwise' then
    return
  end
  local params = ev.data.params or {}
  local value = params.value or {}
  local token = tostring(params.token)
  if value.kind == 'end' then
    progress[token] = nil
  else
    local entry = progress[token] or {}
    entry.title = value.title or entry.title
    entry.message = value.message or entry.message
    entry.percentage = value.percentage or entry.percentage
    progress[token] = entry
  end
  table.insert(M.progress_log, { token = token, kind = value.kind, title = value.title, message = value.message })
  if #M.progress_log > 200 then
    table.remove(M.progress_log, 1)
  end
  vim.cmd('redrawstatus')
end

--- What patchwise is doing now, for the statusline ('' when idle).
function M.status()
  local parts = {}
  for _, entry in pairs(progress) do
    local text = entry.title or 'patchwise'
    if entry.percentage then
      text = text .. (' %d%%'):format(entry.percentage)
    end
    if entry.message and entry.message ~= '' then
      text = text .. ' ' .. entry.message
    end
    table.insert(parts, text)
  end
  table.sort(parts)
  return table.concat(parts, ' · ')
end

local function find_root(bufnr, markers)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local found = vim.fs.find(markers, { path = vim.fs.dirname(name), upward = true })[1]
  return found and vim.fs.dirname(found) or vim.fs.dirname(name)
end

local function client_config(opts)
  return {
    name = 'patchwise',
    cmd = opts.cmd,
    init_options = opts.init_options,
    capabilities = capabilities(opts.capabilities),
    handlers = {
      ['patchwise/runFinished'] = function(_, params)
        run_finished(params)
      end,
    },
  }
end

--- 0.10: one client per root, started for each file buffer.
local function attach_010(bufnr, opts)
  if vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    return
  end
  if opts.filetypes and not vim.tbl_contains(opts.filetypes, vim.bo[bufnr].filetype) then
    return
  end
  local config = client_config(opts)
  config.root_dir = find_root(bufnr, opts.root_markers)
  vim.lsp.start(config, { bufnr = bufnr })
end

-- Client-side commands that the server's code actions and code lenses name.
local function register_commands()
  vim.lsp.commands['patchwise.editSelection'] = function(command, ctx)
    local target = (command.arguments or {})[1] or {}
    M.ask_and_edit(ctx and ctx.bufnr or vim.uri_to_bufnr(target.uri), target.range)
  end
  -- "Develop…" comes without a request (ask for it); "Develop: …" of a `patchwise develop:`
  -- comment carries one. Both run through M.develop, which sends patchwise.develop itself.
  vim.lsp.commands['patchwise.develop'] = function(command, ctx)
    local arg = (command.arguments or {})[1] or {}
    local bufnr = ctx and ctx.bufnr or (arg.uri and vim.uri_to_bufnr(arg.uri)) or 0
    M.develop(arg.request, nil, bufnr)
  end
  vim.lsp.commands['patchwise.proposal.diff'] = function(command, ctx)
    local arg = (command.arguments or {})[1] or {}
    M.diff_proposal(ctx and ctx.bufnr or 0, arg.id, false)
  end
end

function M.setup(opts)
  opts = vim.tbl_deep_extend('force', M.defaults, opts or {})
  M.options = opts
  register_commands()
  local group = vim.api.nvim_create_augroup('patchwise', { clear = true })
  if vim.fn.has('nvim-0.10') == 1 then
    vim.api.nvim_create_autocmd('LspProgress', { group = group, callback = on_progress })
  end
  if has_011 then
    -- Completion as you type, in each buffer the server attaches to (lua/patchwise/complete.lua).
    vim.api.nvim_create_autocmd('LspAttach', {
      group = group,
      callback = function(args)
        local client = vim.lsp.get_client_by_id(args.data.client_id)
        if client and client.name == 'patchwise' and client.server_capabilities.inlineCompletionProvider then
          require('patchwise.complete').attach(client, args.buf, opts.completion or {})
        end
      end,
    })
  end
  if has_011 and vim.lsp.config and vim.lsp.enable then
    local config = client_config(opts)
    config.filetypes = opts.filetypes
    config.root_markers = opts.root_markers
    vim.lsp.config('patchwise', config)
    vim.lsp.enable('patchwise')
    return
  end
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    callback = function(args)
      attach_010(args.buf, opts)
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype ~= '' then
      attach_010(bufnr, opts)
    end
  end
end

--- The patchwise client attached to a buffer, if any.
function M.client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  return get({ bufnr = bufnr, name = 'patchwise' })[1]
end

local function need_client(bufnr)
  local client = M.client(bufnr)
  if not client then
    notify('not attached to this buffer (is `patchwise` on PATH? see :checkhealth patchwise)', vim.log.levels.ERROR)
  end
  return client
end

--- Runs a `workspace/executeCommand` and calls `on_done(err, result)`.
function M.execute(bufnr, command, args, on_done)
  local client = need_client(bufnr)
  if not client then
    return
  end
  if args == nil or next(args) == nil then
    args = vim.empty_dict() -- an object, not [], for the server's argument struct
  end
  local params = { command = command, arguments = { args } }
  call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    if on_done then
      on_done(err, result)
    elseif err then
      notify(err.message, vim.log.levels.WARN)
    end
  end, bufnr)
end

local function refresh(bufnr)
  if vim.lsp.codelens then
    pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
  end
end

--- The LSP range of whole lines `first`..`last` (1-based, inclusive) of a buffer.
function M.line_range(bufnr, first, last, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, last - 1, last, false)[1] or ''
  local character = #line
  if encoding and encoding ~= 'utf-8' then
    character = vim.lsp.util.character_offset(bufnr, last - 1, #line, encoding)
  end
  return { start = { line = first - 1, character = 0 }, ['end'] = { line = last - 1, character = character } }
end

--- Runs `patchwise.edit` and calls `on_done(finished)` with the run's end
--- (`{ ok, proposal = {id, …} }` or `{ ok = false, error }`).
function M.edit(uri, range, instruction, bufnr, on_done)
  bufnr = bufnr or vim.uri_to_bufnr(uri)
  on_done = on_done or M.report_run
  M.execute(bufnr, 'patchwise.edit', { uri = uri, range = range, instruction = instruction }, function(err, result)
    if err then
      on_done({ ok = false, error = err.message })
    elseif result and result.id ~= nil then
      -- A server that answers with the proposal itself.
      on_done({ ok = true, proposal = result })
    elseif result and result.runId then
      wait_run(result.runId, vim.schedule_wrap(on_done))
    else
      on_done({ ok = false, error = 'unexpected answer: ' .. vim.inspect(result) })
    end
  end)
end

--- Tells the user how a run ended and refreshes code lenses.
function M.report_run(finished)
  if finished.ok and finished.proposal then
    local p = finished.proposal
    if p.applied then
      notify(('proposal %s applied'):format(p.id))
    else
      notify(('proposal %s ready — hover or :PatchwiseDiff to review, :PatchwiseAccept / :PatchwiseReject'):format(p.id))
    end
  elseif not finished.cancelled then
    notify(finished.error or 'the edit failed', vim.log.levels.WARN)
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if M.client(bufnr) then
      refresh(bufnr)
    end
  end
end

--- Asks for an instruction (vim.ui.input), then edits `range` of `bufnr`.
function M.ask_and_edit(bufnr, range, instruction)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local uri = vim.uri_from_bufnr(bufnr)
  if instruction and instruction ~= '' then
    return M.edit(uri, range, instruction, bufnr)
  end
  vim.ui.input({ prompt = 'patchwise instruction: ' }, function(answer)
    if answer and vim.trim(answer) ~= '' then
      M.edit(uri, range, answer, bufnr)
    end
  end)
end

--- The proposal and hunk under the cursor, as the server's code actions there name them:
--- calls `callback({ id, hunk })` or `callback(nil)`.
function M.proposal_at_cursor(bufnr, callback)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = need_client(bufnr)
  if not client then
    return callback(nil)
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = M.line_range(bufnr, row, row, client.offset_encoding),
    context = { diagnostics = {} },
  }
  call(client, 'request', 'textDocument/codeAction', params, function(err, actions)
    local found
    for _, action in ipairs((not err and actions) or {}) do
      local command = type(action.command) == 'table' and action.command or action
      local arg = (command.arguments or {})[1]
      if
        (command.command == 'patchwise.proposal.accept' or command.command == 'patchwise.proposal.reject')
        and type(arg) == 'table'
        and arg.id ~= nil
      then
        -- A hunk-level action names the hunk under the cursor; prefer it.
        if not found or (found.hunk == nil and arg.hunk ~= nil) then
          found = { id = arg.id, hunk = arg.hunk }
        end
      end
    end
    callback(found)
  end, bufnr)
end

--- `patchwise.proposal.list`, then `callback(list)`.
function M.list_proposals(bufnr, callback)
  M.execute(bufnr, 'patchwise.proposal.list', {}, function(err, result)
    if err then
      notify(err.message, vim.log.levels.WARN)
      return
    end
    callback(result or {})
  end)
end

local function describe(p)
  local files, hunks = {}, 0
  for _, f in ipairs(p.files or {}) do
    table.insert(files, vim.fn.fnamemodify(vim.uri_to_fname(f.uri), ':~:.'))
    hunks = hunks + #(f.hunks or {})
  end
  local text = ('%s: %s — %s (%d hunk%s)'):format(
    p.id,
    vim.split(p.instruction or '', '\n')[1],
    table.concat(files, ', '),
    hunks,
    hunks == 1 and '' or 's'
  )
  if p.stale and p.stale ~= vim.NIL then
    text = text .. ' [stale: ' .. tostring(p.stale) .. ']'
  end
  return text
end

--- Picks a pending proposal (vim.ui.select) and calls `callback(proposal)`.
function M.pick_proposal(bufnr, prompt, callback)
  M.list_proposals(bufnr, function(list)
    if #list == 0 then
      notify('no pending proposals')
      return
    end
    vim.ui.select(list, { prompt = prompt, format_item = describe }, function(choice)
      if choice then
        callback(choice)
      end
    end)
  end)
end

--- Accepts or rejects the hunk under the cursor, or (`whole`) its whole proposal; without a
--- proposal under the cursor, asks which one.
function M.decide(decision, whole, bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local command = 'patchwise.proposal.' .. decision
  local function run(id, hunk)
    local args = { id = id }
    if not whole and hunk ~= nil then
      args.hunk = hunk
    end
    M.execute(bufnr, command, args, function(err)
      if err then
        notify(err.message, vim.log.levels.WARN)
      end
      refresh(bufnr)
    end)
  end
  M.proposal_at_cursor(bufnr, function(at)
    if at then
      return run(at.id, at.hunk)
    end
    M.pick_proposal(bufnr, decision == 'accept' and 'Accept which proposal?' or 'Reject which proposal?', function(p)
      run(p.id, nil)
    end)
  end)
end

local function float(lines, filetype, title)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = filetype
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  local width = math.min(vim.o.columns - 4, 100)
  local height = math.min(vim.o.lines - 4, #lines)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    width = width,
    height = math.max(height, 1),
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = 'rounded',
    title = title,
  })
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, nowait = true })
  return buf, win
end

--- Shows proposal `id`: a diff split between the file and its proposed text (from
--- `patchwise/proposalContent`), or (`unified`, or a server without it) the unified diff in a
--- floating window.
function M.diff_proposal(bufnr, id, unified)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = need_client(bufnr)
  if not client or id == nil then
    return
  end
  local function show_unified()
    M.execute(bufnr, 'patchwise.proposal.diff', { id = id, show = false }, function(err, diff)
      if err then
        return notify(err.message, vim.log.levels.WARN)
      end
      float(vim.split(diff or '', '\n', { plain = true }), 'diff', (' patchwise proposal %s '):format(id))
    end)
  end
  if unified then
    return show_unified()
  end
  local uri = vim.uri_from_bufnr(bufnr)
  call(client, 'request', 'patchwise/proposalContent', { id = id, uri = uri }, function(err, text)
    if err then
      if err.code == vim.lsp.protocol.ErrorCodes.MethodNotFound then
        return show_unified()
      end
      return notify(err.message, vim.log.levels.WARN)
    end
    if type(text) == 'table' then
      text = text.text
    end
    local source_win = vim.fn.bufwinid(bufnr)
    if source_win ~= -1 then
      vim.api.nvim_set_current_win(source_win)
    end
    local filetype = vim.bo[bufnr].filetype
    vim.cmd('diffthis')
    vim.cmd('vertical rightbelow new')
    local scratch = vim.api.nvim_get_current_buf()
    local lines = vim.split(text or '', '\n', { plain = true })
    if lines[#lines] == '' then
      table.remove(lines)
    end
    vim.api.nvim_buf_set_lines(scratch, 0, -1, false, lines)
    vim.bo[scratch].buftype = 'nofile'
    vim.bo[scratch].bufhidden = 'wipe'
    vim.bo[scratch].swapfile = false
    vim.bo[scratch].filetype = filetype
    vim.bo[scratch].modifiable = false
    pcall(vim.api.nvim_buf_set_name, scratch, ('patchwise://proposal/%s/%s'):format(id, vim.fn.fnamemodify(vim.uri_to_fname(uri), ':t')))
    vim.cmd('diffthis')
    vim.b[scratch].patchwise_proposal = id
  end, bufnr)
end

--- `:PatchwiseDiff`: the proposal under the cursor, else a picked one.
function M.diff(unified)
  local bufnr = vim.api.nvim_get_current_buf()
  M.proposal_at_cursor(bufnr, function(at)
    if at then
      return M.diff_proposal(bufnr, at.id, unified)
    end
    M.pick_proposal(bufnr, 'Diff of which proposal?', function(p)
      M.diff_proposal(bufnr, p.id, unified)
    end)
  end)
end

--- `:PatchwiseProposals`: pick a pending proposal and go to its first hunk.
function M.proposals()
  local bufnr = vim.api.nvim_get_current_buf()
  M.pick_proposal(bufnr, 'Pending proposals', function(p)
    local file = (p.files or {})[1]
    if not file then
      return
    end
    vim.cmd.edit(vim.fn.fnameescape(vim.uri_to_fname(file.uri)))
    local hunk = (file.hunks or {})[1]
    if hunk and hunk.range then
      pcall(vim.api.nvim_win_set_cursor, 0, { hunk.range.start.line + 1, 0 })
    end
  end)
end

local function open_report(result)
  -- The server opens the report with window/showDocument; open it here if it did not.
  local report = result and result.report
  if type(report) == 'string' and vim.api.nvim_buf_get_name(0) ~= report then
    vim.cmd.edit(vim.fn.fnameescape(report))
  end
end

--- Calls `run(text)` with `given` unless it is blank, else with what the user types at `prompt`
--- (nothing when they type nothing).
local function with_text(given, prompt, run)
  if given and vim.trim(given) ~= '' then
    return run(given)
  end
  vim.ui.input({ prompt = prompt }, function(answer)
    if answer and vim.trim(answer) ~= '' then
      run(answer)
    end
  end)
end

--- `:PatchwiseResearch {question}`.
function M.research(question, on_done)
  local bufnr = vim.api.nvim_get_current_buf()
  local function run(query)
    notify('researching: ' .. query)
    follow(bufnr, 'patchwise.research', { query = query }, function(err, result)
      if err then
        notify(err.message, vim.log.levels.WARN)
      else
        open_report(result)
        notify(('research saved (%s sources)'):format(result and result.sources or 0))
      end
      if on_done then
        on_done(err, result)
      end
    end)
  end
  with_text(question, 'patchwise research question: ', run)
end

--- `:PatchwiseLibrary`: pick earlier research and open its report.
function M.library(on_done)
  local bufnr = vim.api.nvim_get_current_buf()
  M.execute(bufnr, 'patchwise.research.list', { limit = 200 }, function(err, entries)
    if err then
      return notify(err.message, vim.log.levels.WARN)
    end
    if not entries or #entries == 0 then
      return notify('the research library is empty — :PatchwiseResearch first')
    end
    vim.ui.select(entries, {
      prompt = 'Research library',
      format_item = function(e)
        return ('%s  [%s]'):format(e.query, e.status or '')
      end,
    }, function(choice)
      if not choice then
        return
      end
      M.execute(bufnr, 'patchwise.research.open', { id = choice.id }, function(open_err, result)
        if open_err then
          notify(open_err.message, vim.log.levels.WARN)
        else
          open_report(result)
        end
        if on_done then
          on_done(open_err, result)
        end
      end)
    end)
  end)
end

--- `:PatchwiseDevelop {request}`: explore → plan (you approve it) → steps → checks → proposal.
--- Asks for the request when it is blank; `bufnr` (default: the current buffer) is the file the
--- planner looks at first.
function M.develop(request, on_done, bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = need_client(bufnr)
  if not client then
    return
  end
  local commands = vim.tbl_get(client.server_capabilities or {}, 'executeCommandProvider', 'commands') or {}
  if not vim.tbl_contains(commands, 'patchwise.develop') then
    return notify('this patchwise server does not offer develop; update patchwise', vim.log.levels.WARN)
  end
  local function run(text)
    local uri = vim.api.nvim_buf_get_name(bufnr) ~= '' and vim.uri_from_bufnr(bufnr) or nil
    notify('developing: ' .. text)
    follow(bufnr, 'patchwise.develop', { request = text, uri = uri }, function(err, result)
      if err then
        notify(err.message, vim.log.levels.WARN)
      else
        local files = {}
        for _, f in ipairs(result and result.files or {}) do
          table.insert(files, f.created and (f.path .. ' (new)') or f.path)
        end
        notify(('proposal %s ready: %s — :PatchwiseProposals to review, :PatchwiseAccept! / :PatchwiseReject!'):format(
          result and result.id or '?',
          table.concat(files, ', ')
        ))
        for _, b in ipairs(vim.api.nvim_list_bufs()) do
          if M.client(b) then
            refresh(b)
          end
        end
      end
      if on_done then
        on_done(err, result)
      end
    end)
  end
  with_text(request, 'patchwise develop: ', run)
end

--- `:PatchwiseCancel`: stops every running edit, develop or research.
function M.cancel()
  M.execute(0, 'patchwise.cancel', {}, function(err, result)
    if err then
      return notify(err.message, vim.log.levels.WARN)
    end
    notify(('cancelled %s running task(s)'):format(result and result.cancelled or 0))
  end)
end

--- The server's copy of a buffer's text (`patchwise/viewFileText`), for checking sync.
function M.view_file_text(bufnr, timeout_ms)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = M.client(bufnr)
  if not client then
    return nil, 'patchwise is not attached to this buffer'
  end
  local response, err =
    call(client, 'request_sync', 'patchwise/viewFileText', { uri = vim.uri_from_bufnr(bufnr) }, timeout_ms or 5000, bufnr)
  if not response then
    return nil, err
  end
  if response.err then
    return nil, response.err.message
  end
  return response.result
end

return M
