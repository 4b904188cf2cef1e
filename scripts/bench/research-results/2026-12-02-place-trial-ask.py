#!/usr/bin/env python3
"""A record of the 2026-12-02 trial of the pick list's order (docs/research.md, "Sentences
picked by number", "Two other lists, measured and not shipped"). Run from anywhere; TRIAL_DIR (default /tmp/place-trial)
holds what the steps write. Steps:
  1. 2026-12-02-place-trial-collect.py BIN /work/corpora attrs,black,fzf,just,mkdocs,poetry,ruff,uv,uvicorn,direnv,hatch $TRIAL_DIR/data.json
     (BIN with `extractive::log_ranked`: 45dd021, or the commit after it; a stand-in model; half a minute)
  2. 2026-12-02-place-trial-orders.py: the orders tried over that data, no model
  3. 2026-12-02-place-trial-record.py BIN_BEFORE (the commit after 45dd021: no place weight) /work/corpora CORPORA $TRIAL_DIR/recA, and 45dd021 into $TRIAL_DIR/recB
  4. 2026-12-02-place-trial-ask.py: the real model (local-model, 127.0.0.1:8088) asked every pick prompt of both, where they differ
  5. 2026-12-02-place-trial-variant.py NPASS K: pick prompts built from data.json with NPASS passages and K
     sentences (`--check`: how many of the built 3/8 prompts are the recorded ones), asked of the real model
  6. 2026-12-02-place-trial-sections.py: the model asked, by the passages' headings, which answer a part
"""
import os
DIR = os.environ.get('TRIAL_DIR', '/tmp/place-trial')
import importlib.machinery, json, os, re, sys, glob, hashlib, urllib.request, time
BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pp = importlib.machinery.SourceFileLoader("pp", f"{BENCH}/research-part-prompts").load_module()
NAMES = "attrs,black,fzf,just,mkdocs,poetry,ruff,uv,uvicorn,direnv,hatch".split(",")
CACHE = f"{DIR}/replies.json"
cache = json.load(open(CACHE)) if os.path.exists(CACHE) else {}
dry = "--dry" in sys.argv

def calls(rec, q):
    def order(f):
        m = re.search(r"call(\d+)", f); return int(m.group(1)) if m else 1
    names = glob.glob(f"{rec}/q{q:02d}.request.json") + glob.glob(f"{rec}/q{q:02d}.call*.request.json")
    out = []
    for f in sorted(names, key=order):
        body = json.load(open(f))
        if body.get("messages") and body["messages"][0]["content"].startswith("You pick the sentences"):
            out.append(body)
    return out

def ask(body):
    key = hashlib.sha1(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
    if key in cache: return cache[key]
    if dry: return None
    req = dict(model="qwen2.5-coder-1.5b", messages=body["messages"], temperature=body.get("temperature", 0),
               max_tokens=body.get("max_tokens", 48), stream=False)
    t = time.time()
    r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:8088/v1/chat/completions",
        data=json.dumps(req).encode(), headers={"content-type": "application/json"}), timeout=300)
    reply = json.load(r)["choices"][0]["message"]["content"]
    cache[key] = reply
    json.dump(cache, open(CACHE, "w"))
    print(f"  asked in {time.time()-t:.1f}s: {reply!r}", file=sys.stderr, flush=True)
    return reply

def listed(body):
    user = body["messages"][-1]["content"]
    return [m.group(1) for m in re.finditer(r"^\(\d+\) (.*?)(?:  \u2014 [^\n]*)?$", user, re.M)]

def named(reply, n):
    ks = [int(k) for k in re.findall(r"(?:^|[^\w\-])\((\d{1,4})\)", reply or "")]
    if not ks and reply and re.fullmatch(r"[\d\s,;.]+", reply.strip()):
        ks = [int(k) for k in re.findall(r"\d+", reply)]
    out = []
    for k in ks:
        if 1 <= k <= n and k not in out: out.append(k)
    return out[:3]

def main():
    score = {a: dict(first=0, any=0, none=0, wrong=0) for a in "AB"}
    differ = same = 0
    for name in NAMES:
        corpus = f"/work/corpora/{name}"
        for q, parts in pp.located(f"{BENCH}/research-answers-{name}.md").items():
            ca, cb = calls(f"{DIR}/recA/{name}/rec", q), calls(f"{DIR}/recB/{name}/rec", q)
            if not (len(ca) == len(cb) == len(parts)): continue
            for k, lines in parts.items():
                tri = pp.located_trigrams(corpus, lines)
                a, b = ca[k-1], cb[k-1]
                if a["messages"] == b["messages"]: same += 1
                else: differ += 1
                for arm, body in (("A", a), ("B", b)):
                    if arm == "B" and a["messages"] == b["messages"]:
                        reply = ask(a)
                    else:
                        reply = ask(body)
                    if reply is None: continue
                    ls = listed(body); ks = named(reply, len(ls))
                    hits = [pp.located_sentence(ls[i-1], tri) for i in ks]
                    s = score[arm]
                    if not ks: s["none"] += 1
                    elif hits[0]: s["first"] += 1
                    if any(hits): s["any"] += 1
                    elif ks: s["wrong"] += 1
    print(f"prompts same {same}, differ {differ}")
    for arm in "AB": print(arm, score[arm])


if __name__ == "__main__":
    main()
