#!/bin/bash
# direnv and Hatch, 8 questions each, A = words alone (embeddings = "off"), B = the built-in encoder
# (all-MiniLM-L6-v2 in the data dir), both /work/bin/patchwise-E, the real model on 127.0.0.1:8088;
# A then B on odd questions, B then A on even ones.
set -u
B=/work/main/scripts/bench
O=/tmp/e2e; mkdir -p $O
for c in direnv hatch; do
  mkdir -p $O/B-state-$c/data/patchwise/models
  ln -sf /tmp/mine/all-MiniLM-L6-v2-Q8_0.gguf $O/B-state-$c/data/patchwise/models/all-MiniLM-L6-v2-Q8_0.gguf
done
run() { # arm corpus n
  local extra=()
  [ "$1" = A ] && extra=(--research 'embeddings="off"')
  $B/research-questions --binary /work/bin/patchwise-E --workspace /work/corpora/$2 \
    --questions $B/research-questions-$2.json --base-url http://127.0.0.1:8088/v1 --model qwen2.5-coder-1.5b \
    --state $O/$1-state-$2 --out $O/$2-$1.jsonl --citations $O/$2-$1-citations.jsonl --record $O/$2-$1-rec \
    --only $3-$3 "${extra[@]}" > $O/$2-$1-$3.log 2>&1
}
for c in direnv hatch; do
  for n in 1 2 3 4 5 6 7 8; do
    if [ $((n % 2)) = 1 ]; then run A $c $n; run B $c $n; else run B $c $n; run A $c $n; fi
    echo "$c $n done $(date +%T)"
  done
done
