#!/usr/bin/env python3
"""Step "sections" of the 2026-12-02 trial of the pick list; the steps, and TRIAL_DIR, are in
the docstring of 2026-12-02-place-trial-ask.py."""
import os
DIR = os.environ.get('TRIAL_DIR', '/tmp/place-trial')

import json, re, sys, hashlib, urllib.request, time, random, os
D = json.load(open(f"{DIR}/data.json"))
CACHE = f"{DIR}/replies-sections.json"
cache = json.load(open(CACHE)) if os.path.exists(CACHE) else {}
SYSTEM = ("You pick the sections of documentation that answer a question. Each section has its "
          "number in parentheses before it. Reply with the numbers of the sections that answer the "
          "question, best first, at most two, each in parentheses. Write nothing else.")
def ordered(d): return sorted([p for p in d["pool"] if p["place"] is not None], key=lambda p: p["place"])
def holds(p): return any(s[3] and s[1] for s in p["sentences"])
def label(p):
    t = p["title"]; path, _, rest = t.partition(" \u2014 ")
    path = re.sub(r":\d+-\d+$", "", path)
    return f"{rest.strip()} ({path})" if rest.strip() else path
def ask(msgs):
    key = hashlib.sha1(json.dumps(msgs).encode()).hexdigest()
    if key in cache: return cache[key]
    req = dict(model="qwen2.5-coder-1.5b", messages=msgs, temperature=0, max_tokens=24)
    t = time.time()
    r = json.load(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:8088/v1/chat/completions",
        data=json.dumps(req).encode(), headers={"content-type": "application/json"}), timeout=300))
    cache[key] = r["choices"][0]["message"]["content"]; json.dump(cache, open(CACHE, "w"))
    print(f"  {time.time()-t:.1f}s {cache[key]!r}", file=sys.stderr, flush=True)
    return cache[key]
far = [d for d in D if not any(holds(p) for p in ordered(d)[:3]) and any(holds(p) for p in ordered(d)[3:16])]
near = [d for d in D if any(holds(p) for p in ordered(d)[:3])]
random.seed(7); sample = random.sample(near, 40)
res = {}
for group, ds in (("far", far), ("near", sample)):
    r = dict(n=len(ds), chosen_holds=0, first_holds=0, top3_holds=0, new_top3_holds=0)
    for d in ds:
        ps = ordered(d)[:16]
        lines = "\n".join(f"({i+1}) {label(p)}" for i, p in enumerate(ps))
        part = d["part"].strip()
        msgs = [dict(role="system", content=SYSTEM), dict(role="user", content=f"Question: {part}\n\nSections:\n{lines}\n\nQuestion: {part}\n\nThe numbers of the sections that answer it:")]
        reply = ask(msgs)
        ks = []
        for k in re.findall(r"\((\d+)\)", reply):
            k = int(k)
            if 1 <= k <= len(ps) and k not in ks: ks.append(k)
        ks = ks[:2]
        chosen = [ps[k-1] for k in ks]
        r["chosen_holds"] += any(holds(p) for p in chosen)
        r["first_holds"] += bool(chosen) and holds(chosen[0])
        r["top3_holds"] += any(holds(p) for p in ps[:3])
        # the chosen first, then the part's order, three in all
        new = chosen + [p for p in ps if p not in chosen]
        r["new_top3_holds"] += any(holds(p) for p in new[:3])
    res[group] = r
    print(group, r)
