import os
import json,re,sys,math,glob,os
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)),'2026-12-02-pick-trial-choose.py')).read().split("def main():")[0])
STOP=set("a an the to of in on for and or is are be it i my me how do does what which when why can with this that from by as at not no if so you your we our there their its use using get set want should would will into out up about any all have has was were than then them they just also only still need".split())
def stem(w): 
    w=w.lower().strip("`'\".,:;()[]{}!?*")
    for suf in ("ing","ed","es","s"):
        if len(w)>4 and w.endswith(suf): return w[:-len(suf)]
    return w
def words(t): return [stem(w) for w in re.findall(r"[A-Za-z0-9_\-.$~*/{}+]+",t) if stem(w) and stem(w) not in STOP and len(stem(w))>1]
def rank(q,sents):
    N=len(sents); df={}
    for s in sents:
        for w in set(words(s)): df[w]=df.get(w,0)+1
    qw=set(words(q)); tot=sum(math.log(1+N/df.get(w,0.5)) for w in qw) or 1
    sc=[(sum(math.log(1+N/df[w]) for w in qw if w in set(words(s)))/tot, -i, s) for i,s in enumerate(sents)]
    return [s for _,_,s in sorted(sc,reverse=True)]
def sents_of(passages):
    out=[]
    for p,f,head,lines in passages:
        incode=False
        for l in lines:
            if l.startswith("```"): incode=not incode; continue
            if incode or len(norm(l))<3: continue
            out.append(l)
    return out
if __name__=="__main__":
    tot=top1=top3=top8=sh=0
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
                ss=sents_of(ps); r=rank(qt,ss); tot+=1; s=any(hit(x,L) for x in ss); sh+=s
                top1+=any(hit(x,L) for x in r[:1]); top3+=any(hit(x,L) for x in r[:3]); top8+=any(hit(x,L) for x in r[:8])
    print("parts",tot,"shown",sh,"lexical top1",top1,"top3",top3,"top8",top8)
