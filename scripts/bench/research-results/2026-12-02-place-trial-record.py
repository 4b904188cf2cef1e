#!/usr/bin/env python3
"""Step "record" of the 2026-12-02 trial of the pick list; the steps, and TRIAL_DIR, are in
the docstring of 2026-12-02-place-trial-ask.py."""
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
