#!/usr/bin/env python3
"""A record of the 2026-12-04 (night) trial of weighing the cosine's order more than the words'
when a part's passages are fused (docs/research.md, "Searched by meaning"). No model.
  1. the corpora of scripts/bench/research-corpora in $CORPORA (Typer as typer-src, with
     docs_src/, named typer), and the stand-in model's runs of the shipped build:
       2026-12-02-place-trial-collect.py BIN $CORPORA attrs,black,fzf,just,mkdocs,poetry,ruff,uv,uvicorn,direnv,hatch,chezmoi,typer,textual,helix /tmp/w/data.json
     without ENCODER (the words' order alone: each pool's `place`), and with ENCODER (the GGUF of
     scripts/bench/minilm-gguf) into /tmp/f/data.json (the build's fused order, to compare)
  2. this script, with the venv and MINILM of 2026-12-02-meaning-trial.py: each part's passages
     in the words' order fused with their order by the cosine of the part and the passage (the
     passage's heading and its lines in the corpus, cut at 2,000 characters, as
     `meaning::passage_text`) at weights 0 (words alone) to 100 (the cosine alone) for the
     cosine's reciprocal ranks; where the located answer then is, and what the eight listed hold.
Results: 2026-12-04-cosine-weight-trial-results.txt.
"""
import importlib.machinery, os, re, sys, json, copy, collections
HERE = os.path.dirname(os.path.abspath(__file__))
CORPORA = os.environ.get("CORPORA", "/work/corpora-trial")
os.environ["TRIAL_DIR"] = "/tmp/w"
yn = importlib.machinery.SourceFileLoader("yn", f"{HERE}/2026-12-04-yes-no-trial.py").load_module()
lt = yn.lt
W = lt.D
F = {(d["corpus"], d["q"], d["k"]): d for d in json.load(open("/tmp/f/data.json"))} if os.path.exists("/tmp/f/data.json") else {}
CUR = {}
def ptext(p):
    h = p["title"].split(" \u2014 ", 1)[1] if " \u2014 " in p["title"] else ""
    m = re.match(r"(.*?):(\d+)-(\d+)(?: \u2014 |$)", p["title"])
    try:
        lines = open(f"{CORPORA}/{CUR['c']}/{m.group(1)}", errors="replace").read().split("\n")
        body = "\n".join(lines[int(m.group(2)) - 1:int(m.group(3))])
    except Exception:
        body = " ".join(s[2] for s in p["sentences"])
    return (h + "\n" + body)[:2000]
def fuse(pl, cos, w, K=10):
    n = len(pl); sc = [1 / (K + r) for r in range(n)]
    for r, i in enumerate(sorted(range(n), key=lambda i: (-cos[i], i))): sc[i] += w / (K + r)
    return [pl[i] for i in sorted(range(n), key=lambda i: (-sc[i], i))]
def loc(p): return any(s[3] for s in p["sentences"])
def with_order(d, order):
    e = dict(d); pool = []
    for p in d["pool"]:
        q = dict(p); q["place"] = order.index(p) if p in order else None; pool.append(q)
    e["pool"] = pool; return e
WS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 100.0]
tot = {w: collections.Counter() for w in WS}
by_corpus = {w: collections.Counter() for w in WS}
fid = collections.Counter()
for d in W:
    pl = lt.ordered(d); CUR["c"] = d["corpus"]
    ep = lt.E(d["part"].strip())
    cos = [float(ep @ lt.E(ptext(p))) for p in pl]
    for w in WS:
        o = fuse(pl, cos, w)
        t = tot[w]
        t["first"] += loc(o[0]) if o else 0
        t["first3"] += any(loc(p) for p in o[:3]); by_corpus[w][d["corpus"]] += any(loc(p) for p in o[:3])
        e = with_order(d, o)
        cs, _ = lt.budgeted(yn.shipped(lt.cands(e, 3)), 8)
        h = [c["s"][3] for c in cs]
        t["listed"] += any(h); t["listed_first"] += bool(h and h[0])
    f = F.get((d["corpus"], d["q"], d["k"]))
    if f:
        o = fuse(pl, cos, 1.0)
        real = [p["title"] for p in lt.ordered(f)[:3]]
        fid["same first3 titles"] += [p["title"] for p in o[:3]] == real; fid["n"] += 1
for w in WS: print(w, dict(tot[w]))
print("per corpus first3:", {w: dict(by_corpus[w]) for w in (1.0, 2.0)})
print("fidelity vs built (w=1):", dict(fid))
import pickle; pickle.dump(lt.mt.cache, open(lt.mt.CACHE, "wb"))
