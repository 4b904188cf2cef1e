import json,glob,re,sys,urllib.request,time,os
exec('def located'+open('/work/main/scripts/bench/research-part-prompts').read().split('def located')[1].split('def prompts')[0])
W=lambda t:set(re.findall(r'[a-z0-9]{3,}',t.lower()))
def reply_of(f):
    out=''
    for l in open(f).read().splitlines():
        if l.startswith('data: {'):
            d=json.loads(l[6:])
            for ch in d.get('choices',[]): out+=ch.get('delta',{}).get('content') or ''
    return out
def variant(u,v):
    q=u.split('\n')[0][10:]
    head,tail=u.rsplit('\n\nQuestion: ',1)
    if v=='v1':
        return head+'\n\nCopy the sentences of the passages above that answer the question, word for word, each followed by its passage number, like [2].'
    if v=='v2':
        return head+f'\n\nQuestion: {q}\n\nCopy the sentences of the passages that answer this question (from the passages, not the question), word for word, each followed by its passage number, like [2].'
    return u
def echo(r,q):
    return any(len(W(l)&W(q))>=0.6*len(W(q)) and len(W(q))>3 for l in r.split('\n') if l.strip())
def hits(r,c,L):
    lines=[]
    for pk,spans in L.items():
        for f,a,b in spans:
            t=open(f'/work/corpora/{c}/{f}').read().split('\n')
            lines+= [x for x in t[a-1:b] if len(W(x))>=3]
    n=0
    for l in r.split('\n'):
        w=W(re.sub(r'\[\d+\]','',l))
        if len(w)<3: continue
        if any(len(w&W(x))>=0.7*len(w) for x in lines): n+=1
    return n
v=sys.argv[1]; out=open(f'/work/run/trial-{v}.jsonl','a')
for c in ['fzf','black']:
    L=located(f'/work/main/scripts/bench/research-answers-{c}.md')
    for f in sorted(glob.glob(f'/work/run/rec-{c}-B/*.request.json')):
        req=json.load(open(f)); u=req['messages'][-1]['content']
        if not u.startswith('Question: '): continue
        qn=int(re.search(r'q(\d+)',f).group(1)); q=u.split('\n')[0][10:]
        if v=='v0':
            r=reply_of(f.replace('.request.json','.http'))
        else:
            body={'model':'qwen2.5-coder-1.5b','messages':[req['messages'][0],{'role':'user','content':variant(u,v)}],'temperature':0,'max_tokens':160}
            t=time.time()
            r=json.load(urllib.request.urlopen(urllib.request.Request('http://127.0.0.1:8088/v1/chat/completions',json.dumps(body).encode(),{'content-type':'application/json'}),timeout=300))['choices'][0]['message']['content']
        row=dict(c=c,q=qn,call=os.path.basename(f),echo=echo(r,q),hits=hits(r,c,L.get(qn,{})),reply=r[:400])
        out.write(json.dumps(row)+'\n'); out.flush()
