#!/usr/bin/env python3
"""Step "orders" of the 2026-12-02 trial of the pick list; the steps, and TRIAL_DIR, are in
the docstring of 2026-12-02-place-trial-ask.py."""
import os
DIR = os.environ.get('TRIAL_DIR', '/tmp/place-trial')
import json, math, sys
D = json.load(open(f'{DIR}/data.json'))

def evaluate(name, choose):
    anyc = first = first3 = 0
    for d in D:
        listed = choose(d)
        hits = [s[3] for s in listed]
        anyc += any(hits); first += bool(hits and hits[0]); first3 += any(hits[:3])
    print(f"{name:50} listed {anyc:3}  first {first:3}  first3 {first3:3}  (of {len(D)})")

def ordered(d):
    return sorted([p for p in d['pool'] if p['place'] is not None], key=lambda p: p['place'])

def baseline(d, npass=3, k=8):
    ps = ordered(d)[:npass]
    sents = [(s[0], i, j, s) for i, p in enumerate(ps) for j, s in enumerate(p['sentences']) if s[1]]
    sents.sort(key=lambda t: (-t[0], t[1], t[2]))
    return [t[3] for t in sents[:k]]

evaluate("baseline 3 passages top-8", baseline)
evaluate("6 passages top-8", lambda d: baseline(d, 6))
evaluate("all ranked passages top-8", lambda d: baseline(d, 99))
# ceiling: any copyable located sentence in the pool at all / in ranked
print("ceiling any copyable located in pool:", sum(any(s[3] and s[1] for p in d['pool'] for s in p['sentences']) for d in D))
print("ceiling located (any) in pool:", sum(any(s[3] for p in d['pool'] for s in p['sentences']) for d in D))
print("ranked count distribution:", sorted(len(ordered(d)) for d in D)[::10])
# where is the first passage holding a located sentence, by place
import collections
pl = collections.Counter()
for d in D:
    ps = ordered(d)
    r = next((i for i, p in enumerate(ps) if any(s[3] and s[1] for s in p['sentences'])), None)
    pl[r if r is None or r < 10 else '10+'] += 1
print("place of first answering passage:", sorted(pl.items(), key=lambda x: str(x[0])))

def cop(p): return [s for s in p['sentences'] if s[1]]
def maxshare(p): return max([s[0] for s in cop(p)], default=0)
def topk_sum(p, k=2): return sum(sorted([s[0] for s in cop(p)], reverse=True)[:k])

def by_passage_score(score, npass=3, k=8, pool_all=False):
    def f(d):
        ps = d['pool'] if pool_all else ordered(d)
        ps = sorted(ps, key=lambda p: (-score(p), p['place'] if p['place'] is not None else 999))[:npass]
        sents = [(s[0], i, j, s) for i, p in enumerate(ps) for j, s in enumerate(p['sentences']) if s[1]]
        sents.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [t[3] for t in sents[:k]]
    return f

evaluate("passages by max sentence share", by_passage_score(maxshare))
evaluate("passages by max sentence share, all pool", by_passage_score(maxshare, pool_all=True))
evaluate("passages by top2 share sum", by_passage_score(topk_sum))
for lam in [0.05, 0.1, 0.2, 0.3]:
    evaluate(f"max share + {lam}/(1+place)", by_passage_score(lambda p, lam=lam: maxshare(p) + (lam / (1 + p['place']) if p['place'] is not None else 0)))
for lam in [0.1, 0.2]:
    for npass in [3,4,5]:
        evaluate(f"max share + {lam}/(1+place), {npass} passages", by_passage_score(lambda p, lam=lam: maxshare(p) + (lam / (1 + p['place']) if p['place'] is not None else 0), npass=npass))

def sent_global(lam, k=8, pool_all=False, rank_by_place=True):
    def f(d):
        ps = d['pool'] if pool_all else ordered(d)
        sents = []
        for i, p in enumerate(ps):
            bonus = lam / (1 + p['place']) if p['place'] is not None else 0
            for j, s in enumerate(p['sentences']):
                if s[1]: sents.append((s[0] + bonus, i, j, s))
        sents.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [t[3] for t in sents[:k]]
    return f
