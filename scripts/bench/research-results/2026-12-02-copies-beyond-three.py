import json,re,glob,math,sys,os
ns={'re':re}; src=open('/work/main/scripts/bench/research-part-prompts').read()
exec(src[src.index('def located'):src.index('\n\n\n', src.index('def located'))], ns); located=ns['located']
STOP=set('the a an and or of to in is are be do does i my we our it its this that how what which why can could would should will with for on at by from as not no if then than so just me you your there their into out up about also only'.split())
def stem(w): return re.sub(r'(ing|ed|es|s)$','',w)
def ws(s): return [stem(w) for w in re.findall(r'[a-z0-9_]+', s.lower()) if w not in STOP and len(w)>2]
def reply(f):
    txt=open(f).read()
    return ''.join((ch.get('delta',{}).get('content') or '') for m in re.finditer(r'^data: (\{.*\})$', txt, re.M) for ch in json.loads(m.group(1)).get('choices',[]))
tot=dict(calls=0, first3=0, best3=0, either=0)
for c in ['uvicorn','just']:
    loc=located(f'/work/main/scripts/bench/research-answers-{c}.md')
    for q in sorted(loc):
        fs=sorted(glob.glob(f'run/rec-{c}-Q/q{q:02d}*.request.json'), key=lambda p:(0 if '.call' not in p else int(re.search(r'call(\d+)',p).group(1))))
        calls=[f for f in fs if json.load(open(f))['messages'][0]['content'].startswith('You answer a question by quoting')]
        if len(calls)!=len(loc[q]): continue
        for pi,f in enumerate(calls,1):
            u=json.load(open(f))['messages'][-1]['content']
            part=re.match(r'Question: (.*?)\n\n',u,re.S).group(1)
            # sentences shown, with their passage's file and lines
            shown=[]; cur=None
            for line in u.split('\n'):
                m=re.match(r'^\[(\d+)\] (\S+?):(\d+)-(\d+)',line)
                if m: cur=(m.group(2),int(m.group(3)),int(m.group(4))); continue
                if cur and line.strip() and not line.startswith('Question:') and not line.startswith('Copy the'):
                    shown.append((line.strip(),cur))
            r=reply(f.replace('.request.json','.http'))
            pieces=[re.sub(r'\[\d+\]','',p).strip() for p in re.split(r'(?<=[.!?])\s+|\n', r)]
            pieces=[p for p in pieces if len(ws(p))>=3 and not p.startswith('```')]
            if len(pieces)<=3: continue
            def match(p):
                w=set(ws(p)); best=None
                for s,(fn,a,b) in shown:
                    sw=set(ws(s)); share=len(w&sw)/max(len(w),1)
                    if share>=0.7 and (best is None or share>best[0]): best=(share,s,fn)
                return best
            ms=[(p,match(p)) for p in pieces]; ms=[(p,m) for p,m in ms if m]
            text=open(f'/work/corpora/{c}/'+ms[0][1][2]).read().split('\n') if ms else []
            def on(s,fn):
                ft=open(f'/work/corpora/{c}/'+fn).read().split('\n')
                for lf,la,lb in loc[q][pi]:
                    if lf!=fn: continue
                    seg=' '.join(x.strip() for x in ft[la-1:lb])
                    seg=re.sub(r'\s+',' ',seg)
                    if s[:40] in seg or s[-40:] in seg: return True
                return False
            pw=set(ws(part))
            first3=[m for _,m in ms][:3]
            best3=sorted([m for _,m in ms], key=lambda m:-len(pw&set(ws(m[1]))))[:3]
            a=any(on(m[1],m[2]) for m in first3); b=any(on(m[1],m[2]) for m in best3); e=any(on(m[1],m[2]) for _,m in ms)
            tot['calls']+=1; tot['first3']+=a; tot['best3']+=b; tot['either']+=e
            print(c,q,pi,'copies',len(ms),'first3 on',a,'best3 on',b,'any copy on',e)
print(tot)
