#!/usr/bin/env python3
"""A record of the 2026-12-02 trial of searching each part with the words of an answer the model
guessed (HyDE with words; docs/research.md, "Searched by meaning: two trials, not built").

TRIAL_DIR (default /tmp/guess-trial) holds what the steps write. The 178 located parts are those
of the place trial's data (2026-12-02-place-trial-collect.py, its step 1, into $TRIAL_DIR/data.json).
Steps:
  guesses            the real model (local-model on 127.0.0.1:8088) writes a guess for each part
                     -> $TRIAL_DIR/guesses.json (the run of the day: 2026-12-02-guess-trial-guesses.json)
  collect BIN NAME [KEY=VALUE ...]
                     the place trial's collect with BIN and [research] KEY=VALUE, guesses asked of the
                     real model (cached in $TRIAL_DIR/replies.json; the day's: -proxy-replies.json),
                     every other call answered by the stand-in -> $TRIAL_DIR/NAME.json, and the
                     library of each corpus kept in $TRIAL_DIR/NAME-state/
  search NAME        each part's own search (the index's FTS5 query and its re-ranking, as
                     research/index.rs does them) with its words, its guess's words, both, and in
                     turn, over NAME's libraries: where the answering passage ranks
  orders NAME ...    for each collected NAME: the report's passages, the part's first three and the
                     eight sentences listed, where they hold a located answer
The build measured is 6017308 with 2026-12-02-guess-trial.patch (`[research] guess_words`); as
committed there the guess's ranking goes first (the run of the day had the part's first too,
`on-words-first`); the patch's two tests were written and never run: it was measured and not kept.
"""
import hashlib, http.server, importlib.machinery, json, math, os, re, sqlite3, subprocess, sys, threading, time, urllib.request, glob

DIR = os.environ.get('TRIAL_DIR', '/tmp/guess-trial')
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
MODEL = "http://127.0.0.1:8088/v1/chat/completions"
pp = importlib.machinery.SourceFileLoader("pp", f"{BENCH}/research-part-prompts").load_module()
SYSTEM = ("You write documentation for software projects. Given a user's question and one part of it, "
          "write the two or three sentences that the project's documentation would use to answer that part: "
          "its option names, commands, file names, functions and terms. Write only those sentences.")

def ask(messages, max_tokens=90):
    req = dict(model="qwen2.5-coder-1.5b", messages=messages, temperature=0, max_tokens=max_tokens, stream=False)
    r = urllib.request.urlopen(urllib.request.Request(MODEL, data=json.dumps(req).encode(),
                               headers={"content-type": "application/json"}), timeout=600)
    return json.load(r)["choices"][0]["message"]["content"]

def key(d): return f"{d['corpus']}/{d['q']}/{d['k']}"
def data(): return json.load(open(f"{DIR}/data.json"))
def questions(name): return json.load(open(f"{BENCH}/research-questions-{name}.json"))

def guesses():
    path = f"{DIR}/guesses.json"
    out = json.load(open(path)) if os.path.exists(path) else {}
    for d in data():
        if key(d) in out: continue
        q = questions(d['corpus'])[d['q'] - 1]['question']
        out[key(d)] = ask([{"role": "system", "content": SYSTEM},
                           {"role": "user", "content": f"Question: {q}\n\nThe part to answer: {d['part']}"}])
        json.dump(out, open(path, "w"), indent=0)

