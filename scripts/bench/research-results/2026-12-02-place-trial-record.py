#!/usr/bin/env python3
"""A record of the 2026-12-02 trial of the pick list's order (docs/research.md, "Sentences
picked by number", "The passage's place"). Run from anywhere; TRIAL_DIR (default /tmp/place-trial)
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
import importlib.machinery, json, os, subprocess, sys, threading, http.server
BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pp = importlib.machinery.SourceFileLoader("pp", f"{BENCH}/research-part-prompts").load_module()
binary, corpora, names, out = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), pp.Stub)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/v1"
for name in names:
    os.makedirs(f"{out}/{name}", exist_ok=True)
    subprocess.run([f"{BENCH}/research-questions", "--binary", binary, "--workspace", f"{corpora}/{name}",
        "--questions", f"{BENCH}/research-questions-{name}.json", "--base-url", url, "--model", "m",
        "--state", f"{out}/state-{name}", "--out", f"{out}/{name}.jsonl", "--record", f"{out}/{name}/rec"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