for lam in [0.0, 0.1, 0.2, 0.3, 0.5]:
    evaluate(f"sentences global share + {lam}/(1+place)", sent_global(lam))
print("----")
for lam in [0.5, 0.7, 1.0, 1.5, 3.0]:
    evaluate(f"sentences global share + {lam}/(1+place)", sent_global(lam))
def sent_bonus(bonusf, k=8):
    def f(d):
        ps = ordered(d)
        sents = []
        for i, p in enumerate(ps):
            b = bonusf(p['place'])
            for j, s in enumerate(p['sentences']):
                if s[1]: sents.append((s[0] + b, i, j, s))
        sents.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [t[3] for t in sents[:k]]
    return f
for lam in [0.3, 0.5, 0.7]:
    for tau in [1, 2, 3]:
        evaluate(f"exp bonus {lam}*exp(-place/{tau})", sent_bonus(lambda r, lam=lam, tau=tau: lam * math.exp(-r / tau)))
for lam in [0.3, 0.5, 0.7]:
    evaluate(f"linear step {lam}: 3 top passages get bonus decreasing", sent_bonus(lambda r, lam=lam: lam * max(0, 3 - r) / 3))

# ---- passage choices, the shipped order of sentences
import json, math
D = json.load(open(f'{DIR}/data.json'))
def ordered(d): return sorted([p for p in d['pool'] if p['place'] is not None], key=lambda p: p['place'])
def cop(p): return [s for s in p['sentences'] if s[1]]
def maxshare(p): return max([s[0] for s in cop(p)], default=0)
def listing(ps, k=8):
    sents = []
    for i, p in enumerate(ps):
        b = 0.5 * math.exp(-i / 2)
        for j, s in enumerate(p['sentences']):
            if s[1]: sents.append((s[0] + b, i, j, s))
    sents.sort(key=lambda t: (-t[0], t[1], t[2]))
    return [t[3] for t in sents[:k]]
groups = {"old9": [d for d in D if d['corpus'] not in ('direnv','hatch')], "new2": [d for d in D if d['corpus'] in ('direnv','hatch')]}
def ev(name, pick):
    out=[]; tot=[0,0,0]
    for g, ds in groups.items():
        a=f1=f3=0
        for d in ds:
            h=[s[3] for s in listing(pick(d))]; a+=any(h); f1+=bool(h and h[0]); f3+=any(h[:3])
        out.append(f"{g} {a:3}/{f1:3}/{f3:3}"); tot[0]+=a; tot[1]+=f1; tot[2]+=f3
    print(f"{name:45}", "  ".join(out), " all", tot)
ev("current (3 by place)", lambda d: ordered(d)[:3])
for keep in [1, 2]:
    for window in [6, 10, 24]:
        def pick(d, keep=keep, window=window):
            ps = ordered(d)
            rest = sorted(ps[keep:window], key=lambda p: (-maxshare(p), p['place']))
            return ps[:keep] + rest[:3-keep]
        ev(f"keep {keep}, rest by maxshare within {window}", pick)
# third slot: next same-file neighbour of first passage if in pool
def lines_of(t):
    import re
    m = re.match(r"(\S+?):(\d+)-(\d+)", t['title']); return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None
def neigh(d, slot=2):
    ps = ordered(d); first = lines_of(ps[0]) if ps else None
    if not first: return ps[:3]
    cands = [p for p in d['pool'] if (l := lines_of(p)) and l[0] == first[0] and (abs(l[1] - first[2]) <= 2 or abs(first[1] - l[2]) <= 2) and p not in ps[:slot]]
    return ps[:slot] + cands[:1] + [p for p in ps[slot:] if p not in cands[:1]][: max(0, 3 - slot - len(cands[:1]))]
ev("neighbour of first in slot 3", neigh)
print("neighbour of first available in pool:", sum(1 for d in D if len(neigh(d)) and neigh(d)[2:3] and neigh(d)[2] not in ordered(d)[:3]))
