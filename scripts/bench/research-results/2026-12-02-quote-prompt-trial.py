#!/usr/bin/env python3
"""Prototype: instead of writing 1-3 sentences, the model picks the numbered sentences of the
targeted pass's passages that answer the part. Scored against the located lines."""
import json, glob, os, re, sys, time, urllib.request, math
sys.path.insert(0, '/work/main/scripts/bench')
src = open('/work/main/scripts/bench/research-part-prompts').read()
ns = {'re': re}; exec(src[src.index('def located'):src.index('\n\n\n', src.index('def located'))], ns)
located = ns['located']

URL = 'http://127.0.0.1:8088/v1/chat/completions'
MODE = os.environ.get('MODE', 'numbers')
SYSTEM_COPY = ("You answer a question by quoting the passages you are given. Copy the one sentence of the "
               "passages that best answers the question, word for word, and then the number of its passage "
               "in square brackets, like [2]. If another sentence is needed to answer it, copy it too, on a "
               "new line. Copy at most three sentences and write nothing else. If no sentence answers the "
               "question, reply: none.")
SYSTEM = ("You find the sentences that answer a question. The sentences of the passages are numbered "
          "like (4). Reply with the numbers of the sentences that answer the question, at most three, "
          "the best first, separated by commas, and nothing else. If no sentence answers it, reply: none.")

def units(corpus, passages):
    """passages: [(n, path, a, b, heading, text)] -> [(k, n, path, line_lo, line_hi, text)]"""
    out = []
    for n, path, a, b, heading, text in passages:
        flines = open(os.path.join(corpus, path), encoding='utf-8').read().split('\n')
        def where(s, start):
            s = s.strip()
            for i in range(max(start, a - 1), min(b, len(flines))):
                if flines[i].strip() == s:
                    return i + 1
            return None
        cur = a - 1
        block, in_code, code = [], False, []
        lines = text.split('\n')
        def flush():
            nonlocal block
            if not block: return
            para = ' '.join(l.strip() for l, _ in block)
            lo, hi = block[0][1], block[-1][1]
            if re.match(r'^\s*[-*]\s|^\s*\d+\.\s', block[0][0]):
                # list: each item a unit
                items, curi = [], []
                for l, ln in block:
                    if re.match(r'^\s*[-*]\s|^\s*\d+\.\s', l) and curi:
                        items.append(curi); curi = []
                    curi.append((l, ln))
                if curi: items.append(curi)
                for it in items:
                    out.append([n, path, it[0][1], it[-1][1], ' '.join(l.strip() for l, _ in it)])
            else:
                sents = re.split(r'(?<!e\.g\.)(?<!i\.e\.)(?<!!!!)(?<=[.!?])\s+(?=[A-Z`*(\[])', para)
                for s in sents:
                    out.append([n, path, lo, hi, s])
            block = []
        for l in lines:
            ln = where(l, cur) if l.strip() else None
            if ln: cur = ln - 1
            if l.strip().startswith('```'):
                if in_code:
                    code.append((l, ln)); in_code = False
                    body = '\n'.join(x for x, _ in code)
                    lns = [y for _, y in code if y]
                    out.append([n, path, min(lns) if lns else a, max(lns) if lns else a, body])
                    code = []
                else:
                    flush(); in_code = True; code = [(l, ln)]
                continue
            if in_code:
                code.append((l, ln)); continue
            if not l.strip() or l.lstrip().startswith('#'):
                flush(); continue
            block.append((l, ln or cur + 1))
        flush()
    return [(k + 1, *u) for k, u in enumerate(out)]

def parse_prompt(user):
    q = re.match(r'Question: (.*?)\n\nPassages:\n\n', user, re.S).group(1)
    body = user[user.index('Passages:\n\n') + 11: user.rindex('\n\nQuestion: ')]
    ps = []
    for m in re.finditer(r'^\[(\d+)\] (\S+):(\d+)-(\d+) — (.*?)\n(.*?)(?=\n\n\[\d+\] \S+:\d+-\d+ — |\Z)', body, re.M | re.S):
        ps.append((int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)), m.group(5), m.group(6)))
    return q, ps

