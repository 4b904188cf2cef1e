import json,re,glob
STOP=set('the a an and or of to in is are be do does i my we our it its this that how what which why can could would should will with for on at by from as not no if then than so just me you your there their into out up about also only'.split())
def stem(w): return re.sub(r'(ing|ed|es|s)$','',w)
def ws(s): return [stem(w) for w in re.findall(r'[a-z0-9_]+', s.lower()) if w not in STOP and len(w)>2]
def norm(s): return re.sub(r'\s+',' ',re.sub(r'[`*_]','',s.lower())).strip(' .:')
def reply(f):
    txt=open(f).read()
    return ''.join((ch.get('delta',{}).get('content') or '') for m in re.finditer(r'^data: (\{.*\})$', txt, re.M) for ch in json.loads(m.group(1)).get('choices',[]))
exact=share=dropped_near=dropped=0; samples=[]
for f in sorted(glob.glob('run/rec-*-Q/*.request.json')):
    r=json.load(open(f))
    if not r['messages'][0]['content'].startswith('You answer a question by quoting'): continue
    u=r['messages'][-1]['content']
    shown=[l.strip() for l in u.split('\n') if l.strip() and not re.match(r'^\[\d+\] \S+:\d+-\d+',l) and not l.startswith(('Question:','Copy the','Passages:'))]
    out=reply(f.replace('.request.json','.http'))
    inside=False
    for line in out.split('\n'):
        if line.strip().startswith('```'): inside=not inside; continue
        if inside: continue
        for p in re.split(r'(?<=[.!?])\s+(?=[A-Z`\[])', line):
            bare=re.sub(r'\[\d+(?:,\s*\d+)*\]','',p).strip()
            w=ws(bare)
            if len(w)<3: continue
            if any(norm(bare) and norm(bare) in norm(s) for s in shown) and len(bare.split())>=4: exact+=1; continue
            best=max(shown,key=lambda s:len(set(w)&set(ws(s)))/len(w))
            sh=len(set(w)&set(ws(best)))/len(w)
            if sh>=0.7: share+=1; samples.append(('MATCH %.2f'%sh,bare,best))
            elif sh>=0.5: dropped_near+=1; samples.append(('DROP %.2f'%sh,bare,best))
            else: dropped+=1
print('exact',exact,'by share',share,'dropped 0.5-0.7',dropped_near,'dropped <0.5',dropped)
for t,a,b in samples: print('\n'+t+'\n  piece: '+a[:220]+'\n  sent:  '+b[:220])
