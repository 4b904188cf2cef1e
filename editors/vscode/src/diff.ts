// Applying a unified diff (as `patchwise.proposal.diff` returns it) to a file's text: the
// fallback for servers without `patchwise/proposalContent`. Strict: a hunk whose context does not
// match the text is an error, never a guess.

interface Hunk {
  oldStart: number;
  lines: string[];
}

/** The hunks of the file section whose `+++` path ends with `path` (or the only section). */
function sectionFor(diff: string, path: string): Hunk[] {
  const sections: { path: string; hunks: Hunk[] }[] = [];
  let hunk: Hunk | undefined;
  // Lines still expected in the current hunk (from its header's counts): inside a hunk a line
  // such as `--- x` is a removed `-- x`, not a file header.
  let oldLeft = 0;
  let newLeft = 0;
  for (const line of diff.split('\n')) {
    if (hunk && (oldLeft > 0 || newLeft > 0)) {
      if (line.startsWith('\\')) {
        hunk.lines.push(line);
        continue;
      }
      const kind = line[0] ?? ' ';
      hunk.lines.push(line.length === 0 ? ' ' : line);
      if (kind !== '+') oldLeft--;
      if (kind !== '-') newLeft--;
      continue;
    }
    if (hunk && line.startsWith('\\')) {
      hunk.lines.push(line);
      continue;
    }
    if (line.startsWith('+++ ')) {
      sections.push({ path: line.slice(4).replace(/^b\//, '').trim(), hunks: [] });
      continue;
    }
    const header = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line);
    if (header) {
      if (sections.length === 0) {
        sections.push({ path: '', hunks: [] });
      }
      hunk = { oldStart: Number(header[1]), lines: [] };
      oldLeft = header[2] === undefined ? 1 : Number(header[2]);
      newLeft = header[3] === undefined ? 1 : Number(header[3]);
      sections[sections.length - 1].hunks.push(hunk);
    }
  }
  const normalized = path.replace(/\\/g, '/');
  const found =
    sections.find((s) => s.path !== '' && (normalized === s.path || normalized.endsWith(`/${s.path}`))) ??
    (sections.length === 1 ? sections[0] : undefined);
  if (!found) {
    throw new Error(`the diff does not change ${path}`);
  }
  return found.hunks;
}

/** `original` with the diff's hunks for `path` applied. */
export function applyUnifiedDiff(original: string, diff: string, path: string): string {
  const eol = original.includes('\r\n') ? '\r\n' : '\n';
  const endsWithNewline = original.endsWith('\n');
  const lines = original.split(/\r?\n/);
  if (endsWithNewline) {
    lines.pop();
  }
  const out: string[] = [];
  let next = 0; // index into lines
  let noNewlineAtEnd = !endsWithNewline;
  for (const hunk of sectionFor(diff, path)) {
    // `-0,0` inserts before line 1; `-5,0` inserts after line 5.
    const removesOrKeeps = hunk.lines.some((l) => l[0] === ' ' || l[0] === '-');
    const start = removesOrKeeps ? Math.max(0, hunk.oldStart - 1) : hunk.oldStart;
    if (start < next) {
      throw new Error('overlapping hunks in the diff');
    }
    out.push(...lines.slice(next, start));
    next = start;
    let last = '';
    for (const line of hunk.lines) {
      const body = line.slice(1);
      if (line.startsWith('\\')) {
        // "\ No newline at end of file" refers to the line before it.
        noNewlineAtEnd = last === '+' || last === ' ';
        continue;
      }
      last = line[0];
      if (line[0] === '+') {
        out.push(body);
        continue;
      }
      if (lines[next] !== body) {
        throw new Error(`the file changed since the proposal was made (line ${next + 1})`);
      }
      if (line[0] === ' ') {
        out.push(body);
      }
      next++;
    }
  }
  out.push(...lines.slice(next));
  return out.join(eol) + (noNewlineAtEnd ? '' : eol);
}