CACHE = f"{DIR}/replies.json"
lock = threading.Lock()
class Proxy(http.server.BaseHTTPRequestHandler):
    """Guess prompts to the real model (cached by their messages), every other call the stand-in's."""
    protocol_version = "HTTP/1.1"
    cache = None
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        text = pp.TEXT
        if body.get("messages") and body["messages"][0]["content"].startswith("You write documentation"):
            k = hashlib.sha1(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
            with lock:
                if k not in Proxy.cache:
                    Proxy.cache[k] = ask(body["messages"], body.get("max_tokens", 90))
                    json.dump(Proxy.cache, open(CACHE, "w"))
                text = Proxy.cache[k]
        pp.answer(self, body, text)

def collect(binary, name, settings, handler=None):
    """As 2026-12-02-place-trial-collect.py, with the proxy (or `handler`) for a model and the
    state kept."""
    place = importlib.machinery.SourceFileLoader("place", f"{HERE}/2026-12-02-place-trial-collect.py").load_module()
    Proxy.cache = json.load(open(CACHE)) if os.path.exists(CACHE) else {}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler or Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    names = "attrs,black,fzf,just,mkdocs,poetry,ruff,uv,uvicorn,direnv,hatch".split(",")
    state, out = f"{DIR}/{name}-state", []
    for corpus_name in names:
        logs = f"{state}/logs-{corpus_name}"; os.makedirs(logs, exist_ok=True)
        env = dict(os.environ, DIAG_LOGS=logs, DIAG_BIN=binary)
        subprocess.run([f"{BENCH}/research-questions", "--binary", f"{HERE}/2026-12-02-place-trial-wrap.sh",
                        "--workspace", f"/work/corpora/{corpus_name}", "--questions", f"{BENCH}/research-questions-{corpus_name}.json",
                        "--base-url", url, "--model", "m", "--state", f"{state}/state-{corpus_name}",
                        "--out", f"{state}/{corpus_name}.jsonl"] + [a for kv in settings for a in ("--research", kv)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        out += place.marked(corpus_name, f"/work/corpora/{corpus_name}", sorted(glob.glob(f"{logs}/*.log")))
    json.dump(out, open(f"{DIR}/{name}.json", "w"))
    print(len(out), "parts")

# --- the index's search, as research/index.rs and research/passages.rs do it (words, stems) ---
STOP = set("""a about above after again all also am an and any are as at be because been before being between both but by can
could did do does doing done during each either else etc every few for from further get gets had has have having he her here hers
him his how however i if in into is it its itself just let may me might more most much must my no nor not now of off on once one only
or other our out over own per same she should so some such than that the their them then there these they this those through thus to
too under until up upon us use used uses using very via was way we were what when where whether which while who whom why will with
within without would you your""".split())
def stem(w):
    if len(w) <= 3: return w
    for suf, keep in [("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""), ("s", "")]:
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not (suf == "s" and w[:-1][-1] in "su"):
            return w[:-len(suf)] + keep
    return w
def stems(text):
    out = []
    for t in re.split(r"[^A-Za-z0-9]+", text.lower()):
        if len(t) >= 2 and t not in STOP and stem(t) not in out: out.append(stem(t))
    return out
def terms(text):
    out = []
    for tok in text.split():
        tok = re.sub(r"['\u2019](s|ll|ve|re|d|m)\b", "", tok)
        for w in re.split(r"[^A-Za-z0-9]+", tok):
            w = w.lower()
            if w and (len(w) >= 2 or w.isdigit()) and w not in STOP and w not in out: out.append(w)
    return out
def is_nav(text):
    lines = [l for l in text.split("\n") if l.strip()]
    links = sum(1 for l in lines if re.match(r"^\s*([-*+]|\d+\.)\s*\[[^\]]*\]\([^)]*\)\s*$", l))
    return not lines or links >= max(3, len(lines) * 0.6)
def search(db, words, limit=30, fts=None):
    """The index's query and re-ranking over FTS table `fts` (default: the library's first root's)."""
    if not words: return []
    q = " OR ".join('"%s"' % w.replace('"', ' ') for w in words)
    fts = fts or [r[0] for r in db.execute("select name from sqlite_master where name like 'passage_fts_%' and sql like 'CREATE VIRTUAL%'")][0]
    rows = db.execute(f"""SELECT p.id, f.path, p.start_line, p.end_line, {fts}.heading, {fts}.body, bm25({fts}, 2.0, 3.0, 1.0)
        FROM {fts} JOIN passage p ON p.id = {fts}.rowid JOIN passage_file f ON f.id = p.file_id
        WHERE {fts} MATCH ? ORDER BY 7, p.id LIMIT ?""", (q, limit)).fetchall()
    wanted = [stem(w) for w in words]
    scored = []
    for r in rows:
        have = set(stems(f"{r[1]} {r[4]} {r[5]}"))
        matched = max(1, sum(1 for w in wanted if w in have))
        scored.append((r[6] * (0.1 if is_nav(r[5]) else 1.0) * matched / max(1, len(wanted)), r))
    scored.sort(key=lambda t: t[0])
    return [r for _, r in scored]
def in_turn(*lists):
    out, seen = [], set()
    for k in range(max(len(l) for l in lists)):
        for l in lists:
            if k < len(l) and l[k][0] not in seen:
                seen.add(l[k][0]); out.append(l[k])
    return out
def hit(r, lines): return any(r[1] == f and r[2] <= b and a <= r[3] for f, a, b in lines)

def search_figures(name):
    G = json.load(open(f"{DIR}/guesses.json"))
    dbs = {}
    def db(c):
        if c not in dbs: dbs[c] = sqlite3.connect(f"{DIR}/{name}-state/state-{c}/data/patchwise/research/library.sqlite3")
        return dbs[c]
    D = [d for d in data() if key(d) in G]
    ways = {
        "the part's words": lambda d: search(db(d['corpus']), terms(d['part'])),
        "the guess's words": lambda d: search(db(d['corpus']), terms(G[key(d)])),
        "both, one query": lambda d: search(db(d['corpus']), terms(d['part']) + [w for w in terms(G[key(d)]) if w not in terms(d['part'])]),
        "part's, guess's in turn": lambda d: in_turn(search(db(d['corpus']), terms(d['part'])), search(db(d['corpus']), terms(G[key(d)]))),
    }
    print(f"{len(D)} parts; the answering passage (its lines overlap a located answer's) among the first N of the part's search")
    for way, f in ways.items():
        ranked = [f(d) for d in D]
        print(f"{way:26}", " ".join(f"@{n}={sum(any(hit(r, d['lines']) for r in rs[:n]) for d, rs in zip(D, ranked)):3}" for n in (1, 2, 3, 6, 12, 24)))

def orders(names):
    def holds(s): return s[3] and s[1]
    def ordered(d): return sorted([p for p in d['pool'] if p['place'] is not None], key=lambda p: p['place'])
    def listed(d):
        ps = ordered(d)[:3]
        sents = sorted([(-s[0], i, j, s) for i, p in enumerate(ps) for j, s in enumerate(p['sentences']) if s[1]])
        return [t[3] for t in sents[:8]]
    for name in names:
        D = json.load(open(f"{DIR}/{name}.json"))
        L = [listed(d) for d in D]
        print(f"{name:12} parts {len(D)}; a located sentence in the report's passages {sum(any(holds(s) for p in d['pool'] for s in p['sentences']) for d in D)}, "
              f"the part's first three {sum(any(holds(s) for p in ordered(d)[:3] for s in p['sentences']) for d in D)} (first {sum(any(holds(s) for p in ordered(d)[:1] for s in p['sentences']) for d in D)}), "
              f"listed {sum(any(s[3] for s in l) for l in L)} (first {sum(bool(l and l[0][3]) for l in L)}, first three {sum(any(s[3] for s in l[:3]) for l in L)})")

if __name__ == "__main__":
    os.makedirs(DIR, exist_ok=True)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "guesses": guesses()
    elif cmd == "collect": collect(args[0], args[1], args[2:])
    elif cmd == "search": search_figures(args[0])
    elif cmd == "orders": orders(args)
    else: sys.exit(__doc__)
