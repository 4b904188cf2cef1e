// The extension inside a real VS Code: code-server (VS Code 1.99 in the browser) with the packaged
// .vsix installed, driven by headless Chromium through playwright-core, against the real
// `patchwise` binary and a scripted model server. Run by tests/vscode.rs, which starts the model
// server and checks the report this script prints; it can also be run by hand with the same
// environment variables.
//
// As a user would: open a file, select lines, "patchwise: Edit Selection…", type the
// instruction, wait for the code lens, hover the change (screenshot), open the diff view
// (screenshot), Accept, read the editor's text, save; then "patchwise: Research…" and wait for
// the report to open; then completion as you type: open another file, type at the end of a
// line, wait for the ghost text (screenshot), Tab, read the editor's text, save.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} must be set (see tests/vscode.rs)`);
  }
  return value;
};
const codeServer = env('CODE_SERVER');
const browserPath = env('CHROMIUM');
const vsix = env('VSIX');
const workspace = env('WORKSPACE');
const file = env('FILE'); // relative to the workspace
const [firstLine, lastLine] = env('LINES').split('-').map(Number);
const instruction = env('INSTRUCTION');
const expected = env('EXPECTED');
const question = env('QUESTION');
const artifacts = env('ARTIFACTS');
const settings = JSON.parse(env('SETTINGS'));
// Completion as you type: the file, the line (1-based) whose end the user types at, what is typed.
const completionFile = env('COMPLETION_FILE');
const completionLine = Number(env('COMPLETION_LINE'));
const completionTyped = env('COMPLETION_TYPED');
mkdirSync(artifacts, { recursive: true });
rmSync(join(artifacts, 'vscode-failure.png'), { force: true });

const report = { ok: false, steps: [] };
const step = (name) => {
  report.steps.push(name);
  console.error(`e2e: ${name}`);
};

const home = mkdtempSync(join(tmpdir(), 'patchwise-code-server-'));
const userData = join(home, 'user-data');
const extensions = join(home, 'extensions');
mkdirSync(join(userData, 'User'), { recursive: true });
const childEnv = {
  ...process.env,
  XDG_CONFIG_HOME: join(home, 'config'),
  XDG_DATA_HOME: join(home, 'data'),
  XDG_CACHE_HOME: join(home, 'cache'),
  // No extension marketplace: the closed network would only refuse it.
  EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: 'http://127.0.0.1:9', itemUrl: 'http://127.0.0.1:9' }),
};
writeFileSync(
  join(userData, 'User', 'settings.json'),
  JSON.stringify(
    {
      'security.workspace.trust.enabled': false,
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'workbench.enableExperiments': false,
      'telemetry.telemetryLevel': 'off',
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'update.mode': 'none',
      'editor.codeLens': true,
      'editor.hover.delay': 200,
      'editor.minimap.enabled': false,
      'chat.commandCenter.enabled': false,
      ...settings,
    },
    null,
    2,
  ),
);

step('install the .vsix');
const installed = spawnSync(
  codeServer,
  ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', vsix],
  { env: childEnv, encoding: 'utf8' },
);
if (installed.status !== 0 || !/successfully installed/i.test(installed.stdout + installed.stderr)) {
  throw new Error(`code-server --install-extension failed:\n${installed.stdout}\n${installed.stderr}`);
}

step('start code-server');
const server = spawn(
  codeServer,
  [
    '--auth', 'none',
    '--bind-addr', '127.0.0.1:0',
    '--user-data-dir', userData,
    '--extensions-dir', extensions,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    '--ignore-last-opened',
    workspace,
  ],
  { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] },
);
let serverLog = '';
const url = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`code-server did not start:\n${serverLog}`)), 60000);
  const onData = (chunk) => {
    serverLog += chunk;
    const found = /HTTP server listening on (http:\/\/[^\s]+)/.exec(serverLog);
    if (found) {
      clearTimeout(timer);
      resolve(found[1]);
    }
  };
  server.stdout.on('data', onData);
  server.stderr.on('data', onData);
  server.on('exit', (code) => reject(new Error(`code-server exited (${code}):\n${serverLog}`)));
});

