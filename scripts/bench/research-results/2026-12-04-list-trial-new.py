#!/usr/bin/env python3
"""The 2026-12-03 list trial (2026-12-03-list-trial.py) again over two corpora it never saw,
Typer's docs and chezmoi's user guide (docs/research.md, "Sentences picked by number"). Steps:
  1. ENCODER=<all-MiniLM-L6-v2-Q8_0.gguf> 2026-12-02-place-trial-collect.py BIN /work/corpora typer,chezmoi $TRIAL_DIR/data.json
     (BIN: the build measured; a stand-in model, so every part gets its targeted pass)
  2. TRIAL_DIR=… MINILM=… this script [--ask] [listing names]: as list-trial.py, with the pick
     prompt's system message read from src/research/synthesis.rs (PICK_SYSTEM) instead of a
     recorded call. The model's replies are cached in $TRIAL_DIR/replies.json
     (2026-12-04-list-trial-new-replies.json is this trial's).
Results: 2026-12-04-list-trial-new-results.txt.
"""
import importlib.machinery, os, re, sys
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TRIAL_DIR", "/tmp/list2")
lt = importlib.machinery.SourceFileLoader("lt", f"{HERE}/2026-12-03-list-trial.py").load_module()

def pick_system():
    src = open(f"{HERE}/../../../src/research/synthesis.rs").read()
    m = re.search(r'pub const PICK_SYSTEM: &str = "(.*?)";', src, re.S)
    return re.sub(r"\\\n\s*", "", m.group(1))

lt.pick_system = pick_system
if __name__ == "__main__":
    lt.main()
    lt.pickle.dump(lt.mt.cache, open(lt.mt.CACHE, "wb"))
