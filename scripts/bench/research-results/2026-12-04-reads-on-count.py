#!/usr/bin/env python3
"""The 2026-12-04 check of the reads-on rules added to `extractive::reads_on` (a pronoun among
a sentence's first four words; "this example", "that case", "above") on texts nobody here wrote:
the Markdown of four corpora (direnv, Hatch, chezmoi's user guide, Typer's docs, as in
scripts/bench/research-corpora). A re-statement of the rules in Python over a rough sentence
split (code blocks, headings, tables and HTML left out), so its counts are of the rules, not of
the server's sentences. It prints how many sentences the new rules make read on that the old
ones did not, and writes a sample of 40 (seed 1) to read by hand (results beside).

  python3 2026-12-04-reads-on-count.py DIR/direnv DIR/hatch DIR/chezmoi DIR/typer
"""
import re, sys, glob, random, json
READS_ON="this that these those it its it's they their them such both also additionally furthermore moreover however otherwise instead similarly likewise alternatively then thus therefore hence so".split()
AFTER="in to for with when if on at by as is are was will can means allows does from instead".split()
EARLY="it its it's they them their".split()
BACK="example examples case cases snippet output".split()
bare=lambda w: re.sub(r"^[^\w']+|[^\w']+$","",w)
def old(s):
    ws=[w.lower() for w in s.split()]
    if ws and bare(ws[0]) in READS_ON: return True
    for i,w in enumerate(ws):
        if bare(w) in("this","these") and not w.startswith('`') and (w[-1] in ",.;:!?" or (i+1<len(ws) and bare(ws[i+1]) in AFTER)): return True
    return False
def new(s):
    ws=[w.lower() for w in s.split()]
    if any(not w.startswith(('`','-','$')) and bare(w) in EARLY for w in ws[:4]): return "early"
    for i,w in enumerate(ws):
        nx=bare(ws[i+1]) if i+1<len(ws) else ""; bf=bare(ws[i-1]) if i>0 else ""
        if bare(w) in("this","that","these","those") and nx in BACK: return "back"
        if bare(w)=="above" and bf not in("and","or"): return "above"
    return None
rows=[]; total=0
for c in sys.argv[1:]:
    for f in sorted(glob.glob(f"{c}/**/*.md",recursive=True)):
        text=open(f).read(); text=re.sub(r"```.*?```","",text,flags=re.S)
        paras=[p for p in re.split(r"\n\s*\n",text) if p.strip() and not p.lstrip().startswith(("#","|","<","---","==="))]
        for pi,p in enumerate(paras):
            p=" ".join(l.strip().lstrip("-*+ ") for l in p.splitlines())
            sents=re.split(r"(?<=[.!?])\s+(?=[A-Z`\"])",p)
            for si,s in enumerate(sents):
                if len(s.split())<4: continue
                total+=1
                if old(s): continue
                k=new(s)
                if k: rows.append(dict(c=c,f=f[len(c)+1:],kind=k,opens=si==0,s=s[:200],before=(sents[si-1] if si else paras[pi-1][-200:] if pi else "")[-200:]))
print("sentences",total,"newly reading on",len(rows),{k:sum(r["kind"]==k for r in rows) for k in("early","back","above")},"opening their paragraph",sum(r["opens"] for r in rows))
random.seed(1); json.dump(random.sample(rows,min(40,len(rows))),open("reads-on-sample.json","w"),indent=1)
