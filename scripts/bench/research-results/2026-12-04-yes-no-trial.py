#!/usr/bin/env python3
"""The 2026-12-04 (evening) trial of asking about each listed sentence on its own (docs/research.md,
"Sentences picked by number"): the pick lists eight sentences and the model names the ones that
answer (one call); Qwen2.5-Coder-1.5B names one of the first three listed most of the time, and
all eight in about 40 % of chezmoi's picks. Here the model is also asked, for each listed
sentence, whether it answers the part (YES or NO; one call a sentence, the part's prompt prefix
cached by the host), and the pick is made from those answers in several ways.
Steps:
  1. ENCODER=<all-MiniLM-L6-v2-Q8_0.gguf> 2026-12-02-place-trial-collect.py BIN CORPORA chezmoi,typer,textual,helix $TRIAL_DIR/data.json
     (BIN d159038; CORPORA holds chezmoi, textual, helix and, as `typer`, Typer with docs_src/)
  2. TRIAL_DIR=… MINILM=… this script: the real model (127.0.0.1:8088) asked over the shipped
     listing (the sixteen with the largest share of the part's words, fused with their cosine,
     the first eight), replies cached in $TRIAL_DIR/replies.json
     (2026-12-04-yes-no-trial-replies.json is this trial's).
  3. the same with --second: where none of the pick's sentences (as printed) was answered YES,
     a second look over the part's passages 4 to 6 (listed the same way, picked, its picks
     asked YES or NO), and what each way of using it would have printed.
Results: 2026-12-04-yes-no-trial-results.txt.
"""
import importlib.machinery, os, re, sys
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TRIAL_DIR", "/tmp/yesno")
lt = importlib.machinery.SourceFileLoader("lt", f"{HERE}/2026-12-03-list-trial.py").load_module()
nt = importlib.machinery.SourceFileLoader("nt", f"{HERE}/2026-12-04-list-trial-new.py").load_module()
pa, D = lt.pa, lt.D


def shipped(cs):
    """As `generate::listing_order`: the 16 with the largest share, fused with their cosine."""
    return lt.fused(lt.by_share(cs)[:16])


lt.LISTINGS["shipped: 16 by share, 8 by fused ranks"] = (3, shipped, 8)
NAME = "shipped: 16 by share, 8 by fused ranks"

YES_SYSTEM = ("You check whether a sentence of documentation answers a question. Reply YES if the "
              "sentence answers the question, NO if it does not. Write nothing else.")


def yes(d, c):
    user = (f"Question: {d['part'].strip()}\n\nSentence: {c['s'][2].strip()}  \u2014 {lt.section(c['p']['title'])}"
            "\n\nDoes the sentence answer the question?")
    reply = pa.ask(dict(messages=[dict(role="system", content=YES_SYSTEM), dict(role="user", content=user)],
                        temperature=0.0, max_tokens=2)) or ""
    return reply.strip().upper().startswith("YES")


def listwise(d, cs, text):
    user = (f"Question: {d['part'].strip()}\n\nSentences:\n{text}\n\nQuestion: {d['part'].strip()}"
            "\n\nThe numbers of the sentences that answer it:")
    reply = pa.ask(dict(messages=[dict(role="system", content=nt.pick_system()), dict(role="user", content=user)],
                        temperature=0.0, max_tokens=48))
    return pa.named(reply, len(cs))


def printed(cs, ks):
    """As the report prints: nearest the part first, the sentences of the first one's passage, at most three."""
    ks = sorted(ks, key=lambda k: -cs[k - 1]["cos"])
    return [k for k in ks if cs[k - 1]["i"] == cs[ks[0] - 1]["i"]][:3] if ks else []


