#!/usr/bin/env python3
"""Step "variant" of the 2026-12-02 trial of the pick list; the steps, and TRIAL_DIR, are in
the docstring of 2026-12-02-place-trial-ask.py."""
import os
DIR = os.environ.get('TRIAL_DIR', '/tmp/place-trial')

import importlib.machinery, json, os, re, sys, glob, hashlib, urllib.request, time, math
BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pp = importlib.machinery.SourceFileLoader("pp", f"{BENCH}/research-part-prompts").load_module()
ns = {"__file__": __file__}
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "2026-12-02-place-trial-ask.py")).read().split("score = {a:")[0].replace('dry = "--dry" in sys.argv', 'dry = False'), ns)
ask, named, calls = ns["ask"], ns["named"], ns["calls"]
npass, k = int(sys.argv[1]), int(sys.argv[2])
D = json.load(open(f"{DIR}/data.json"))
base = None
for f in glob.glob(f"{DIR}/recA/*/rec/*.request.json"):
    b = json.load(open(f))
    if b["messages"][0]["content"].startswith("You pick"):
        base = b; break
SYSTEM = base["messages"][0]["content"]

def section(title):
    if " \u2014 " in title:
        sec = title.split(" \u2014 ", 1)[1].strip()
        if sec: return sec
    m = re.match(r"(.*):([\d-]+)$", title)
    return m.group(1) if m else title

def prompt(d):
    ps = sorted([p for p in d["pool"] if p["place"] is not None], key=lambda p: p["place"])[:npass]
    sents = []
    for i, p in enumerate(ps):
        for j, s in enumerate(p["sentences"]):
            if s[1]: sents.append((s[0], i, j, s, p))
    sents.sort(key=lambda t: (-t[0], t[1], t[2]))
    lines, used, listed = [], 0, []
    for t in sents[:k]:
        line = f"({len(lines)+1}) {t[3][2].strip()}  \u2014 {section(t[4]['title'])}\n"
        cost = len(line) / 3.6
        if used + cost > 900 and lines: break
        used += cost; lines.append(line); listed.append(t[3])
    text = "".join(lines).strip()
    user = f"Question: {d['part'].strip()}\n\nSentences:\n{text}\n\nQuestion: {d['part'].strip()}\n\nThe numbers of the sentences that answer it:"
    return dict(messages=[dict(role="system", content=SYSTEM), dict(role="user", content=user)], temperature=0.0, max_tokens=48), listed

if "--check" in sys.argv:
    same = tot = 0
    for d in D:
        body, _ = prompt(d)
        cs = calls(f"{DIR}/recA/{d['corpus']}/rec", d["q"])
        if len(cs) >= d["k"]:
            tot += 1
            rec = cs[d["k"] - 1]["messages"][1]["content"]
            if rec == body["messages"][1]["content"]: same += 1
            elif tot - same < 3: print("DIFF\n", rec[:600], "\n----\n", body["messages"][1]["content"][:600])
    print(f"{same} of {tot} prompts as recorded"); sys.exit()

res = dict(right=0, first=0, wrong=0, none=0, listed=0)
t0 = time.time()
for d in D:
    body, listed = prompt(d)
    reply = ask(body)
    ks = named(reply, len(listed))
    hits = [listed[i-1][3] for i in ks]
    res["listed"] += any(s[3] for s in listed)
    if not ks: res["none"] += 1
    elif any(hits): res["right"] += 1
    else: res["wrong"] += 1
    res["first"] += bool(hits and hits[0])
print(f"{npass} passages, {k} choices: {res}  ({time.time()-t0:.0f} s)")
