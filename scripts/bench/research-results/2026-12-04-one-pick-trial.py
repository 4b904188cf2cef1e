#!/usr/bin/env python3
"""The 2026-12-04 (evening) trial of two other ways to ask the pick (docs/research.md, "Sentences
picked by number"), over the data of 2026-12-04-yes-no-trial.py (its step 1; TRIAL_DIR, MINILM as
there), against the shipped pick prompt over the same shipped listing:
  one     the system message asks for the one sentence that answers best ("(k)", or (0));
  both    the shipped prompt asked again over the list in reverse order, the two replies joined
          (picked in both orders, else the forward pick): a small model favours the first places.
The model (127.0.0.1:8088) replies are cached in $TRIAL_DIR/replies.json (this trial's and the
yes-no trial's are 2026-12-04-yes-no-trial-replies.json). Printed as the report prints a pick.
Results: 2026-12-04-one-pick-trial-results.txt.
"""
import importlib.machinery, os, re, collections
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TRIAL_DIR", "/tmp/yesno")
yn = importlib.machinery.SourceFileLoader("yn", f"{HERE}/2026-12-04-yes-no-trial.py").load_module()
lt, pa = yn.lt, yn.pa

ONE_SYSTEM = ("You pick the sentence of documentation that answers a question. Each sentence has its "
              "number in parentheses before it. Reply with the number of the one sentence that answers "
              "the question best, in parentheses. If no sentence answers it, reply (0). Write nothing else.")


def named_all(reply, n):
    out = []
    for k in [int(k) for k in re.findall(r"(?:^|[^\w\-])\((\d{1,4})\)", reply or "")]:
        if 1 <= k <= n and k not in out:
            out.append(k)
    return out


def ask(system, d, cs):
    lines = [f"({n}) {c['s'][2].strip()}  \u2014 {lt.section(c['p']['title'])}" for n, c in enumerate(cs, 1)]
    user = (f"Question: {d['part'].strip()}\n\nSentences:\n" + "\n".join(lines) + f"\n\nQuestion: {d['part'].strip()}"
            "\n\nThe numbers of the sentences that answer it:")
    return named_all(pa.ask(dict(messages=[dict(role="system", content=system), dict(role="user", content=user)],
                                 temperature=0.0, max_tokens=48)), len(cs))


def main():
    score = collections.defaultdict(collections.Counter)
    for d in lt.D:
        cs, _ = lt.listing(d, yn.NAME)
        if not cs:
            continue
        fw = ask(yn.nt.pick_system(), d, cs)
        rv = [len(cs) + 1 - k for k in ask(yn.nt.pick_system(), d, cs[::-1])]
        one = ask(ONE_SYSTEM, d, cs)
        ways = {"shipped": fw, "one sentence asked": one,
                "both orders: picked in both, else forward": [k for k in fw if k in rv] or fw}
        for w, ks in ways.items():
            ks = yn.printed(cs, ks)
            h = [cs[k - 1]["s"][3] for k in ks]
            sc = score[w]
            sc["none" if not ks else "right" if any(h) else "wrong"] += 1
            sc["names 4+"] += len(ks) >= 4
        score["replies naming 4+"]["shipped"] += len(fw) >= 4
        score["replies naming 4+"]["reversed"] += len(rv) >= 4
        score["replies naming 4+"]["one"] += len(one) >= 4
    for w, sc in score.items():
        print(f"{w:44} " + "  ".join(f"{k} {v}" for k, v in sorted(sc.items())))


if __name__ == "__main__":
    main()
