#!/usr/bin/env python3
"""Trial: the model picks, among a part's first K passages (heading and opening words), the
ones that answer; the new order (its picks first) scored against the located passages."""
import json, re, sys, time, urllib.request
POOLS, OUT = sys.argv[1], sys.argv[2]
K = int(sys.argv[3]) if len(sys.argv) > 3 else 8
WORDS = int(sys.argv[4]) if len(sys.argv) > 4 else 30
URL = "http://127.0.0.1:8088/v1/chat/completions"
SYSTEM = "You pick the sections of a project's documentation that answer a user's question. Reply with numbers only."
def excerpt(p):
    title = p["title"].split(" — ", 1)
    head = title[1] if len(title) > 1 else title[0]
    words = []
    for s in p["sentences"]:
        words += s.split()
        if len(words) >= WORDS: break
    text = " ".join(words[:WORDS]) + (" …" if len(words) > WORDS else "")
    return head, text
def prompt(d):
    lines = [f"Question: {d['part']}", "", "Sections:"]
    for i, p in enumerate(d["ranked"][:K], 1):
        head, text = excerpt(p)
        lines.append(f"[{i}] {head}: {text}")
    lines += ["", f"Question: {d['part']}", "", "The numbers of the sections (at most three) that answer it, best first:"]
    return "\n".join(lines)
def ask(text):
    body = {"model": "m", "temperature": 0, "max_tokens": 16, "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]}
    req = urllib.request.Request(URL, json.dumps(body).encode(), {"content-type": "application/json"})
    t = time.time()
    r = json.load(urllib.request.urlopen(req, timeout=300))
    return r["choices"][0]["message"]["content"], time.time() - t, r.get("usage", {})
done = set()
try:
    for l in open(OUT): x = json.loads(l); done.add((x["c"], x["q"], x["p"]))
except FileNotFoundError: pass
out = open(OUT, "a")
ALL = [json.loads(l) for l in open(POOLS)]
def prio(d):
    h = [i for i, p in enumerate(d["ranked"]) if p["holds"]]
    return 0 if h and h[0] >= 2 else 1
ALL.sort(key=prio)
import os
if os.environ.get("RISKY"): ALL = [d for d in ALL if prio(d) == 0]
for d in ALL:
    if (d["c"], d["q"], d["p"]) in done: continue
    r = d["ranked"]
    holds = [i for i, p in enumerate(r) if p["holds"]]
    if not holds or holds[0] >= K:
        row = {"c": d["c"], "q": d["q"], "p": d["p"], "skip": True, "place": holds[0] if holds else None}
    else:
        text = prompt(d)
        reply, secs, usage = ask(text)
        named = []
        for m in re.finditer(r"\d+", reply):
            n = int(m.group()) - 1
            if 0 <= n < K and n < len(r) and n not in named: named.append(n)
        named = named[:3]
        order = named + [i for i in range(len(r)) if i not in named]
        row = {"c": d["c"], "q": d["q"], "p": d["p"], "skip": False, "place": holds[0], "reply": reply,
               "named": named, "new_place": min(order.index(h) for h in holds), "secs": round(secs, 2), "usage": usage}
    out.write(json.dumps(row) + "\n"); out.flush()
    print(json.dumps(row), flush=True)
