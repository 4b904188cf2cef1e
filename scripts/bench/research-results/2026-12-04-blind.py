#!/usr/bin/env python3
"""Blind the reports of two arms for a reader: blind.py OUT CORPUS ARM1 ARM2 DEST SEED.
Writes DEST/q{n}-X.md and q{n}-Y.md (X/Y assigned at random per question), rows-X.jsonl and
rows-Y.jsonl (wall times by question, the row of the arm behind each label), and the key to
DEST/../key-CORPUS.json (outside the reader's folder)."""
import json, os, random, shutil, sys
out, corpus, a1, a2, dest, seed = sys.argv[1:7]
random.seed(int(seed))
os.makedirs(dest, exist_ok=True)
rows = {a: {json.loads(l)['n']: json.loads(l) for l in open(f'{out}/{corpus}-{a}.jsonl')} for a in (a1, a2)}
key = {}
rx, ry = [], []
for n in sorted(rows[a1]):
    pair = [a1, a2]
    random.shuffle(pair)
    key[n] = {'X': pair[0], 'Y': pair[1]}
    for label, arm in zip('XY', pair):
        rep = json.load(open(f'{out}/{corpus}-{arm}-reports/q{n:02d}.json'))
        shutil.copy(rep['report'], f'{dest}/q{n}-{label}.md')
        row = dict(rows[arm][n]); row.pop('notes', None)
        (rx if label == 'X' else ry).append({'n': n, 'wall': row.get('wall')})
with open(f'{dest}/rows-X.jsonl', 'w') as f:
    f.writelines(json.dumps(r) + '\n' for r in rx)
with open(f'{dest}/rows-Y.jsonl', 'w') as f:
    f.writelines(json.dumps(r) + '\n' for r in ry)
json.dump(key, open(f'{os.path.dirname(dest.rstrip("/"))}/key-{corpus}.json', 'w'), indent=1)
print('blinded', len(key), 'questions into', dest)
