#!/usr/bin/env python3
"""A record of the 2026-12-05 trial of a pick that names most of the list (docs/research.md,
"A pick that names most of the list"). Inputs as they were on the engineer's machine: a
recording proxy (/work/run/proxy.py) between B4 (8206473) and the model wrote every chat
request and its streamed reply to /work/run/proxy/log.jsonl (compacted here as
2026-12-05-pick-replies-B4.jsonl), B4's rows per corpus (here 2026-12-05-proxy-B4-*.jsonl) and
58ce19e's over the 18 questions holding such parts (2026-12-05-many-named-B5.jsonl). For each
part split as located: the listed sentences, the numbers named, which are located (60 % of word
trigrams), what B4 printed, what the model's order would print (its first named's passage, at
most three) and what B5 printed.
"""
import json,re,importlib.machinery,importlib.util,collections,sys
HERE="/work/main/scripts/bench"
loader=importlib.machinery.SourceFileLoader("rpp",f"{HERE}/research-part-prompts")
spec=importlib.util.spec_from_loader("rpp",loader); rpp=importlib.util.module_from_spec(spec); loader.exec_module(rpp)
calls=[json.loads(l) for l in open('/work/run/proxy/log.jsonl')]
marks=open('/work/run/proxy/log.jsonl.marks').read().split()
# parse marks: "==", name, count
toks=open('/work/run/proxy/log.jsonl.marks').read().split('\n')
seg=[];prev=0;cur=None
for t in toks:
    if t.startswith('== '): cur=t[3:]
    elif t.strip().isdigit(): seg.append((cur,prev,int(t))); prev=int(t)
def reply(r):
    out=''
    for line in r['resp'].splitlines():
        if line.startswith('data: ') and line[6:].strip()!='[DONE]':
            try: out+=json.loads(line[6:])['choices'][0]['delta'].get('content') or ''
            except Exception: pass
    return out
stats=collections.Counter()
for name,a,b in seg:
    qs=json.load(open(f"{HERE}/research-questions-{name}.json"))
    loc=rpp.located(f"{HERE}/research-answers-{name}.md")
    rows=[json.loads(l) for l in open(f'/work/run/proxy/{name}.jsonl')]
    corpus=f"/work/corpora/{name}"
    byq=collections.defaultdict(list)
    for r in calls[a:b]:
        u=r['req']['messages'][-1]['content']
        if 'The numbers of the sentences' not in u: continue
        part=re.search(r"^Question: (.*)$",u,re.M).group(1)
        W=lambda t:set(re.findall(r"[a-z0-9]+",t.lower()))
        q=max(range(len(qs)),key=lambda i:len(W(part)&W(qs[i]['question']))/max(1,len(W(part))))+1
        listed=[m.group(1) for m in re.finditer(r"^\((\d+)\) (.*?)(?:  \u2014 [^\n]*)?$",u,re.M)]
        listed=[m.group(2) for m in re.finditer(r"^\((\d+)\) (.*?)(?:  \u2014 [^\n]*)?$",u,re.M)]
        secs=[m.group(3) for m in re.finditer(r"^\((\d+)\) (.*?)(?:  \u2014 ([^\n]*))?$",u,re.M)]
        nums=[int(x) for x in re.findall(r"\((\d+)\)",reply(r))]
        byq[q].append((part,listed,nums,secs))
    for q,cs in byq.items():
        parts=loc.get(q,{})
        if len(cs)!=len(parts): stats['unaligned']+=len(parts); continue
        syn=rows[q-1]['synthesis']
        for k,(part,listed,nums,secs) in enumerate(cs,1):
            tri=rpp.located_trigrams(corpus,parts[k])
            hits=[rpp.located_sentence(s,tri) for s in listed]
            nums=[n for n in nums if 1<=n<=len(listed)]
            many=len(nums)>len(listed)/2
            key='many' if many else 'few'
            stats[key]+=1
            # B4 printed first: earliest listed sentence in the part's section
            h='**'+part.strip()+'**'
            sec=syn[syn.find(h):] if h in syn else syn
            nxt=sec.find('\n**',len(h))
            sec=sec[:nxt] if nxt>0 else sec
            pos=[(sec.find(s[:60]),i) for i,s in enumerate(listed) if s[:60] in sec]
            pos.sort()
            printed_first = pos[0][1] if pos else None
            stats[key,'B4 first hit']+= printed_first is not None and hits[printed_first]
            stats[key,'model first hit']+= bool(nums) and hits[nums[0]-1]
            printed=[i for i,x in enumerate(listed) if x[:60] in sec]
            stats[key,'B4 any printed hit']+= any(hits[i] for i in printed)
            import os
            f5=f'/work/run/proxy/B5-{name}-{q}.jsonl'
            if os.path.exists(f5) and os.path.getsize(f5)>0:
                syn5=json.loads(open(f5).readline())['synthesis']
                sec5=syn5[syn5.find(h):] if h in syn5 else syn5
                nx=sec5.find('\n**',len(h)); sec5=sec5[:nx] if nx>0 else sec5
                p5=[i for i,x in enumerate(listed) if x[:60] in sec5]
                b4=any(hits[i] for i in printed); b5=any(hits[i] for i in p5)
                stats[key,'B5 n']+=1; stats[key,'B5 any printed hit']+=b5; stats[key,'B4 same parts hit']+=b4
                if b4!=b5: print('DIFF',name,q,k,'B4',b4,'B5',b5)
            if nums:
                f=nums[0]-1
                same=[n-1 for n in nums if secs[n-1]==secs[f]][:3]
                stats[key,'model-order passage any hit']+= any(hits[i] for i in same)
            stats[key,'list-order first named hit']+= bool(nums) and hits[sorted(nums)[0]-1]
            stats[key,'any listed hit']+=any(hits)
            if many: print(name,q,k,'named',nums,'hits',[i+1 for i,x in enumerate(hits) if x],'B4first',None if printed_first is None else printed_first+1)
for k in sorted(stats,key=str): print(k,stats[k])
