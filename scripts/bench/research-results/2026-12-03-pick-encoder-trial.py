#!/usr/bin/env python3
"""A record of the 2026-12-03 trial of the encoder in the pick (docs/research.md, "Searched by
meaning": "the encoder in the pick, measured and not built"). Over the pick prompts of REC — the
builtin arm's recordings, `2026-12-02-builtin-encoder-record.py BIN REC builtin` (BIN: 9d469f7,
which sends what 8098b7f sent) — with the real model's replies cached in TRIAL_DIR/replies.json
(the place, meaning and builtin-encoder trials' replies merged, and this trial's,
2026-12-03-pick-encoder-trial-replies.json; asked of Qwen2.5-Coder-1.5B on 127.0.0.1:8088 when
missing; `--dry` asks nothing), each listed sentence's cosine with the part (the meaning trial's
numpy all-MiniLM-L6-v2; MINILM as there), scored by located lines as the place trial does:
  pick-encoder-trial.py REC [--dry]        ways of joining the model's pick and the encoder's
  pick-encoder-trial.py REC --variants     also the model asked over the KEEP (default 5) listed
                                           sentences first by words and meaning (new prompts)
Results: 2026-12-03-pick-encoder-trial-results.txt.
"""
import importlib.machinery, json, os, re, sys, hashlib, urllib.request, time
HERE = "/work/main/scripts/bench/research-results"; BENCH = os.path.dirname(HERE)
os.environ.setdefault("MINILM", "/tmp/mine/minilm"); os.environ.setdefault("TRIAL_DIR", "/tmp/trial")
DIR = os.environ["TRIAL_DIR"]
pa = importlib.machinery.SourceFileLoader("pa", f"{HERE}/2026-12-02-place-trial-ask.py").load_module()
mt = importlib.machinery.SourceFileLoader("mt", f"{HERE}/2026-12-02-meaning-trial.py").load_module()
pp, E = mt.gt.pp, mt.E
REC = sys.argv[1]
rows = []
for name in pa.NAMES:
    corpus = f"/work/corpora/{name}"
    for q, parts in pp.located(f"{BENCH}/research-answers-{name}.md").items():
        cs = pa.calls(f"{REC}/{name}/rec", q)
        if len(cs) != len(parts): continue
        for k, lines in parts.items():
            body = cs[k - 1]; tri = pp.located_trigrams(corpus, lines)
            user = body["messages"][-1]["content"]
            part = re.search(r"^Question: (.*)$", user, re.M).group(1)
            ls = pa.listed(body)
            reply = pa.ask(body)
            rows.append(dict(name=name, q=q, k=k, part=part, listed=ls, hits=[pp.located_sentence(s, tri) for s in ls],
                             cos=[float(E(part) @ E(s[:600])) for s in ls], named=pa.named(reply, len(ls)), body=body))
import pickle; pickle.dump(mt.cache, open(mt.CACHE, "wb"))
json.dump([{k: v for k, v in r.items() if k != "body"} for r in rows], open(f"{DIR}/pick-rows.json", "w"))
print(len(rows), "parts;", sum(any(r["hits"]) for r in rows), "with a located sentence listed")
def score(label, pick):
    s = dict(any=0, first=0, wrong=0, none=0, kept=0)
    for r in rows:
        ks = pick(r); s["kept"] += len(ks)
        if not ks: s["none"] += 1; continue
        h = [r["hits"][i - 1] for i in ks]
        if h[0]: s["first"] += 1
        if any(h): s["any"] += 1
        else: s["wrong"] += 1
    print(f"{label:58} right {s['any']:3} (first {s['first']:3})  wrong {s['wrong']:3}  none {s['none']:3}  sentences {s['kept']}")
rank = lambda r: sorted(range(1, len(r["listed"]) + 1), key=lambda i: -r["cos"][i - 1])
score("the model (as shipped)", lambda r: r["named"])
score("the listed first (by words)", lambda r: [1] if r["listed"] else [])
score("the encoder's first", lambda r: rank(r)[:1])
score("the encoder's first two", lambda r: rank(r)[:2])
score("the model's picks, nearest first", lambda r: sorted(r["named"], key=lambda i: -r["cos"][i - 1]))
for d in (0.05, 0.1, 0.15):
    score(f"the model's picks within {d} of the best cosine listed", lambda r, d=d: [i for i in r["named"] if r["cos"][i - 1] >= max(r["cos"]) - d])
