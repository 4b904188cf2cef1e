import json,glob,time,urllib.request,random,sys
SYS_PART = ("You answer one question using ONLY the numbered passages you are given. "
"After every sentence, write the number of the passage it comes from in square brackets, like [1] "
"or [2][3]. Use only numbers from the list; never invent passages, files or numbers. If the "
"passages do not answer the question, say so. Write 1 to 3 plain sentences: no headings, no lists.\n\n"
"Example of the form (for a question about baking; never copy it):\n"
"The oven is preheated to 220 degrees before the first batch [2]. Each loaf rests for ten minutes "
"after baking [1][3].")
files=[]
for c in ['uvicorn','just']:
    files+= [f for f in sorted(glob.glob(f'/work/tmp40/run/rec-{c}-R/*.request.json')) if json.load(open(f))['max_tokens']==160]
random.seed(7); random.shuffle(files); files=files[:int(sys.argv[1])]
out=open('/work/tmp41/sysprompt.jsonl','a')
for f in files:
    req=json.load(open(f))
    for variant in ['orig','part']:
        r=dict(req); r['stream']=False; r.pop('stream_options',None)
        if variant=='part':
            r['messages']=[dict(req['messages'][0],content=SYS_PART)]+req['messages'][1:]
        t=time.time()
        resp=json.load(urllib.request.urlopen(urllib.request.Request('http://127.0.0.1:8088/v1/chat/completions',json.dumps(r).encode(),{'content-type':'application/json'}),timeout=300))
        dt=time.time()-t
        row={'file':f,'variant':variant,'secs':round(dt,1),'usage':resp.get('usage'),'finish':resp['choices'][0]['finish_reason'],'text':resp['choices'][0]['message']['content']}
        out.write(json.dumps(row)+'\n'); out.flush()
        print(variant, f.split('/')[-2:], row['secs'], row['usage'], row['finish'])
