#!/bin/bash
# chezmoi's user guide and Typer's docs (corpora new to these measures), 8 three-part questions
# each, I = 16c80ba (before the quotes' context) and J = 03250a9 (a lead-in with its list or table,
# a sentence that reads on with its paragraph, a passage's sentences in its order), both with the
# built-in encoder in the data dir and nothing else configured, the real model on 127.0.0.1:8088
# (`patchwise model serve`, Qwen2.5-Coder-1.5B Q4_K_M, 2 threads, 8k context); I then J on odd
# questions, J then I on even ones (CORPORA='direnv hatch' reruns the two corpora the change was
# made on). ENCODER is the all-MiniLM-L6-v2 GGUF (scripts/bench/minilm-gguf). ARMS='J K' compares
# two other builds (/work/bin/patchwise-ARM each), the first of them first on odd questions.
set -u
B=/work/main/scripts/bench
O=${OUT:-/work/run/e2e}; mkdir -p $O
for arm in ${ARMS:-I J}; do for c in chezmoi typer direnv hatch; do
  mkdir -p $O/$arm-state-$c/data/patchwise/models
  ln -sf "$ENCODER" $O/$arm-state-$c/data/patchwise/models/all-MiniLM-L6-v2-Q8_0.gguf
done; done
run() { # arm corpus n
  $B/research-questions --binary /work/bin/patchwise-$1 --workspace /work/corpora/$2 \
    --questions $B/research-questions-$2.json --base-url http://127.0.0.1:8088/v1 --model qwen2.5-coder-1.5b \
    --state $O/$1-state-$2 --out $O/$2-$1.jsonl --citations $O/$2-$1-citations.jsonl --record $O/$2-$1-rec \
    --reports $O/$2-$1-reports --only $3-$3 > $O/$2-$1-$3.log 2>&1
}
for c in ${CORPORA:-chezmoi typer}; do
  for n in 1 2 3 4 5 6 7 8; do
    set -- ${ARMS:-I J}
    if [ $((n % 2)) = 1 ]; then run $1 $c $n; run $2 $c $n; else run $2 $c $n; run $1 $c $n; fi
    echo "$c $n done $(date +%T)"
  done
done
