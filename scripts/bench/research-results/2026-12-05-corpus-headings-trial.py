#!/usr/bin/env python3
"""A record of the 2026-12-05 (night) trial: every passage of the corpus by the meaning of its
heading and first sentence, added to a part's own order (docs/research.md, "Searched by
meaning": "a heading and its first sentence over the whole corpus, measured and not built").
No model.

Pools: `research-listed` (the shipped build, 21ee9dc, the built-in encoder) over the 27 corpora
with located answers, each question's parts' rankings (the "a part's passages" log lines) kept
as OUT/pools-CORPUS-Q.json (one line added to a copy of research-listed:
`json.dump(pools, open(f"{out}/pools-{name}-{q}.json", "w"))` before `picks=[]`).
Encoder: all-MiniLM-L6-v2 served by `patchwise model serve all-MiniLM-L6-v2-Q8_0.gguf --port
8090` (`/v1/embeddings`). Texts (MODE): "chain" the heading path alone, "first" the heading
path and the passage's first prose line (at least four words, not a heading, a fence, a table
row, a tag, an image or a link line), cut at 300 characters.
A part counts when one of its first three passages overlaps its located lines.
Run with a python that has numpy: MODE=first python THIS OUT.
"""
import json, sqlite3, sys, os, re, pickle, importlib.machinery, importlib.util, collections
import numpy as np
import urllib.request
def embed(texts, port=8090):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", data=json.dumps({"model": "x", "input": texts}).encode(), headers={"content-type": "application/json"})
    return [x["embedding"] for x in json.load(urllib.request.urlopen(req, timeout=600))["data"]]
B = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
loader = importlib.machinery.SourceFileLoader("rpp", f"{B}/research-part-prompts")
spec = importlib.util.spec_from_loader("rpp", loader); rpp = importlib.util.module_from_spec(spec); loader.exec_module(rpp)
CACHE = os.path.join(sys.argv[1], "vectors.pkl")
cache = pickle.load(open(CACHE, "rb")) if os.path.exists(CACHE) else {}
def E(texts):
    need = [t for t in dict.fromkeys(texts) if t not in cache]
    for i in range(0, len(need), 64):
        for t, v in zip(need[i:i+64], embed(need[i:i+64])): cache[t] = np.array(v)
    return np.array([cache[t] for t in texts]) if texts else np.zeros((0, 384))
MODE = os.environ.get("MODE", "first")
def htext(h, body):
    if MODE == "chain": return h
    if MODE == "first":
        for line in body.splitlines():
            s = line.strip()
            if s and not s.startswith(("#", "```", "|", "<", "!", "[", ":", "{")) and len(s.split()) >= 4:
                return (h + ": " + s)[:300] if h.strip() else s[:300]
        return h if h.strip() else body.strip()[:300]
    if MODE == "full": return (h + "\n" + body)[:2000]
def rrf(*orders, k=10, w=None):
    s = {}
    for j, o in enumerate(orders):
        for place, pid in enumerate(o): s[pid] = s.get(pid, 0) + (w[j] if w else 1) / (k + place)
    return sorted(s, key=lambda p: -s[p])
L = sys.argv[1]
res = collections.Counter(); n = 0; changes = []
corpora = sorted({f.split("-")[1] for f in os.listdir(L) if f.startswith("pools-")})
for c in corpora:
    st = f"{L}/state-{c}/data/patchwise/research/library.sqlite3"
    db = sqlite3.connect(st)
    P = db.execute("select p.id, f.path, p.start_line, p.end_line, t.heading, t.body from passage_fts_1 t join passage p on p.id=t.rowid join passage_file f on f.id=p.file_id").fetchall()
    P = [p for p in P if (p[4] + p[5]).strip()]
    V = E([htext(p[4], p[5]) for p in P])
    key = [(p[1], p[2], p[3]) for p in P]
    loc = rpp.located(f"{B}/research-answers-{c}.md")
    for q, parts in loc.items():
        pf = f"{L}/pools-{c}-{q}.json"
        if not os.path.exists(pf): continue
        pools = json.load(open(pf))
        if len(pools) != len(parts): continue
        pv = E([p["part"] for p in pools])
        for k, lines in parts.items():
            if not lines: continue
            pool = pools[k-1]["pool"]
            ents = []
            for p in pool:
                m = re.match(r"(\S+?):(\d+)-(\d+)", p["title"])
                if m and p["place"] is not None: ents.append((p["place"], (m.group(1), int(m.group(2)), int(m.group(3)))))
            order = [e[1] for e in sorted(ents)]
            cos = V @ pv[k-1]
            corder = [key[i] for i in np.argsort(-cos)]
            hit = lambda o, n=3: any(any(f == lf and not (b < la or a > lb) for lf, la, lb in lines) for f, a, b in o[:n])
            n += 1
            ways = {"base": order}
            for N in (1, 2, 3, 6, 12, 24):
                ways[f"rrf top{N}"] = rrf(order, corder[:N])
                ways[f"rrf top{N} half"] = rrf(order, corder[:N], w=[1, .5])
            # add the corpus's nearest N not in pool, then rank pool ∪ them by rrf(order, cos over them)
            for N in (3, 6):
                cand = order + [x for x in corder[:N] if x not in order]
                cc = {x: float(cos[key.index(x)]) for x in cand}
                ways[f"pool+top{N}, rrf w/ cos"] = rrf(order, sorted(cand, key=lambda x: -cc[x]))
            for w, o in ways.items():
                res[w] += hit(o)
            b3, n3 = hit(order), hit(ways["rrf top3"])
            if b3 != n3: changes.append((c, q, k, b3, n3, pools[k-1]["part"][:70]))
pickle.dump(cache, open(CACHE, "wb"))
print(MODE, n, "aligned parts; located passage among the first 3")
for w in res: print(f"  {w:28} {res[w]}")
for ch in changes: print(ch)
