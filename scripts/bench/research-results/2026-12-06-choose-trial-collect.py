#!/usr/bin/env python3
"""Whether each located part's answer is listed for the model's pick, without a model.

    scripts/bench/research-listed BIN OUT CORPUS[,CORPUS…] [CONFIG-LINE …]

For every question of scripts/bench/research-questions-CORPUS.json whose parts were located
(research-answers-CORPUS.md), runs `BIN research … --sources workspace` over
$CORPORA/CORPUS (default /work/corpora) against a stand-in model that records each call's
prompt (as research-part-prompts does), with the ranking log on, and prints one JSON row per
located part: `aligned` (the report split the question as located), `anywhere` (some part's
list of sentences to pick from holds a located sentence), and when aligned: `found` (a passage
of the located lines is among the report's passages), `held` (one of them holds a located
sentence), `place` (0-based, its best place in the part's ranking), `top3` (the located
sentences of the part's first three passages: place, share, quotable, text) and `listed` (the
part's own list holds one). The prompts are kept in OUT/prompts-CORPUS-Q.txt. CONFIG-LINEs
are appended under `[research]` of the run's config (a line may open another table). The
built-in encoder is linked from $MINILM (default /tmp/mine/all-MiniLM-L6-v2-Q8_0.gguf).
OUT must be an absolute path: XDG directories are ignored when relative.
"""
import json, re, os, sys, subprocess, threading, http.server, importlib.machinery, importlib.util
HERE="/work/main/scripts/bench"
CORPORA=os.environ.get("CORPORA","/work/corpora")
MINILM=os.environ.get("MINILM","/tmp/mine/all-MiniLM-L6-v2-Q8_0.gguf")
loader = importlib.machinery.SourceFileLoader("rpp", f"{HERE}/research-part-prompts")
spec = importlib.util.spec_from_loader("rpp", loader); rpp = importlib.util.module_from_spec(spec); loader.exec_module(rpp)
CALLS=[]
class Rec(rpp.Stub):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        CALLS.append(body)
        rpp.answer(self, body, rpp.TEXT)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Rec)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/v1"
binary, out, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
extra = sys.argv[4:]
res=[]
POOLS=[]
for name in names:
    st=f"{out}/state-{name}"
    os.makedirs(f"{st}/data/patchwise/models",exist_ok=True)
    m=f"{st}/data/patchwise/models/all-MiniLM-L6-v2-Q8_0.gguf"
    if not os.path.exists(m): os.symlink(MINILM,m)
    cfg=f"{st}/config/patchwise"; os.makedirs(cfg,exist_ok=True)
    open(f"{cfg}/config.toml","w").write(f'[providers.local]\nkind = "openai"\nbase_url = "{url}"\n\n[roles]\ncoder = "local/m"\n'+("\n[research]\n"+"\n".join(extra)+"\n" if extra else ""))
    env=dict(os.environ,XDG_CONFIG_HOME=f"{st}/config",XDG_DATA_HOME=f"{st}/data",RUST_LOG="patchwise::research::extractive=debug")
    qs=json.load(open(f"{HERE}/research-questions-{name}.json"))
    loc=rpp.located(f"{HERE}/research-answers-{name}.md")
    corpus=f"{CORPORA}/{name}"
    for q,parts in loc.items():
        if q>len(qs): continue
        CALLS.clear()
        d=subprocess.run([binary,"research",qs[q-1]["question"],"--sources","workspace","--json","--workspace",corpus],env=env,capture_output=True,text=True)
        pools=[]
        with open(f"{out}/prompts-{name}-{q}.txt","w") as fh:
            for body in CALLS: fh.write(body["messages"][-1]["content"]+"\n=====\n")
        for line in d.stderr.splitlines():
            line=re.sub(r'\x1b\[[0-9;]*m','',line)
            if "a part's passages" in line:
                pools.append(json.JSONDecoder().raw_decode(line[line.index('pool=')+5:])[0])
        picks=[]
        for body in CALLS:
            user=body["messages"][-1]["content"]
            picks.append([m.group(1) for m in re.finditer(r"^\(\d+\) (.*?)(?:  \u2014 [^\n]*)?$", user, re.M)])
        aligned = len(pools)==len(parts)
        for k,lines in parts.items():
            tri=rpp.located_trigrams(corpus,lines)
            anywhere=any(rpp.located_sentence(x,tri) for p in picks for x in p)
            row={"c":name,"q":q,"p":k,"aligned":aligned,"anywhere":anywhere}
            if aligned:
                pool=pools[k-1]
                best=None; found=False; pool_has_sentence=False; top3=[]
                for p in pool["pool"]:
                    m=re.match(r"(\S+?):(\d+)-(\d+)",p["title"])
                    if not m: continue
                    f,a,b=m.group(1),int(m.group(2)),int(m.group(3))
                    if any(f==lf and not (b<la or a>lb) for lf,la,lb in lines):
                        found=True
                        holds=any(rpp.located_sentence(t,tri) for _,_,t in p["sentences"])
                        if holds: pool_has_sentence=True
                        if p["place"] is not None and holds and (best is None or p["place"]<best): best=p["place"]
                        if p["place"] is not None and p["place"]<3:
                            for sh,cp,t in p["sentences"]:
                                if rpp.located_sentence(t,tri): top3.append((p["place"],round(sh,3),cp,t[:100]))
                ranked=sorted([p for p in pool["pool"] if p["place"] is not None], key=lambda p:p["place"])
                (lambda d: (POOLS.append(d), open(f"{out}/pools.jsonl","a").write(json.dumps(d)+"\n")))({"c":name,"q":q,"p":k,"part":pool["part"],"question":qs[q-1]["question"],"ranked":[{"title":p["title"],"place":p["place"],"sentences":[t for _,_,t in p["sentences"]],"holds":(lambda mm: bool(mm) and any(mm.group(1)==lf and not (int(mm.group(3))<la or int(mm.group(2))>lb) for lf,la,lb in lines) and any(rpp.located_sentence(t,tri) for _,_,t in p["sentences"]))(re.match(r"(\S+?):(\d+)-(\d+)",p["title"]))} for p in ranked]})
                row.update(top3=top3,found=found,held=pool_has_sentence,place=best,
                           listed=any(rpp.located_sentence(x,tri) for x in picks[k-1]) if k-1<len(picks) else None)
            res.append(row)
            print(json.dumps(row),flush=True)
json.dump(res,open(f"{out}/rows.json","w"))
json.dump(POOLS,open(f"{out}/pools.json","w"))