def prompt(q, ps, us):
    parts = []
    for n, path, a, b, heading, _ in ps:
        parts.append(f'[{n}] {path} — {heading}')
        for k, un, *_r, text in us:
            if un == n:
                parts.append(f'({k}) {text}' if MODE == 'numbers' else text)
        parts.append('')
    return (f'Question: {q}\n\nPassages:\n\n' + '\n'.join(parts) +
            (f'\nQuestion: {q}\n\nWhich numbered sentences answer the question? Reply with their numbers only.' if MODE == 'numbers' else
             f'\nQuestion: {q}\n\nCopy the sentences that answer the question, word for word, each followed by its passage number like [2].'))

def ask(user, max_tokens=20):
    body = {'model': 'qwen2.5-coder-1.5b', 'temperature': 0.0, 'max_tokens': max_tokens,
            'messages': [{'role': 'system', 'content': SYSTEM if MODE == 'numbers' else os.environ.get('SYSCOPY', SYSTEM_COPY)}, {'role': 'user', 'content': user}]}
    req = urllib.request.Request(URL, json.dumps(body).encode(), {'content-type': 'application/json'})
    t = time.time()
    r = json.load(urllib.request.urlopen(req, timeout=600))
    return r['choices'][0]['message']['content'], time.time() - t, r.get('usage', {})

def words(s):
    return set(re.findall(r'[a-z0-9_]{3,}', s.lower()))

def copied(text, us):
    picks = []
    for line in text.split('\n'):
        w = words(re.sub(r'\[\d+\]', '', line))
        if len(w) < 2: continue
        best = max(us, key=lambda u: len(w & words(u[5])) / max(len(w), 1))
        if len(w & words(best[5])) / len(w) >= 0.6 and best[0] not in picks:
            picks.append(best[0])
    return picks[:3]

def on(u, locs):
    _, n, path, lo, hi, _t = u
    return any(path == f and lo <= b and hi >= a for f, a, b in locs)

def main():
    rows = []
    for corpus in sys.argv[1:]:
        loc = located(f'/work/main/scripts/bench/research-answers-{corpus}.md')
        for q in sorted(loc):
            reqs = sorted(glob.glob(f'/work/tmp41/run/rec-{corpus}-R/q{q:02d}*.request.json'),
                          key=lambda p: (0 if '.call' not in p else int(re.search(r'call(\d+)', p).group(1))))
            targeted = []
            for p in reqs:
                r = json.load(open(p))
                u = r['messages'][-1]['content']
                if 'Answer in 1 to 3 sentences' in u:
                    targeted.append(u)
            if len(targeted) != len(loc[q]):
                print(f'{corpus} Q{q}: {len(targeted)} targeted calls, {len(loc[q])} located; skipped', flush=True)
                continue
            for pi, user in enumerate(targeted, 1):
                part, ps = parse_prompt(user)
                us = units(f'/work/corpora/{corpus}', ps)
                locs = loc[q][pi]
                shown = [u[0] for u in us if on(u, locs)]
                text, secs, usage = ask(prompt(part, ps, us), 20 if MODE == 'numbers' else 160)
                picks = [int(x) for x in re.findall(r'\d+', text)][:3] if MODE == 'numbers' else copied(text, us)
                good = [k for k in picks if k in shown]
                row = dict(corpus=corpus, q=q, part=pi, text=part, units=len(us), shown=shown, reply=text,
                           picks=picks, first_on=bool(picks) and picks[0] in shown, any_on=bool(good),
                           secs=round(secs, 1), usage=usage)
                rows.append(row)
                print(json.dumps(row), flush=True)
    n = len(rows)
    print(f'parts {n}; located shown {sum(bool(r["shown"]) for r in rows)}; first pick on located '
          f'{sum(r["first_on"] for r in rows)}; any pick on located {sum(r["any_on"] for r in rows)}; '
          f'none {sum(not r["picks"] for r in rows)}; mean s {sum(r["secs"] for r in rows)/max(n,1):.1f}')

if __name__ == '__main__':
    main()
