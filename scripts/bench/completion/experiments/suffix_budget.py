"""How much text after the cursor a FIM prompt should show: the same holes with 768, 192 and 0
bytes after the cursor (1,000-token prefix, 3 typed characters), exact match of the first line.
  PW_FIM_URL=http://127.0.0.1:PORT/v1 python3 scripts/bench/completion/experiments/suffix_budget.py N STEP [HOLES]
(N holes, every STEP-th; the files from /work/.mirror as bench.py reads them). The run of 2026-11-29
(`results/2026-11-29-suffix-budget.txt`: 40 4) was on an earlier cut: 170 holes, before ripgrep was
added and docstrings skipped."""
import json, os, subprocess, urllib.request, sys, difflib, time
URL=os.environ.get("PW_FIM_URL", "http://127.0.0.1:8091/v1") + "/completions"
holes=json.load(open(sys.argv[3] if len(sys.argv) > 3 else 'scripts/bench/completion/holes.json'))
def git(d,*a): return subprocess.run(["git","--git-dir",d,*a],capture_output=True,text=True,check=True).stdout
def ask(prompt):
    body={"model":"q","prompt":prompt,"max_tokens":40,"temperature":0,"stop":["<|endoftext|>","<|file_sep|>","<|fim_prefix|>","<|fim_suffix|>","<|fim_middle|>","\n"]}
    t=time.time()
    r=json.load(urllib.request.urlopen(urllib.request.Request(URL,json.dumps(body).encode(),{"Content-Type":"application/json"}),timeout=300))
    return r["choices"][0]["text"], r["timings"]["prompt_n"], time.time()-t
SIZES=[768,192,0]
tot={k:[0,0.0,0,0.0] for k in SIZES}
sel=holes[::int(sys.argv[2])][:int(sys.argv[1])]
for h in sel:
    text=git(f"/work/.mirror/{h['repo'].replace('/','+')}/repo","show",f"{h['commit']}:{h['path']}")
    lines=text.split("\n"); line=lines[h['line']]; indent=line[:len(line)-len(line.lstrip())]
    before="\n".join(lines[:h['line']])+"\n"; before=before[-3072:]; before=before[before.find("\n")+1:]
    after="\n"+"\n".join(lines[h['line']+1:])
    P,S,M="<|fim_prefix|>","<|fim_suffix|>","<|fim_middle|>"
    rest=h['expected'][3:].strip()
    row=[]
    for k in SIZES:
        a=after[:k]; a=a[:a.rfind("\n")+1] if k else ""
        got,n,dt=ask(P+before+indent+h['expected'][:3]+S+a+M)
        g=got.strip(); t=tot[k]; t[0]+=g==rest; t[1]+=difflib.SequenceMatcher(None,g,rest).ratio(); t[2]+=n; t[3]+=dt
        row.append((k,g==rest,n,round(dt,1)))
    print(row, flush=True)
for k,t in tot.items(): print("suffix bytes",k,"exact",t[0],"/",len(sel),"sim %.3f"%(t[1]/len(sel)),"evaluated/req %.0f"%(t[2]/len(sel)),"s/req %.1f"%(t[3]/len(sel)))
