// A second real client: vscode-jsonrpc (the library under VS Code's language client) drives
// `patchwise serve`. JavaScript strings are UTF-16, so the client's positions are the editor's
// own. Run by tests/node_client.rs with PATCHWISE_BIN set; exits non-zero on any mismatch.
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import * as rpc from 'vscode-jsonrpc/node';

const bin = process.env.PATCHWISE_BIN;
assert.ok(bin, 'PATCHWISE_BIN must name the patchwise binary');
const child = spawn(bin, ['serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
const conn = rpc.createMessageConnection(
  new rpc.StreamMessageReader(child.stdout),
  new rpc.StreamMessageWriter(child.stdin),
);
conn.onRequest(() => null);
conn.listen();

const init = await conn.sendRequest('initialize', {
  processId: process.pid,
  rootUri: null,
  capabilities: {
    general: { positionEncodings: ['utf-16'] },
    experimental: { patchwise: { instructionInput: true } },
  },
});
assert.equal(init.capabilities.positionEncoding, 'utf-16');
assert.equal(init.serverInfo.name, 'patchwise');
await conn.sendNotification('initialized', {});

const uri = 'file:///tmp/patchwise-node-client/main.ts';
let text = 'const greeting = "héllo 😀";\r\nexport function main() {\n  return greeting;\n}\n';
await conn.sendNotification('textDocument/didOpen', {
  textDocument: { uri, languageId: 'typescript', version: 1, text },
});

// Position of a UTF-16 offset: lines end at \n, \r\n or \r.
function positionOf(s, offset) {
  let line = 0;
  let start = 0;
  for (let i = 0; i < offset; i++) {
    const c = s[i];
    if (c === '\n' || (c === '\r' && s[i + 1] !== '\n')) {
      line++;
      start = i + 1;
    } else if (c === '\r') {
      if (i + 1 < offset) {
        line++;
        start = i + 2;
      }
      i++;
    }
  }
  return { line, character: offset - start };
}

// Offsets a client can name: not inside a surrogate pair, not between \r and \n.
function nameable(s, offset) {
  const code = s.charCodeAt(offset);
  const isLow = code >= 0xdc00 && code <= 0xdfff;
  const splitsCrlf = offset > 0 && s[offset - 1] === '\r' && s[offset] === '\n';
  return !isLow && !splitsCrlf;
}

let seed = 42;
const random = (n) => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % Math.max(1, n);
};
const pieces = ['a', '😀', '日本', 'e\u0301', '\n', '\r\n', ' ', ''];
const pending = [];
for (let version = 2; version <= 400; version++) {
  let start = random(text.length + 1);
  while (!nameable(text, start)) start--;
  let end = Math.min(text.length, start + random(4));
  while (!nameable(text, end)) end++;
  const insert = pieces[random(pieces.length)];
  const range = { start: positionOf(text, start), end: positionOf(text, end) };
  text = text.slice(0, start) + insert + text.slice(end);
  conn.sendNotification('textDocument/didChange', {
    textDocument: { uri, version },
    contentChanges: [{ range, text: insert }],
  });
  if (version % 50 === 0) {
    const expected = text;
    pending.push(conn.sendRequest('patchwise/viewFileText', { uri }).then((got) => assert.equal(got, expected)));
  }
}
await Promise.all(pending);
assert.equal(await conn.sendRequest('patchwise/viewFileText', { uri }), text);

// Code actions are commands; none calls a model.
const actions = await conn.sendRequest('textDocument/codeAction', {
  textDocument: { uri },
  range: { start: { line: 0, character: 0 }, end: { line: 0, character: 5 } },
  context: { diagnostics: [] },
});
assert.ok(actions.some((a) => a.title === 'Edit selection…' && a.command.command === 'patchwise.editSelection'));

await assert.rejects(conn.sendRequest('patchwise/nope', {}), (e) => e.code === -32601);
await conn.sendRequest('shutdown');
await conn.sendNotification('exit');
assert.equal(await exited, 0);
console.log('node client: ok');
process.exit(0);
