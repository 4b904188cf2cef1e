-- Driven by tests/nvim.rs: one scenario (PATCHWISE_SCENARIO) of the plugin's user commands in
-- headless Neovim, against the real server and a scripted model. The user's answers to prompts
-- (vim.ui.input, vim.ui.select) are scripted; what is reported is the editor's state — buffer
-- text, windows, the current file — never only the server's answers.
local out = assert(os.getenv('PATCHWISE_OUT'))
local scenario = assert(os.getenv('PATCHWISE_SCENARIO'))
local report = { ok = false, scenario = scenario, notes = {} }

local function lines_of(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n') .. '\n'
end

local function wait(ms, what, predicate)
  assert(vim.wait(ms, predicate, 20), 'timed out waiting for ' .. what .. '; notes: ' .. vim.inspect(report.notes))
end

local function noted(text)
  for _, n in ipairs(report.notes) do
    if n:find(text, 1, true) then
      return n
    end
  end
end

local ok, err = pcall(function()
  vim.opt.rtp:prepend(assert(os.getenv('PATCHWISE_PLUGIN')))
  vim.cmd('runtime plugin/patchwise.lua')
  local patchwise = require('patchwise')
  local init = os.getenv('PATCHWISE_INIT')
  patchwise.setup({
    cmd = { assert(os.getenv('PATCHWISE_BIN')), 'serve' },
    init_options = init and vim.json.decode(init) or {},
  })
  vim.notify = function(msg)
    table.insert(report.notes, msg)
  end
  local answers = vim.split(os.getenv('PATCHWISE_ANSWERS') or '', '\n', { plain = true })
  vim.ui.input = function(_, on_confirm)
    on_confirm(table.remove(answers, 1))
  end
  vim.ui.select = function(items, opts, on_choice)
    report.choices = {}
    for _, item in ipairs(items) do
      -- One value: Neovim's own format_item (showMessageRequest's) also returns gsub's count.
      local label = (opts.format_item or tostring)(item)
      table.insert(report.choices, label)
    end
    on_choice(items[1], 1)
  end

  vim.cmd.edit(assert(os.getenv('PATCHWISE_FILE')))
  local bufnr = vim.api.nvim_get_current_buf()
  wait(30000, 'the server to attach', function()
    local client = patchwise.client(bufnr)
    return client ~= nil and client.initialized
  end)
  report.original = lines_of(bufnr)

  local function edit_lines(first, last, args)
    vim.cmd(('%d,%dPatchwiseEdit %s'):format(first, last, args or ''))
    wait(60000, 'the edit to finish', function()
      return noted('ready') or noted('failed') or noted('no proposal') or noted('error')
    end)
    assert(noted('ready'), 'no proposal: ' .. vim.inspect(report.notes))
  end

  -- Runs an Ex command that accepts a proposal; returns once the buffer has changed.
  local function until_changed(command)
    local before = lines_of(bufnr)
    vim.cmd(command)
    wait(30000, command .. ' to change the buffer', function()
      return lines_of(bufnr) ~= before
    end)
  end

  local function lenses()
    local client = patchwise.client(bufnr)
    local response = assert(client:request_sync('textDocument/codeLens', { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }, 10000, bufnr))
    local titles = {}
    for _, lens in ipairs(response.result or {}) do
      table.insert(titles, lens.command.title)
    end
    return titles
  end

  if scenario == 'edit_accept_hunk' then
    -- The instruction comes from the prompt; the hunk under the cursor is accepted.
    edit_lines(13, 16)
    report.lenses = lenses()
    report.progress = vim.deepcopy(patchwise.progress_log)
    vim.api.nvim_win_set_cursor(0, { 14, 0 })
    until_changed('PatchwiseAccept')
    report.lenses_after = lenses()
  elseif scenario == 'reject_whole' then
    -- The instruction as the command's argument; `!` rejects the whole proposal.
    edit_lines(13, 16, 'return the sum directly')
    vim.api.nvim_win_set_cursor(0, { 14, 0 })
    vim.cmd('PatchwiseReject!')
    wait(30000, 'the proposal to go', function()
      return #lenses() == 0
    end)
  elseif scenario == 'diff' then
    edit_lines(13, 16)
    vim.api.nvim_win_set_cursor(0, { 14, 0 })
    local windows = #vim.api.nvim_tabpage_list_wins(0)
    vim.cmd('PatchwiseDiff')
    wait(10000, 'the diff split', function()
      return #vim.api.nvim_tabpage_list_wins(0) > windows
    end)
    local scratch = vim.api.nvim_get_current_buf()
    report.diff_windows = {}
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      table.insert(report.diff_windows, vim.wo[win].diff)
    end
    report.proposed = lines_of(scratch)
    report.scratch_name = vim.api.nvim_buf_get_name(scratch)
    report.scratch_modifiable = vim.bo[scratch].modifiable
    -- The unified diff in a floating window.
    vim.cmd('wincmd p')
    vim.api.nvim_win_set_cursor(0, { 14, 0 })
    vim.cmd('PatchwiseDiff!')
    wait(10000, 'the floating diff', function()
      return vim.api.nvim_win_get_config(0).relative ~= ''
    end)
    report.unified = lines_of(vim.api.nvim_get_current_buf())
    report.float_filetype = vim.bo.filetype
    vim.cmd('close')
  elseif scenario == 'proposals' then
    edit_lines(13, 16)
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    vim.cmd('PatchwiseProposals')
    wait(10000, 'the jump to the proposal', function()
      return vim.api.nvim_win_get_cursor(0)[1] ~= 1
    end)
    report.cursor_line = vim.api.nvim_win_get_cursor(0)[1]
    -- Accept with the cursor away from any proposal: the picker asks which one.
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    until_changed('PatchwiseAccept')
  elseif scenario == 'research_library' then
    vim.cmd('PatchwiseResearch what does norm1 compute')
    wait(60000, 'the report to open', function()
      return vim.api.nvim_buf_get_name(0):match('%.md$') ~= nil
    end)
    report.report_name = vim.api.nvim_buf_get_name(0)
    report.report_text = lines_of(0)
    -- Back to the code, then reopen the report from the library.
    vim.cmd.buffer(bufnr)
    vim.cmd('PatchwiseLibrary')
    -- The research run may still open its report a second time (window/showDocument arrives
    -- late on a loaded machine): wait for the library's own pick, then the report.
    wait(30000, 'the library report to open', function()
      return report.choices ~= nil and vim.api.nvim_buf_get_name(0):match('%.md$') ~= nil
    end)
    report.library_name = vim.api.nvim_buf_get_name(0)
    vim.cmd.buffer(bufnr)
  elseif scenario == 'cancel' then
    -- The model never answers; :PatchwiseCancel stops the run.
    vim.cmd('13,16PatchwiseEdit return the sum directly')
    wait(30000, 'the run to start', function()
      return patchwise.status() ~= ''
    end)
    report.status_running = patchwise.status()
    vim.cmd('PatchwiseCancel')
    wait(30000, 'the run to end', function()
      return patchwise.status() == '' and noted('cancelled') ~= nil
    end)
    vim.wait(300)
    report.status_after = patchwise.status()
  elseif scenario == 'develop' then
    -- "Develop…" from the code actions on the first line: the plugin asks for the request, the
    -- server shows the plan and asks to approve it (vim.ui.select answers Approve), and the
    -- multi-file proposal is accepted whole, then saved.
    local client = patchwise.client(bufnr)
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      range = patchwise.line_range(bufnr, 1, 1, client.offset_encoding),
      context = { diagnostics = {} },
    }
    local response = assert(client:request_sync('textDocument/codeAction', params, 10000, bufnr))
    assert(not response.err, vim.inspect(response.err))
    local develop
    report.actions = {}
    for _, action in ipairs(response.result or {}) do
      table.insert(report.actions, action.title)
      if action.title == 'Develop…' then
        develop = action
      end
    end
    assert(develop, 'no "Develop…" action: ' .. vim.inspect(report.actions))
    client:exec_cmd(develop.command, { bufnr = bufnr })
    wait(120000, 'the develop run to finish', function()
      return noted('proposal') ~= nil or noted('develop:') ~= nil
    end)
    report.ready = noted('ready')
    assert(report.ready, 'no proposal: ' .. vim.inspect(report.notes))
    report.approval = report.choices
    report.plan_shown = vim.api.nvim_buf_get_name(0)
    vim.cmd.buffer(bufnr)
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    until_changed('PatchwiseAccept!')
    vim.cmd('silent wall')
  elseif scenario == 'health' then
    vim.cmd('checkhealth patchwise')
    report.health = lines_of(vim.api.nvim_get_current_buf())
  else
    error('unknown scenario ' .. scenario)
  end
  report.buffer = lines_of(bufnr)
  report.server = patchwise.view_file_text(bufnr, 10000)
  report.ok = true
end)
if not ok then
  report.error = tostring(err)
end
local f = assert(io.open(out, 'w'))
f:write(vim.json.encode(report))
f:close()
vim.cmd('qa!')