const browser = await chromium.launch({
  executablePath: browserPath,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const shot = (name) => page.screenshot({ path: join(artifacts, name) });

/** The text of the visible editor's lines, top to bottom (ghost text, which is not text, left out). */
async function editorText(selector = '.editor-instance .monaco-editor') {
  return page.evaluate((sel) => {
    const editors = [...document.querySelectorAll(sel)].filter((e) => e.offsetParent !== null);
    const editor = editors[0];
    if (!editor) return null;
    const lines = [...editor.querySelectorAll('.view-lines .view-line')]
      .map((l) => {
        const line = l.cloneNode(true);
        line.querySelectorAll('.ghost-text-decoration, .ghost-text-decoration-preview').forEach((g) => g.remove());
        return { top: parseFloat(l.style.top || '0'), text: line.textContent ?? '' };
      })
      .sort((a, b) => a.top - b.top);
    return lines.map((l) => l.text.replace(/\u00a0/g, ' ')).join('\n');
  }, selector);
}

/** The ghost text shown in the visible editor: inline at the cursor, and the lines below it. */
async function ghostText() {
  return page.evaluate(() => {
    const editor = [...document.querySelectorAll('.editor-instance .monaco-editor')].find((e) => e.offsetParent !== null);
    if (!editor) return null;
    const text = (e) => (e.textContent ?? '').replace(/\u00a0/g, ' ');
    // The inline part comes in a span per token; the lines below are a view zone's.
    return {
      inline: [...editor.querySelectorAll('.view-lines .ghost-text-decoration')].map(text).join(''),
      lines: [...editor.querySelectorAll('.view-zones .suggest-preview-text .view-line')].map(text),
    };
  });
}

async function palette(command) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${command}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: command }).first();
  await row.waitFor();
  await row.click();
}

async function answerInput(text) {
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor({ state: 'visible' });
  await input.fill(text);
  await page.keyboard.press('Enter');
}

