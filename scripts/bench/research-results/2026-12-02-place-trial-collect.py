#!/usr/bin/env python3
"""Step "collect" of the 2026-12-02 trial of the pick list; the steps, and TRIAL_DIR, are in
the docstring of 2026-12-02-place-trial-ask.py."""
import os
DIR = os.environ.get('TRIAL_DIR', '/tmp/place-trial')
import importlib.machinery, json, os, re, subprocess, sys, tempfile, glob, threading, http.server
BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pp = importlib.machinery.SourceFileLoader("pp", f"{BENCH}/research-part-prompts").load_module()

def parse(path):
    out = []
    for line in open(path):
        if "a part's passages" in line:
            m = re.search(r"pool=(\{.*\})", line)
            # the json is followed by nothing else on the line in the plain formatter?
            txt = m.group(1)
            dec = json.JSONDecoder()
            obj, _ = dec.raw_decode(txt)
            out.append(obj)
    return out

def marked(name, corpus, logfiles):
    """The parts of corpus NAME's questions split as located, one per part: the pool its log
    line shows, each sentence marked True when it is on the located answer (60 % of its word
    trigrams are the located lines')."""
    out = []
    for q, parts in pp.located(f"{BENCH}/research-answers-{name}.md").items():
        if q - 1 >= len(logfiles): continue
        asked = parse(logfiles[q - 1])
        if len(asked) != len(parts): continue
        for k, lines in parts.items():
            a = asked[k - 1]
            tri = pp.located_trigrams(corpus, lines)
            for psg in a["pool"]:
                for s in psg["sentences"]:
                    s.append(bool(pp.located_sentence(s[2], tri)))
            out.append(dict(corpus=name, q=q, k=k, lines=lines, **a))
    return out

if __name__ == "__main__":
    binary, corpora, names, outp = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), pp.Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    data = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            logs = f"{tmp}/logs-{name}"; os.makedirs(logs)
            if os.environ.get("ENCODER"):  # ranked by meaning too, as after `patchwise model pull`
                models = f"{tmp}/state-{name}/data/patchwise/models"; os.makedirs(models)
                os.symlink(os.environ["ENCODER"], f"{models}/all-MiniLM-L6-v2-Q8_0.gguf")
            env = dict(os.environ, DIAG_LOGS=logs, DIAG_BIN=binary)
            subprocess.run([f"{BENCH}/research-questions", "--binary", os.path.join(os.path.dirname(os.path.abspath(__file__)), "2026-12-02-place-trial-wrap.sh"),
                   "--workspace", f"{corpora}/{name}", "--questions", f"{BENCH}/research-questions-{name}.json",
                   "--base-url", url, "--model", "m", "--state", f"{tmp}/state-{name}", "--out", f"{tmp}/{name}.jsonl"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            data += marked(name, f"{corpora}/{name}", sorted(glob.glob(f"{logs}/*.log")))
    json.dump(data, open(outp, "w"))
    print(len(data), "parts")
