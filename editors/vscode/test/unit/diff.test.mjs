// The unified-diff fallback of the diff view (src/diff.ts), bundled by `npm run test:unit`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyUnifiedDiff } from '../../dist/test/diff.mjs';

const original = 'a\nb\nc\nd\ne\nf\n';

test('replaces, inserts and deletes lines', () => {
  const diff = '--- a/src/x.txt\n+++ b/src/x.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -5,2 +5,3 @@\n e\n+e2\n f\n';
  assert.equal(applyUnifiedDiff(original, diff, '/ws/src/x.txt'), 'a\nB\nc\nd\ne\ne2\nf\n');
});

test('picks the section of the file among several', () => {
  const diff = '--- a/one\n+++ b/one\n@@ -1 +1 @@\n-x\n+y\n--- a/src/x.txt\n+++ b/src/x.txt\n@@ -6 +6 @@\n-f\n+F\n';
  assert.equal(applyUnifiedDiff(original, diff, '/ws/src/x.txt'), 'a\nb\nc\nd\ne\nF\n');
});

test('a removed line that looks like a file header stays part of its hunk', () => {
  const text = '-- one\nkeep\n';
  const diff = '--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n--- one\n keep\n';
  assert.equal(applyUnifiedDiff(text, diff, 'q.sql'), 'keep\n');
});

test('pure insertion at the top, CRLF kept', () => {
  const diff = '--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+top\n';
  assert.equal(applyUnifiedDiff('a\r\nb\r\n', diff, 'x'), 'top\r\na\r\nb\r\n');
});

test('refuses when the context does not match', () => {
  const diff = '--- a/x\n+++ b/x\n@@ -2 +2 @@\n-zzz\n+y\n';
  assert.throws(() => applyUnifiedDiff(original, diff, 'x'), /changed since the proposal/);
});

test('refuses a diff for another file', () => {
  const diff = '--- a/one\n+++ b/one\n@@ -1 +1 @@\n-x\n+y\n--- a/two\n+++ b/two\n@@ -1 +1 @@\n-x\n+y\n';
  assert.throws(() => applyUnifiedDiff(original, diff, 'three'), /does not change three/);
});
