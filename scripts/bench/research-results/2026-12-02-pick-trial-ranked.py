import os
import json,re,sys,glob
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)),'2026-12-02-pick-trial-lex.py')).read().split('if __name__')[0])
SYS1=("You pick the sentence of documentation that answers a question. Each sentence has its number in parentheses before it. "
 "Reply with the number of the one sentence that best answers the question, in parentheses. "
 "If no sentence answers it, reply (0). Write nothing else.")
SYS3=("You pick the sentences of documentation that answer a question. Each sentence has its number in parentheses before it. "
 "Reply with the numbers of the sentences that answer the question, best first, at most three, each in parentheses. "
 "If no sentence answers it, reply (0). Write nothing else.")
def sents_with_head(passages):
    out=[]
    for p,f,head,lines in passages:
        incode=False
        for l in lines:
            if l.startswith("```"): incode=not incode; continue
            if incode or len(norm(l))<3: continue
            out.append((l,head))
    return out
K=int(sys.argv[3]) if len(sys.argv)>3 else 8
out=open(sys.argv[2],"a")
for c in sys.argv[1].split(","):
    loc=rpp.located(f"/work/main/scripts/bench/research-answers-{c}.md")
    rows={r["n"]:r for r in map(json.loads,open(f"/tmp/rec/{c}.jsonl"))}
    for q,parts in loc.items():
        calls=[]
        for f in sorted(glob.glob(f"/tmp/rec/{c}/q{q:02d}*.request.json"),key=lambda f:int(m.group(1)) if (m:=re.search(r"call(\d+)",f)) else 1):
            d=json.load(open(f))
            if d["messages"][0]["content"].startswith("You answer a question by quoting"): calls.append(d)
        if not (len(rows[q].get("parts",[]))==len(parts)==len(calls)): continue
        for k,lines in parts.items():
            L=located_text(f"/work/corpora/{c}",lines); qt,ps=parse_prompt(calls[k-1]["messages"][-1]["content"])
            sh=sents_with_head(ps); heads=dict(sh); r=rank(qt,[s for s,_ in sh])[:K]
            rec={"corpus":c,"q":q,"part":k,"shown":any(hit(s,L) for s,_ in sh),"lex1":hit(r[0],L) if r else False,"lexK":any(hit(s,L) for s in r)}
            listing="\n".join(f"({i+1}) {s}" + (f"  — {heads[s]}" if heads.get(s) else "") for i,s in enumerate(r))
            user=f"Question: {qt}\n\nSentences:\n{listing}\n\nQuestion: {qt}\n\nThe number of the sentence that answers it:"
            for arm,system in (("one",SYS1),("three",SYS3)):
                text,dt,u=chat(system,user.replace("The number of the sentence that answers it:","The numbers of the sentences that answer it:") if arm=="three" else user,max_tokens=24)
                picked=[int(x) for x in re.findall(r"\d+",text) if 0<int(x)<=len(r)][:3]
                rec[arm]={"text":text,"secs":round(dt,1),"hits":[hit(r[i-1],L) for i in picked],"picked":picked}
            out.write(json.dumps(rec)+"\n"); out.flush()
            print(c,q,k,rec["shown"],"lex1",rec["lex1"],"lexK",rec["lexK"],{a:(rec[a]["text"][:16],rec[a]["hits"],rec[a]["secs"]) for a in ("one","three")},flush=True)
