#!/usr/bin/env python3
"""A record of the 2026-12-02 (evening) measure of the built-in encoder (docs/research.md,
"Searched by meaning"): every call of the eleven corpora's questions recorded with BIN, one arm
at a time, the stand-in model (research-part-prompts' Stub) answering.
  ARM off      `[research] embeddings = "off"` (words alone: the build before, as far as what is
               sent goes)
  ARM builtin  nothing configured, all-MiniLM-L6-v2 in each state's data dir (ENCODER: the file
               scripts/bench/minilm-gguf writes), as after `patchwise model pull`
Usage: 2026-12-02-builtin-encoder-record.py BIN OUT ARM; then TRIAL_DIR=T with OUT = T/recA (off)
and T/recB (builtin), T/replies.json = the place trial's, the meaning trial's and this measure's
replies merged, and 2026-12-02-place-trial-ask.py asks the real model the pick prompts not cached.
"""
import importlib.machinery, http.server, threading, subprocess, os, sys
ENCODER = os.environ.get("ENCODER", "/tmp/mine/all-MiniLM-L6-v2-Q8_0.gguf")
BENCH = "/work/main/scripts/bench"
pp = importlib.machinery.SourceFileLoader("pp", f"{BENCH}/research-part-prompts").load_module()
binary, out, arm = sys.argv[1], sys.argv[2], sys.argv[3]
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), pp.Stub)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/v1"
for name in "attrs,black,fzf,just,mkdocs,poetry,ruff,uv,uvicorn,direnv,hatch".split(","):
    state = f"{out}/state-{name}"
    extra = ["--research", 'embeddings="off"'] if arm == "off" else []
    if arm == "builtin":
        os.makedirs(f"{state}/data/patchwise/models", exist_ok=True)
        link = f"{state}/data/patchwise/models/all-MiniLM-L6-v2-Q8_0.gguf"
        if not os.path.exists(link): os.symlink(ENCODER, link)
    os.makedirs(f"{out}/{name}", exist_ok=True)
    subprocess.run([f"{BENCH}/research-questions", "--binary", binary, "--workspace", f"/work/corpora/{name}",
                    "--questions", f"{BENCH}/research-questions-{name}.json", "--base-url", url, "--model", "m",
                    "--state", state, "--out", f"{out}/{name}.jsonl", "--record", f"{out}/{name}/rec"] + extra,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(name, flush=True)