try {
  step('open the workbench');
  await page.goto(`${url}?folder=${encodeURIComponent(workspace)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 120000 });
  // The extension is up when its status bar item says the server runs.
  await page.locator('.statusbar-item', { hasText: /patchwise: / }).first().waitFor({ timeout: 120000 });

  step('open the file');
  await page.keyboard.press('Control+P');
  await page.locator('.quick-input-widget input.input').fill(file);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: file.split('/').pop() }).first().waitFor();
  await page.keyboard.press('Enter');
  await page.locator('.tab', { hasText: file.split('/').pop() }).first().waitFor();
  await page.locator('.editor-instance .monaco-editor .view-lines').first().click();

  step('select the lines');
  await page.keyboard.press('Control+G');
  await answerInput(String(firstLine));
  await page.keyboard.press('Home');
  for (let line = firstLine; line < lastLine; line++) {
    await page.keyboard.press('Shift+ArrowDown');
  }
  await page.keyboard.press('Shift+End');

  step('patchwise: Edit Selection…');
  await palette('patchwise: Edit Selection…');
  await answerInput(instruction);

  step('wait for the code lens');
  const lens = page.locator('.codelens-decoration a');
  await lens.filter({ hasText: /^Accept/ }).first().waitFor({ timeout: 120000 });
  report.lenses = await lens.allTextContents();

  step('hover the change');
  await page.keyboard.press('Escape');
  const changed = page.locator('.editor-instance .view-line', { hasText: 'let total' }).first();
  const box = await changed.boundingBox();
  let hover = null;
  for (let attempt = 0; attempt < 5 && !hover; attempt++) {
    await page.mouse.move(box.x + 60 + attempt * 10, box.y + box.height / 2);
    try {
      await page.locator('.monaco-hover', { hasText: 'patchwise proposal' }).first().waitFor({ timeout: 5000 });
      hover = await page.locator('.monaco-hover', { hasText: 'patchwise proposal' }).first().innerText();
    } catch {
      await page.mouse.move(0, 0);
    }
  }
  report.hover = hover;
  await shot('vscode-hover.png');
  await page.mouse.move(0, 0);

  step('open the diff view');
  await lens.filter({ hasText: /^Diff$/ }).first().click();
  await page.locator('.monaco-diff-editor').first().waitFor({ timeout: 30000 });
  await page.locator('.tab', { hasText: 'patchwise proposal' }).first().waitFor();
  // Let both sides render.
  await page.locator('.monaco-diff-editor .editor.modified .view-line', { hasText: 'abs()' }).first().waitFor();
  report.diffModified = await editorText('.monaco-diff-editor .editor.modified .monaco-editor');
  await shot('vscode-diff.png');
  await page.keyboard.press('Control+W');

  step('accept');
  await page.locator('.tab', { hasText: file.split('/').pop() }).first().click();
  const accept = lens.filter({ hasText: /^Accept( all)?$/ });
  const acceptAll = lens.filter({ hasText: /^Accept all$/ });
  await ((await acceptAll.count()) > 0 ? acceptAll : accept).first().click();
  // A server that marks its edit "needs confirmation" gets VS Code's Refactor Preview first.
  const apply = page.locator('.refactor-preview-buttons, .monaco-workbench .part.panel').getByRole('button', { name: 'Apply' });
  try {
    await apply.first().waitFor({ timeout: 3000 });
    report.refactorPreview = true;
    await apply.first().click();
  } catch {
    report.refactorPreview = false;
  }
  for (let waited = 0; waited < 30000; waited += 250) {
    report.buffer = await editorText();
    if (report.buffer?.includes(expected)) break;
    await page.waitForTimeout(250);
  }
  report.accepted = report.buffer?.includes(expected) ?? false;
  await page.keyboard.press('Control+S');
  await page.waitForTimeout(1000);

  step('patchwise: Research…');
  await palette('patchwise: Research…');
  await answerInput(question);
  await page.locator('.tab', { hasText: /\.md/ }).first().waitFor({ timeout: 120000 });
  report.researchTab = await page.locator('.tab.active').first().innerText();
  report.researchText = await editorText();
  await shot('vscode-research.png');

  step('completion: open the file');
  await page.keyboard.press('Control+P');
  await page.locator('.quick-input-widget input.input').fill(completionFile);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: completionFile.split('/').pop() }).first().waitFor();
  await page.keyboard.press('Enter');
  await page.locator('.tab.active', { hasText: completionFile.split('/').pop() }).first().waitFor();
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
  await page.locator('.editor-instance .monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+Home');
  for (let line = 1; line < completionLine; line++) {
    await page.keyboard.press('ArrowDown');
  }
  await page.keyboard.press('End');

  step('completion: type and wait for the ghost text');
  await page.keyboard.type(completionTyped);
  const ghost = page.locator('.editor-instance .monaco-editor .ghost-text-decoration');
  await ghost.first().waitFor({ timeout: 120000 });
  // The lines below the cursor's are a view zone, rendered just after the inline part.
  for (let waited = 0; waited < 10000; waited += 250) {
    report.ghost = await ghostText();
    if (report.ghost?.lines.length) break;
    await page.waitForTimeout(250);
  }
  report.textWithGhost = await editorText();
  // The suggestion is ghost text only: no completion item offers it.
  report.suggestWidget = await page.locator('.suggest-widget.visible .monaco-list-row').allTextContents();
  await shot('vscode-completion.png');

  step('completion: Tab accepts');
  await page.keyboard.press('Tab');
  // Changed, and the same on two reads in a row: while the editor renders the inserted lines,
  // a read can catch the view lines half drawn (the lines below the cursor missing).
  let previous = null;
  for (let waited = 0; waited < 30000; waited += 250) {
    report.completed = await editorText();
    if (report.completed !== report.textWithGhost && report.completed === previous) break;
    previous = report.completed;
    await page.waitForTimeout(250);
  }
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+S');
  await page.waitForTimeout(1000);
  report.ok = true;
} catch (error) {
  report.error = String(error?.stack ?? error);
  await shot('vscode-failure.png').catch(() => undefined);
} finally {
  await browser.close().catch(() => undefined);
  server.kill();
  report.serverLog = serverLog.slice(-4000);
  console.log(JSON.stringify(report));
}
process.exit(0);
