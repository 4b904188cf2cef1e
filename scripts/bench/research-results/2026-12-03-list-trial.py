#!/usr/bin/env python3
"""A record of the 2026-12-03 trial of what the pick lists and how (docs/research.md, "Sentences
picked by number"). Over every part asked on its own in the eleven corpora with located answers:
  1. 2026-12-02-place-trial-collect.py BIN /work/corpora attrs,black,fzf,just,mkdocs,poetry,ruff,uv,uvicorn,direnv,hatch $TRIAL_DIR/data.json
     with ENCODER=the GGUF scripts/bench/minilm-gguf writes (ranked by meaning, as after
     `patchwise model pull`; BIN 12de086), a stand-in model
  2. this script (run with the venv of 2026-12-02-meaning-trial.py, MINILM as there):
       list-trial.py            which sentences each way of listing puts in the list (no model)
       list-trial.py --ask      the real model (127.0.0.1:8088) asked over the lists that differ,
                                and asked to answer in its own words, its reply located
Results: 2026-12-03-list-trial-results.txt. The model's replies are cached in TRIAL_DIR/replies.json:
this trial's are 2026-12-03-list-trial-replies.json (merge it with the pick trial's cache,
/tmp/trial/replies.json of 2026-12-03-pick-encoder-trial.py, to ask nothing again). `--write`
(the model answering in its own words, the listed sentence nearest its reply) was written and
not run.
"""
import importlib.machinery, json, os, re, sys, pickle
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("MINILM", "/tmp/mine/minilm"); os.environ.setdefault("TRIAL_DIR", "/tmp/list")
DIR = os.environ["TRIAL_DIR"]
mt = importlib.machinery.SourceFileLoader("mt", f"{HERE}/2026-12-02-meaning-trial.py").load_module()
pa = importlib.machinery.SourceFileLoader("pa", f"{HERE}/2026-12-02-place-trial-ask.py").load_module()
E = mt.E
D = json.load(open(f"{DIR}/data.json"))

def ordered(d):
    return sorted([p for p in d["pool"] if p["place"] is not None], key=lambda p: p["place"])

def section(title):
    if " \u2014 " in title:
        sec = title.split(" \u2014 ", 1)[1].strip()
        if sec: return sec
    m = re.match(r"(.*):([\d-]+)$", title)
    return m.group(1) if m else title

def cands(d, npass):
    """(share, cos, passage index, sentence index, sentence, passage) of the copyable sentences of
    the part's first NPASS passages."""
    out = []
    pe = E(d["part"].strip())
    for i, p in enumerate(ordered(d)[:npass]):
        for j, s in enumerate(p["sentences"]):
            if s[1]:
                out.append(dict(share=s[0], cos=float(pe @ E(s[2][:600])), i=i, j=j, s=s, p=p))
    return out

def by_share(cs):
    return sorted(cs, key=lambda c: (-c["share"], c["i"], c["j"]))

def by_cos(cs):
    return sorted(cs, key=lambda c: (-c["cos"], c["i"], c["j"]))

def fused(cs, k=10, w_cos=1.0):
    rs = {id(c): r for r, c in enumerate(by_share(cs))}
    rc = {id(c): r for r, c in enumerate(by_cos(cs))}
    return sorted(cs, key=lambda c: (-(1 / (k + rs[id(c)]) + w_cos / (k + rc[id(c)])), c["i"], c["j"]))

def mix(a):
    return lambda cs: sorted(cs, key=lambda c: (-(a * c["share"] + (1 - a) * c["cos"]), c["i"], c["j"]))

def budgeted(order, n=8):
    """The first N, in the listing's order, within the prompt's 900 tokens as the variant step does."""
    lines, used, out = [], 0, []
    for c in order[:n]:
        line = f"({len(lines)+1}) {c['s'][2].strip()}  \u2014 {section(c['p']['title'])}\n"
        cost = len(line) / 3.6
        if used + cost > 900 and lines: break
        used += cost; lines.append(line); out.append(c)
    return out, "".join(lines).strip()

LISTINGS = {
    "shipped: 3 passages, 8 by share": (3, by_share, 8),
    "3 passages, 8 by cosine": (3, by_cos, 8),
    "3 passages, 8 by fused ranks": (3, fused, 8),
    "4 passages, 8 by fused ranks": (4, fused, 8),
    "6 passages, 8 by fused ranks": (6, fused, 8),
    "6 passages, 8 by cosine": (6, by_cos, 8),
    "6 passages, 8 by 0.5 share + 0.5 cos": (6, mix(0.5), 8),
    "6 passages, 8 by 0.3 share + 0.7 cos": (6, mix(0.3), 8),
    "all passages ranked, 8 by fused ranks": (99, fused, 8),
    "6 passages, 5 by fused ranks": (6, fused, 5),
    "6 passages, 6 by fused ranks": (6, fused, 6),
}

def listing(d, name):
    npass, order, n = LISTINGS[name]
    return budgeted(order(cands(d, npass)), n)

def located(cs): return [c["s"][3] for c in cs]