def main():
    ways = ["listwise (shipped)", "yes, in list order", "yes, first in list order only",
            "listwise picks answered yes, else yes", "listwise picks answered yes, else listwise",
            "yes, else listwise"]
    score = {w: dict(right=0, first=0, wrong=0, none=0, sentences=0) for w in ways}
    yes_right = yes_wrong = no_right = no_wrong = all_yes = no_yes = 0
    per_corpus = {}
    for d in D:
        cs, text = lt.listing(d, NAME)
        if not cs:
            continue
        lw = listwise(d, cs, text)
        ys = [k for k in range(1, len(cs) + 1) if yes(d, cs[k - 1])]
        for k in range(1, len(cs) + 1):
            loc = bool(cs[k - 1]["s"][3])
            if k in ys:
                yes_right += loc; yes_wrong += not loc
            else:
                no_right += loc; no_wrong += not loc
        all_yes += len(ys) == len(cs); no_yes += not ys
        lw_yes = [k for k in lw if k in ys]
        picks = {
            "listwise (shipped)": lw,
            "yes, in list order": ys[:3],
            "yes, first in list order only": ys[:1],
            "listwise picks answered yes, else yes": lw_yes or ys[:3],
            "listwise picks answered yes, else listwise": lw_yes or lw,
            "yes, else listwise": ys[:3] or lw,
        }
        for w, ks in picks.items():
            ks = printed(cs, ks)
            sc = score[w]; sc["sentences"] += len(ks)
            h = [cs[k - 1]["s"][3] for k in ks]
            if not ks: sc["none"] += 1
            elif any(h): sc["right"] += 1
            else: sc["wrong"] += 1
            sc["first"] += bool(h and h[0])
            pc = per_corpus.setdefault((d["corpus"], w), dict(right=0, wrong=0, none=0))
            pc["right" if ks and any(h) else "wrong" if ks else "none"] += 1
    print(len(D), "parts;", sum(any(c["s"][3] for c in lt.listing(d, NAME)[0]) for d in D), "with a located sentence listed")
    print(f"YES to a located sentence {yes_right}, to another {yes_wrong}; NO to a located sentence {no_right}, to another {no_wrong}; "
          f"every sentence YES in {all_yes} parts, none in {no_yes}")
    for w, sc in score.items():
        print(f"{w:44} right {sc['right']:3} (first {sc['first']:3})  wrong {sc['wrong']:3}  none {sc['none']:3}  sentences {sc['sentences']}")
    for corpus in sorted({d["corpus"] for d in D}):
        print(corpus, "; ".join(f"{w}: {per_corpus[(corpus, w)]['right']}/{per_corpus[(corpus, w)]['wrong']}/{per_corpus[(corpus, w)]['none']}"
                               for w in ways))


def cands_from(d, a, b):
    """As lt.cands, over the part's passages A to B-1 (0-based)."""
    out = []
    pe = lt.E(d["part"].strip())
    for i, p in enumerate(lt.ordered(d)[a:b]):
        for j, s in enumerate(p["sentences"]):
            if s[1]:
                out.append(dict(share=s[0], cos=float(pe @ lt.E(s[2][:600])), i=i + a, j=j, s=s, p=p))
    return out


def second():
    import collections
    c = collections.Counter()
    for d in D:
        cs, text = lt.listing(d, NAME)
        if not cs:
            continue
        lw = printed(cs, listwise(d, cs, text))
        right = any(cs[k - 1]["s"][3] for k in lw)
        if [k for k in lw if yes(d, cs[k - 1])]:
            c["first pick has a YES, " + ("right" if right else "wrong")] += 1
            continue
        cs2, text2 = lt.budgeted(shipped(cands_from(d, 3, 6)), 8)
        if not cs2:
            c["no YES, no second list, first " + ("right" if right else "wrong")] += 1
            continue
        lw2 = printed(cs2, listwise(d, cs2, text2))
        right2 = any(cs2[k - 1]["s"][3] for k in lw2)
        ok2 = bool([k for k in lw2 if yes(d, cs2[k - 1])])
        held2 = any(x["s"][3] for x in cs2)
        c[f"no YES: first {'right' if right else 'wrong'}, second {'right' if right2 else 'wrong'}, "
          f"second {'has a YES' if ok2 else 'has no YES'}{', its list holds one' if held2 else ''}"] += 1
    for k, v in sorted(c.items()):
        print(f"{v:3}  {k}")


if __name__ == "__main__":
    main()
    if "--second" in sys.argv:
        second()
    lt.pickle.dump(lt.mt.cache, open(lt.mt.CACHE, "wb"))