for n in (2, 3):
    score(f"the model's picks among the encoder's first {n}", lambda r, n=n: [i for i in r["named"] if i in rank(r)[:n]])
score("the model's picks among the encoder's first 3, else its first", lambda r: [i for i in r["named"] if i in rank(r)[:3]] or rank(r)[:1] if r["named"] else [])
def union(r, extra):
    out = list(r["named"])
    for i in extra:
        if i not in out: out.append(i)
    return out
score("the model's picks and the encoder's first", lambda r: union(r, rank(r)[:1]))
score("the model's first and the encoder's first", lambda r: union(dict(named=r["named"][:1]), rank(r)[:1]))
score("the model's first two and the encoder's first", lambda r: union(dict(named=r["named"][:2]), rank(r)[:1]))
L = [r for r in rows if any(r["hits"])]
mw = [r for r in L if not any(r["hits"][i-1] for i in r["named"])]
print(len(L), "listed;", len(mw), "of them the model missed; the encoder's first is right for", sum(r["hits"][rank(r)[0]-1] for r in mw))
def added(r, d, replace=False):
    e = rank(r)[0]
    if not r["named"]: return [e]
    best = max(r["cos"][i-1] for i in r["named"])
    if e in r["named"] or r["cos"][e-1] - best <= d: return r["named"]
    return [e] if replace else r["named"] + [e]
for d in (0.0, 0.05, 0.1, 0.15, 0.2):
    score(f"the encoder's first added when nearer by more than {d}", lambda r, d=d: added(r, d))
    score(f"the encoder's first instead when nearer by more than {d}", lambda r, d=d: added(r, d, True))
if "--variants" in sys.argv:
    import time
    pa.dry = False
    def fused_order(r):
        n = len(r["listed"]); s = [1 / (10 + i) for i in range(n)]
        for place, i in enumerate(rank(r)): s[i - 1] += 1 / (10 + place)
        return sorted(range(1, n + 1), key=lambda i: -s[i - 1])
    def variant(r, keep):
        user = r["body"]["messages"][-1]["content"]
        lines = [m for m in re.finditer(r"^\((\d+)\) .*$", user, re.M)]
        if not lines: return None, []
        keep = sorted(keep)  # the listed order
        block = "\n".join(re.sub(r"^\(\d+\)", f"({j})", lines[i - 1].group(0)) for j, i in enumerate(keep, 1))
        new = user[:lines[0].start()] + block + user[lines[-1].end():]
        body = dict(r["body"], messages=r["body"]["messages"][:-1] + [dict(r["body"]["messages"][-1], content=new)])
        return body, keep
    t0 = time.time(); asked = 0
    for n in [int(x) for x in os.environ.get("KEEP", "5").split(",")]:
        def pick(r, n=n):
            if len(r["listed"]) <= n: return r["named"]
            body, keep = variant(r, fused_order(r)[:n])
            reply = pa.ask(body)
            return [keep[k - 1] for k in pa.named(reply, len(keep))]
        score(f"the model over the {n} listed first by words and meaning", pick)
    print(f"{time.time()-t0:.0f} s", file=sys.stderr)

# What the report prints of a pick (extractive::chosen): the first named and the others named of
# its passage (the prompt's "— section" stands for the passage), at most three. Taking the
# model's picks nearest the part first (extractive::chosen_in_order, built after this trial)
# changes which passage that is.
def sections(r):
    return [m.group(2) or "" for m in re.finditer(r"^\(\d+\) (.*?)(?:  \u2014 ([^\n]*))?$", r["body"]["messages"][-1]["content"], re.M)]
def printed(order, sec):
    out = []
    for i in order:
        if out and sec[i - 1] != sec[out[0] - 1]: continue
        if len(out) < 3 and i not in out: out.append(i)
    return out
score("printed: the model's order (shipped before)", lambda r: printed(r["named"], sections(r)))
score("printed: the model's picks nearest first (shipped)", lambda r: printed(sorted(r["named"], key=lambda i: -r["cos"][i - 1]), sections(r)))
