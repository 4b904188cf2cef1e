#!/usr/bin/env python3
# Usage: 2026-12-03-setext-check.py CORPORA_DIR (markdown-it-py from PyPI); a record of the check of
# passages::setext_heading on 171 Markdown files nobody here wrote (2026-12-03-setext-check-results.txt).
"""Setext headings found by patchwise's rule (passages::setext_heading with blocks()' context: the
line above is alone after a blank line) against markdown-it-py (CommonMark) over every Markdown
file of the corpora. The rule is ported here line for line (`underline`, `heading`), so this checks
the rule, not the Rust; the Rust's own test is passages::tests::setext_headings_head_…. Fenced,
indented-code and HTML blocks are skipped as markdown-it finds them (blocks() skips fences), and a
YAML front matter's closing `---` (Poetry's docs: CommonMark reads the front matter as a setext
heading, which patchwise rightly does not) is not counted."""
import glob, sys, re
from markdown_it import MarkdownIt
md = MarkdownIt("commonmark")
def underline(l):
    l = l.strip()
    if l and set(l) == {"="}: return 1
    if len(l) >= 2 and set(l) == {"-"}: return 2
def heading(above, line):
    lv = underline(line)
    if not lv: return None
    t = above.strip()
    lst = t.startswith(('-', '*', '+')) or bool(re.match(r"^\d+[.)]", t))
    markup = t.startswith(('>', '|', '#', '`', '~', '<'))
    indent = len(above) - len(above.lstrip())
    return lv if t and not lst and not markup and indent < 4 else None
tp = fp = fn = 0; fps = []; fns = []
files = [f for f in glob.glob(sys.argv[1] + "/**/*.md", recursive=True)]
for f in files:
    lines = open(f, encoding="utf-8", errors="replace").read().split("\n")
    # compared by the line just above the underline (a title of several lines would be a miss)
    refl = set()
    for t in md.parse("\n".join(lines)):
        if t.type == "heading_open" and t.markup in ("=", "-"): refl.add(t.map[1] - 2)
    ours = set()
    fenced = set()
    for t in md.parse("\n".join(lines)):
        if t.type in ("fence", "code_block", "html_block") and t.map: fenced |= set(range(*t.map))
    front = set()
    if lines and lines[0].strip() == "---":
        end = next((k for k in range(1, len(lines)) if lines[k].strip() == "---"), 0)
        front = set(range(0, end + 1))
    refl -= front
    for i, l in enumerate(lines):
        if i in fenced or i < 1 or (i - 1) in fenced: continue
        if (i < 2 or not lines[i-2].strip()) and heading(lines[i-1], l): ours.add(i - 1)
    for i in ours & refl: tp += 1
    for i in ours - refl: fp += 1; fps.append(f"{f}:{i+1}: {lines[i][:60]!r} / {lines[i+1][:20]!r}")
    for i in refl - ours: fn += 1; fns.append(f"{f}:{i+1}: {lines[i][:60]!r} / {lines[i+1][:20]!r}")
print(f"{len(files)} files; setext headings by CommonMark {tp+fn}; found {tp}; false positives {fp}; false negatives {fn}")
for x in fps[:15]: print("FP", x)
for x in fns[:15]: print("FN", x)
