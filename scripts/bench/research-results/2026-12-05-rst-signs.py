#!/usr/bin/env python3
"""False positives and negatives of `research::rst::looks_like_rst` (a `.txt` page read as
reStructuredText when it shows two of five signs) over `.txt` files nobody here wrote.

The five patterns are `rst.rs`'s, written for Python's `re` (same meaning for these). Input: lines
`owner+name/repo:PATH` naming files in snapshots fetched under /work/.mirror (the `fetch` tool:
docutils/docutils, asciidoc-py/asciidoc-py, tpope/vim-fugitive, nvim-telescope/telescope.nvim,
and the corpora's repositories), read with `git show HEAD:PATH`.

    python3 2026-12-05-rst-signs.py 2026-12-05-rst-signs-files.txt

Result (2026-12-05): Docutils' sandbox (reStructuredText by convention) 82 of 216 read as such
(57 with the first four signs alone); every other group 0 (AsciiDoc 80, Vim help 4, Docutils'
entity tables 41, requirements, licences and test data 153).
"""
import collections, re, subprocess, sys

PATTERNS = [
    r"(?m)^\s*\.\. [A-Za-z][\w:.+-]*::",
    r"(?m)^\.\. _[^:\n]+:\s*$",
    r":[A-Za-z][\w:.+-]*:`[^`\n]+`",
    r"``[^`\n]+``",
    r"\S::[ \t]*\n[ \t]*\n[ \t]+\S",
]
SIGNS = [re.compile(p) for p in PATTERNS]

groups = collections.defaultdict(lambda: [0, 0, 0])
for line in open(sys.argv[1]):
    repo, path = line.strip().split(":", 1)
    text = subprocess.run(
        ["git", "-C", "/work/.mirror/" + repo, "show", "HEAD:" + path], capture_output=True
    ).stdout.decode("utf-8", "replace")
    shown = [bool(s.search(text)) for s in SIGNS]
    g = groups[repo.split("/")[0] + ":" + path.split("/")[0]]
    g[0] += 1
    g[1] += sum(shown[:4]) >= 2
    g[2] += sum(shown) >= 2
for name, (files, four, five) in sorted(groups.items()):
    print(f"{name}: {files} files, read as reStructuredText {five} ({four} with four signs)")
