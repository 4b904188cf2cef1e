"""Three FIM prompt layouts on the same holes: the cursor's line in the prefix (PSM), the cursor's
line after the middle token (llama.cpp /infill's prompt), and the suffix first (SPM).
  PW_FIM_URL=http://127.0.0.1:PORT/v1 python3 scripts/bench/completion/experiments/layouts.py FIRST LAST [HOLES]
(results of 2026-11-29 were on the old holes.json: requests, walkdir, ky)."""
import json, subprocess, sys, time, urllib.request, difflib, os
URL=os.environ.get("PW_FIM_URL", "http://127.0.0.1:8088/v1") + "/completions"
holes=json.load(open(sys.argv[3] if len(sys.argv) > 3 else 'scripts/bench/completion/holes.json'))
by={}
for h in holes: by.setdefault(h['language'],[]).append(h)
holes=[h for g in zip(*by.values()) for h in g][int(sys.argv[1]):int(sys.argv[2])]
def git(d,*a): return subprocess.run(["git","--git-dir",d,*a],capture_output=True,text=True,check=True).stdout
def ask(prompt):
    body={"model":"q","prompt":prompt,"max_tokens":48,"temperature":0,"stop":["<|endoftext|>","<|file_sep|>","<|fim_prefix|>","<|fim_suffix|>","<|fim_middle|>","\n"],"cache_prompt":True}
    t=time.time()
    r=json.load(urllib.request.urlopen(urllib.request.Request(URL,json.dumps(body).encode(),{"Content-Type":"application/json"}),timeout=300))
    return r["choices"][0]["text"], time.time()-t
tot={}
for n,h in enumerate(holes):
    text=git(f"/work/.mirror/{h['repo'].replace('/','+')}/repo","show",f"{h['commit']}:{h['path']}")
    lines=text.split("\n"); line=lines[h['line']]; indent=line[:len(line)-len(line.lstrip())]
    before="\n".join(lines[:h['line']])+"\n"; before=before[-1500:]; before=before[before.find("\n")+1:]
    after="\n"+"\n".join(lines[h['line']+1:]); after=after[:400]; after=after[:after.rfind("\n")+1]
    typed=indent+h['expected'][:3]; rest=h['expected'][3:]
    P,S,M="<|fim_prefix|>","<|fim_suffix|>","<|fim_middle|>"
    forms={"psm_line_in_prefix":P+before+typed+S+after+M,
           "psm_line_after_mid":P+before+S+after+M+typed,
           "spm_line_after_mid":S+after+P+before+M+typed}
    row={}
    for k,p in forms.items():
        got,dt=ask(p)
        if k!="psm_line_in_prefix": got=got  # text continues the typed part in all forms
        g=got.strip(); ex=g==rest.strip(); sim=difflib.SequenceMatcher(None,g,rest.strip()).ratio()
        t=tot.setdefault(k,[0,0,0]); t[0]+=ex; t[1]+=sim; t[2]+=dt
        row[k]=(ex,round(sim,2),round(dt,1))
    print(n,h['language'],row,flush=True)
for k,t in tot.items(): print(k,"exact",t[0],"sim",round(t[1]/len(holes),3),"time",round(t[2],1))
