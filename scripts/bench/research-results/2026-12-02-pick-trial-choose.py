"""Trial (2026-12-02): the targeted pass's quote prompt of 1f3d18c ("copy") against asking for
numbers over the same passages, every sentence numbered ("choose": the instruction's example
"(4) (7)"; v2/v3: no example, up to three or one). Scored without reading: a sentence is on the
located answer when 60 % of its word trigrams are the part's located lines
(research-answers-NAME.md). The prompts are those the binary records with a stand-in model:

    scripts/bench/research-questions --binary BIN --workspace /work/corpora/NAME \
        --questions scripts/bench/research-questions-NAME.json --base-url STUB --model m \
        --state /tmp/st-NAME --out /tmp/rec/NAME.jsonl --record /tmp/rec/NAME
    python3 2026-12-02-pick-trial-choose.py fzf,black,uvicorn,just copy,choose,v2,v3 OUT.jsonl

(STUB answers every call alike, as research-part-prompts' does; the real model on 127.0.0.1:8088.)
2026-12-02-pick-trial-ranked.py asks over the eight sentences the word ranking puts first
(2026-12-02-pick-trial-lex.py, its first alone without a model)."""
import json,re,sys,os,glob,urllib.request,time,random
sys.path.insert(0,'/work/main/scripts/bench')
import importlib.util
spec=importlib.util.spec_from_loader('rpp',loader=None); rpp=importlib.util.module_from_spec(spec); rpp.__dict__['__file__']='/work/main/scripts/bench/research-part-prompts'
exec(open('/work/main/scripts/bench/research-part-prompts').read().replace('if __name__ == "__main__":\n    main()',''),rpp.__dict__)
URL="http://127.0.0.1:8088/v1/chat/completions"
def chat(system,user,max_tokens=160):
    body={"model":"qwen2.5-coder-1.5b","messages":[{"role":"system","content":system},{"role":"user","content":user}],"temperature":0.0,"max_tokens":max_tokens}
    t=time.time()
    r=json.load(urllib.request.urlopen(urllib.request.Request(URL,json.dumps(body).encode(),{"content-type":"application/json"}),timeout=600))
    return r["choices"][0]["message"]["content"],time.time()-t,r.get("usage",{})
def norm(s):
    s=re.sub(r"\[([^\]]*)\](\([^)]*\)|\[[^\]]*\])",r"\1",s); s=re.sub(r"</?kbd>","",s)
    return re.findall(r"[a-z0-9_\-.$~*/{}+]+",s.lower())
def grams(ws): return {tuple(ws[i:i+3]) for i in range(max(1,len(ws)-2))}
def located_text(corpus,lines):
    out=[]
    for f,a,b in lines:
        t=open(os.path.join(corpus,f),encoding="utf-8",errors="replace").read().split("\n")
        out+= [re.sub(r"^(?:[-*+>]|\d{1,3}[.)])\s+","",x.strip()) for x in t[a-1:b]]
    return grams(norm(" ".join(out)))
def hit(sentence,loc):
    g=grams(norm(sentence))
    return len(g)>=2 and len(g&loc)/len(g)>=0.6
def parse_prompt(user):
    q=user.split("\n")[0][len("Question: "):]
    body=user.split("\n\nPassages:\n\n",1)[1].rsplit("\n\nQuestion: ",1)[0]
    passages=[]
    for block in re.split(r"\n(?=\[\d+\] )",body):
        m=re.match(r"\[(\d+)\] (\S+?):(\d+)-(\d+)(?: — ([^\n]*))?\n(.*)",block,re.S)
        if m: passages.append((int(m.group(1)),m.group(2),m.group(5) or "",m.group(6).strip("\n").split("\n")))
    return q,passages
SYS_CHOOSE=("You pick the sentences of documentation that answer a question. The sentences are numbered like (4). "
 "Reply with the numbers of the sentences that answer the question, best first, at most three, like: (4) (7). "
 "If no sentence answers it, reply (0). Write nothing else.")