def main():
    print(len(D), "parts;", sum(any(s[3] and s[1] for p in d["pool"] for s in p["sentences"]) for d in D),
          "with a located sentence that may be quoted among the report's passages")
    for name in LISTINGS:
        a = f = f3 = 0
        for d in D:
            h = located(listing(d, name)[0])
            a += any(h); f += bool(h and h[0]); f3 += any(h[:3])
        print(f"{name:44} list holds {a:3} (first {f:3}, first three {f3:3})")
    pickle.dump(mt.cache, open(mt.CACHE, "wb"))
    if "--ask" not in sys.argv: return
    system = pick_system()
    for name in [n for n in sys.argv[2:] if n in LISTINGS] or ["shipped: 3 passages, 8 by share"]:
        s = dict(right=0, first=0, wrong=0, none=0, sentences=0)
        for d in D:
            cs, text = listing(d, name)
            user = (f"Question: {d['part'].strip()}\n\nSentences:\n{text}\n\nQuestion: {d['part'].strip()}"
                    "\n\nThe numbers of the sentences that answer it:")
            reply = pa.ask(dict(messages=[dict(role="system", content=system), dict(role="user", content=user)],
                                temperature=0.0, max_tokens=48))
            ks = pa.named(reply, len(cs))
            # As printed: nearest the part first, the sentences of the first one's passage, at most three.
            ks = sorted(ks, key=lambda k: -cs[k - 1]["cos"])
            ks = [k for k in ks if cs[k - 1]["i"] == cs[ks[0] - 1]["i"]][:3] if ks else []
            s["sentences"] += len(ks)
            h = [cs[k - 1]["s"][3] for k in ks]
            if not ks: s["none"] += 1
            elif any(h): s["right"] += 1
            else: s["wrong"] += 1
            s["first"] += bool(h and h[0])
        print(f"model over {name:34} right {s['right']:3} (first {s['first']:3})  wrong {s['wrong']:3}  none {s['none']:3}  sentences {s['sentences']}")

WRITE_SYSTEM = ("You answer a question about a project's documentation from the sentences given, in one or two "
                "sentences of your own, saying only what the sentences say.")

def written(names):
    """The model asked to answer in its own words over each listing's sentences; the listed
    sentence nearest its reply (cosine), and the nearest two, scored as the pick is."""
    for name in names:
        s1 = dict(right=0, wrong=0); s2 = dict(right=0, wrong=0); both = dict(right=0, wrong=0)
        for d in D:
            cs, text = listing(d, name)
            if not cs: continue
            user = (f"Sentences:\n{text}\n\nQuestion: {d['part'].strip()}\n\nAnswer in one or two sentences:")
            reply = pa.ask(dict(messages=[dict(role="system", content=WRITE_SYSTEM), dict(role="user", content=user)],
                                temperature=0.0, max_tokens=80)) or ""
            r = E(reply.strip()[:600])
            near = sorted(range(len(cs)), key=lambda i: -float(r @ E(cs[i]["s"][2][:600])))
            for sc, ks in ((s1, near[:1]), (s2, near[:2])):
                sc["right" if any(cs[k]["s"][3] for k in ks) else "wrong"] += 1
            d.setdefault("near", {})[name] = near[0]
        print(f"own words over {name:30} nearest: right {s1['right']:3} wrong {s1['wrong']:3}; nearest two: right {s2['right']:3} wrong {s2['wrong']:3}")

def reversed_too(name):
    """The model asked again over the same list in reverse order (a small model favours the first
    numbers); the two replies joined several ways, scored as printed."""
    system = pick_system()
    def ask_over(d, cs, text_order):
        lines = [f"({n}) {c['s'][2].strip()}  \u2014 {section(c['p']['title'])}" for n, c in enumerate(text_order, 1)]
        user = (f"Question: {d['part'].strip()}\n\nSentences:\n" + "\n".join(lines) + f"\n\nQuestion: {d['part'].strip()}"
                "\n\nThe numbers of the sentences that answer it:")
        reply = pa.ask(dict(messages=[dict(role="system", content=system), dict(role="user", content=user)],
                            temperature=0.0, max_tokens=48))
        return [id(text_order[k - 1]) for k in pa.named(reply, len(text_order))]
    ways = {w: dict(right=0, first=0, wrong=0, none=0, sentences=0) for w in
            ("forward", "reversed", "both orders' picks", "picked in both, else forward", "forward's first and reversed's first")}
    for d in D:
        cs, _ = listing(d, name)
        if not cs: continue
        by = {id(c): c for c in cs}
        fw = ask_over(d, cs, cs); rv = ask_over(d, cs, cs[::-1])
        joined = {
            "forward": fw, "reversed": rv,
            "both orders' picks": fw + [x for x in rv if x not in fw],
            "picked in both, else forward": [x for x in fw if x in rv] or fw,
            "forward's first and reversed's first": fw[:1] + [x for x in rv[:1] if x not in fw[:1]],
        }
        for w, ks in joined.items():
            ks = sorted(ks, key=lambda k: -by[k]["cos"])
            ks = [k for k in ks if by[k]["i"] == by[ks[0]]["i"]][:3] if ks else []
            sc = ways[w]; sc["sentences"] += len(ks)
            h = [by[k]["s"][3] for k in ks]
            if not ks: sc["none"] += 1
            elif any(h): sc["right"] += 1
            else: sc["wrong"] += 1
            sc["first"] += bool(h and h[0])
    for w, sc in ways.items():
        print(f"{name}, {w:38} right {sc['right']:3} (first {sc['first']:3})  wrong {sc['wrong']:3}  none {sc['none']:3}  sentences {sc['sentences']}")

def pick_system():
    """The pick prompt's system message as the build sends it (a recorded call of recB)."""
    import glob
    for f in glob.glob("/tmp/trial/recB/*/rec/*.request.json"):
        b = json.load(open(f))
        if b["messages"][0]["content"].startswith("You pick"):
            return b["messages"][0]["content"]

if __name__ == "__main__":
    main()
    if "--reversed" in sys.argv: reversed_too([n for n in sys.argv[2:] if n in LISTINGS][0] if [n for n in sys.argv[2:] if n in LISTINGS] else "shipped: 3 passages, 8 by share")
    if "--write" in sys.argv: written([n for n in sys.argv[2:] if n in LISTINGS] or ["shipped: 3 passages, 8 by share"])
    pickle.dump(mt.cache, open(mt.CACHE, "wb"))
