#!/usr/bin/env python3
"""A record of the 2026-12-03 trial of finding a part's passages by meaning over the whole corpus
(docs/research.md, "Searched by meaning": "the whole corpus by meaning, measured and not built"),
not only among the passages its words found. No model.
Parts: each located part (research-answers-*.md) whose question splits at "?" into as many pieces
as it has located parts (167 of the twelve corpora's; Poetry's questions split otherwise).
Library: LIB (default /tmp/trial/lib.sqlite3), a research library in which a build indexed every
corpus of scripts/bench/research-corpora (one `patchwise research --sources workspace` each).
Encoder: the meaning trial's numpy all-MiniLM-L6-v2 (MINILM, its set-up in that script's
docstring), vectors cached in TRIAL_DIR. Run with that venv's python, OPENBLAS_NUM_THREADS=1.
Ways, each part's first N passages: its words (the index's query and re-ranking, as
research/index.rs does them, first 24), those fused with their cosine to the part (as shipped),
the cosine over every passage of the corpus, and the words' 24 fused with the corpus's nearest.
"""
import importlib.machinery, json, os, re, sqlite3, sys, pickle
HERE = "/work/main/scripts/bench/research-results"
BENCH = os.path.dirname(HERE)
os.environ.setdefault("MINILM", "/tmp/mine/minilm"); os.environ.setdefault("TRIAL_DIR", "/tmp/trial")
mt = importlib.machinery.SourceFileLoader("mt", f"{HERE}/2026-12-02-meaning-trial.py").load_module()
gt, pp, E = mt.gt, mt.gt.pp, mt.E
import numpy as np
db = sqlite3.connect(os.environ.get("LIB", "/tmp/trial/lib.sqlite3"))
roots = dict(db.execute("select root, id from passage_root"))
def passages(c):
    fts = f"passage_fts_{roots['/work/corpora/' + c]}"
    return db.execute(f"SELECT p.id, f.path, p.start_line, p.end_line, t.heading, t.body FROM {fts} t JOIN passage p ON p.id = t.rowid JOIN passage_file f ON f.id = p.file_id").fetchall()
def search(c, words, limit=24):
    return [r[:6] for r in gt.search(db, words, limit, fts=f"passage_fts_{roots['/work/corpora/' + c]}")]
def rrf(*orders, k=10):
    s = {}
    for o in orders:
        for place, pid in enumerate(o): s[pid] = s.get(pid, 0) + 1 / (k + place)
    return sorted(s, key=lambda p: -s[p])
D = []
for c in sorted(roots):
    c = c.rsplit('/', 1)[1]
    af = f"{BENCH}/research-answers-{c}.md"
    if not os.path.exists(af): continue
    Q = json.load(open(f"{BENCH}/research-questions-{c}.json"))
    for q, parts in pp.located(af).items():
        pieces = [p.strip() for p in re.split(r"(?<=\?)\s+", Q[q - 1]['question']) if p.strip()]
        if len(pieces) != len(parts): continue
        for k, lines in parts.items():
            if lines: D.append(dict(corpus=c, q=q, k=k, part=pieces[k - 1], lines=lines))
print(len(D), "parts", file=sys.stderr)
vec = {}
for c in sorted({d['corpus'] for d in D}):
    P = passages(c)
    vec[c] = (P, np.array([E(f"{r[4]}\n{r[5]}"[:2000]) for r in P]))
    print(c, len(P), file=sys.stderr)
pickle.dump(mt.cache, open(mt.CACHE, 'wb'))
hit = lambda r, lines: any(r[1] == f and r[2] <= b and a <= r[3] for f, a, b in lines)
res = {w: [] for w in ["words", "words, fused with cos (shipped)", "cos, whole corpus", "words + cos whole corpus, fused", "words + cos whole corpus top 8, fused"]}
for d in D:
    P, V = vec[d['corpus']]; byid = {r[0]: r for r in P}
    words = [r[0] for r in search(d['corpus'], gt.terms(d['part']))]
    ep = E(d['part']); cos = V @ ep
    allcos = [P[i][0] for i in np.argsort(-cos)]
    cid = {P[i][0]: float(cos[i]) for i in range(len(P))}
    fused24 = rrf(words, sorted(words, key=lambda p: -cid[p]))
    ways = {"words": words, "words, fused with cos (shipped)": fused24, "cos, whole corpus": allcos[:24],
            "words + cos whole corpus, fused": rrf(words, allcos[:24]), "words + cos whole corpus top 8, fused": rrf(words, sorted(set(words) | set(allcos[:8]), key=lambda p: -cid[p]))}
    for w, o in ways.items(): res[w].append([hit(byid[p], d['lines']) for p in o])
print(f"{len(D)} parts; the answering passage among the part's first N")
for w, r in res.items():
    print(f"{w:40}", " ".join(f"@{n}={sum(any(x[:n]) for x in r):3}" for n in (1, 2, 3, 6, 12, 24)))