VARIANTS={
 "v2":("You pick the sentences of documentation that answer a question. Each sentence has its number in parentheses before it. "
 "Reply with the numbers of the sentences that answer the question, best first, at most three, each in parentheses. "
 "If no sentence answers it, reply (0). Write nothing else."),
 "v3":("You pick the sentence of documentation that answers a question. Each sentence has its number in parentheses before it. "
 "Reply with the number of the one sentence that best answers the question, in parentheses. "
 "If no sentence answers it, reply (0). Write nothing else."),
}
def choose_prompt(q,passages):
    out=[];num={};n=0
    for p,f,head,lines in passages:
        out.append(f"\n{f} — {head}" if head else f"\n{f}")
        incode=False
        for l in lines:
            if l.startswith("```"): incode=not incode; out.append(l); continue
            if incode or len(norm(l))<3: out.append(l); continue
            n+=1; num[n]=l; out.append(f"({n}) {l}")
    user=f"Question: {q}\n\nSentences:\n"+"\n".join(out).strip("\n")+f"\n\nQuestion: {q}\n\nThe numbers of the sentences that answer it:"
    return user,num
def main():
    corpora=sys.argv[1].split(","); arms=sys.argv[2].split(","); out=open(sys.argv[3],"a")
    for c in corpora:
        loc=rpp.located(f"/work/main/scripts/bench/research-answers-{c}.md")
        rows={r["n"]:r for r in map(json.loads,open(f"/tmp/rec/{c}.jsonl"))}
        for q,parts in loc.items():
            calls=[]
            for f in sorted(glob.glob(f"/tmp/rec/{c}/q{q:02d}*.request.json"),key=lambda f:int(m.group(1)) if (m:=re.search(r"call(\d+)",f)) else 1):
                d=json.load(open(f))
                if d["messages"][0]["content"].startswith("You answer a question by quoting"): calls.append(d)
            split=len(rows[q].get("parts",[]))
            if not (split==len(parts)==len(calls)): continue
            for k,lines in parts.items():
                d=calls[k-1]; L=located_text(f"/work/corpora/{c}",lines)
                qtext,passages=parse_prompt(d["messages"][-1]["content"])
                shown=any(hit(l,L) for _,_,_,ls in passages for l in ls)
                rec={"corpus":c,"q":q,"part":k,"shown":shown}
                if "copy" in arms:
                    text,dt,u=chat(d["messages"][0]["content"],d["messages"][-1]["content"])
                    lines_out=[re.sub(r"\s*\[\d+\]\s*$","",x).strip() for x in text.split("\n") if x.strip()]
                    rec["copy"]={"text":text,"secs":round(dt,1),"hits":[hit(x,L) for x in lines_out],"usage":u}
                for arm,system in VARIANTS.items():
                    if arm not in arms: continue
                    user,num=choose_prompt(qtext,passages)
                    text,dt,u=chat(system,user,max_tokens=24)
                    picked=[int(x) for x in re.findall(r"\d+",text) if int(x) in num][:3]
                    rec[arm]={"text":text,"secs":round(dt,1),"picked":[num[i] for i in picked],"hits":[hit(num[i],L) for i in picked],"n":len(num),"usage":u}
                if "choose" in arms:
                    user,num=choose_prompt(qtext,passages)
                    text,dt,u=chat(SYS_CHOOSE,user,max_tokens=24)
                    picked=[int(x) for x in re.findall(r"\d+",text) if int(x) in num][:3]
                    rec["choose"]={"text":text,"secs":round(dt,1),"picked":[num[i] for i in picked],"hits":[hit(num[i],L) for i in picked],"n":len(num),"usage":u}
                out.write(json.dumps(rec)+"\n"); out.flush()
                print(c,q,k,"shown",shown,{a:(rec[a]["text"][:20],rec[a]["hits"],rec[a]["secs"]) for a in arms if a in rec},flush=True)
main()
