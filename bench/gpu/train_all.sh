#!/usr/bin/env bash
# The GPU training run of issues 27 and 32, as one prepared script for a lent GPU machine (DEVICE tool: about 15
# minutes in all). Usage, in the repository root, after `python bench/gpu/prepare_carry.py` here:
#   device run, carry [".gpu"]:  bash bench/gpu/train_all.sh full JOBS     (JOBS: comma list, default all)
#   here, to test it at tiny size on the CPU:  PY=.venv/bin/python DEVICE=cpu OUT=/tmp/o bash bench/gpu/train_all.sh smoke
# Jobs: quest-dense (the dual encoder), quest-classifier (the paper's recipe),
# dhr (LoRA document and passage encoders on the 18 training articles), cos (Chain-of-Skills on every training set).
# Every job has a wall budget and runs even when another failed; models and logs come back as tar files in $OUT.
set -u
MODE=${1:-full}
JOBS=${2:-quest-dense,quest-classifier,dhr,cos}
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:?set OUT}
W=${WORK:-/tmp/sleuth-gpu}
DATA=../shared/data
mkdir -p "$W/models" "$W/logs" "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 SLEUTH_HOME="$W/home" TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1

# faiss-cpu (30 MB) does not travel: training needs no vector index; a stub makes any use fail loudly
mkdir -p /tmp/stubs/faiss && echo 'def __getattr__(name): raise ImportError("faiss is not installed on this machine")' > /tmp/stubs/faiss/__init__.py
if [ "$MODE" = full ]; then
  S() { echo "$2"; }  # full size
  if [ ! -d /tmp/site/mwparserfromhell ]; then
    rm -rf /tmp/stubs/mwparserfromhell; $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 1
    $PY bench/gpu/unpack_minilm.py .gpu/minilm /tmp/site || exit 1
  fi
  for archive in .gpu/data-*.tar.xz; do mkdir -p "$DATA" && tar xJf "$archive" -C "$DATA" || exit 1; done
  export PYTHONPATH=$PWD:/tmp/site:/tmp/stubs
  nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader
  $PY -c "import torch, transformers, sentence_transformers, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'st', sentence_transformers.__version__, 'peft', peft.__version__, torch.cuda.get_device_name(0))"
else
  S() { echo "$1"; }  # smoke size
  export PYTHONPATH=$PWD:/tmp/stubs
fi

job() {  # job NAME SECONDS COMMAND...: run with a hard wall limit, log, report the exit status
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  echo "== $name (limit ${limit}s): $*"
  timeout --kill-after=10 "$limit" "$@" > "$W/logs/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - start)) s"; grep -v "Warning\|warn(" "$W/logs/$name.log" | tail -4
  # bring back at once (a later job may outrun the call): the model (at most 16 MiB per file) and the logs so far
  [ -e "$W/models/$name" ] && (cd "$W/models" && tar czf "$OUT/$name.tgz" "$name"*)
  (cd "$W" && tar czf "$OUT/logs.tgz" logs)
}
wants() { [[ ",$JOBS," == *",$1,"* ]]; }

[ -f "$W/proxy.jsonl" ] || $PY -m sleuth quest corpus $DATA/quest/train.jsonl $DATA/quest/val.jsonl --out "$W/proxy.jsonl"

if wants quest-dense; then
  for epochs in $(S "1" "8"); do
    job quest-dense-e$epochs $(S 300 120) $PY -m sleuth quest train-dense --examples $DATA/quest/train.jsonl \
      --documents "$W/proxy.jsonl" --out "$W/models/quest-dense-e$epochs" --lora-rank 16 --batch-size $(S 8 64) \
      --epochs $epochs $(S "--max-steps 2" "") --lr 5e-4 --hard-negatives 1 --max-minutes $(S 3 0.9) --seed 0 --device $DEVICE
  done
fi
if wants quest-classifier; then
  job quest-classifier $(S 600 260) $PY -m sleuth quest train --examples $DATA/quest/train.jsonl --documents "$W/proxy.jsonl" \
    --tune-examples $DATA/quest/val.jsonl --domain films --domain books --tune-queries $(S 3 182) --tune-retriever bm25 \
    --candidates $(S 10 100) --expand-depth $(S 2 10) --batch-size $(S 8 128) $(S "--max-steps 2" "") --lora-rank 16 \
    --max-length 256 --learning-rate 5e-4 --seed 0 --device $DEVICE --max-minutes $(S 3 2.3) \
    --out "$W/models/quest-classifier" --save-runs "$W/models/quest-classifier-val-runs.json"
fi
if wants dhr; then
  job dhr-lora $(S 600 180) $PY -m sleuth dhr train --corpus $DATA/squad2/dev-v2.0.json \
    --distractors $DATA/squad2/train-v2.0-10articles.json --distractors $DATA/nq/corpus.jsonl \
    --questions $DATA/squad2/dev-v2.0.json --questions $DATA/squad2/train-v2.0-10articles.json \
    --train-articles docs/dhr/train-articles-18.txt --out "$W/models/dhr-lora" --rounds 1 --epochs $(S 1 3) \
    $(S "--steps 2" "") --batch-size $(S 4 32) --lora-rank 16 --lr 5e-4 --passage-negatives in-doc=2 \
    --passage-negatives bm25=1 --document-negatives abstract=1 --no-index --dev-fraction 0.05 --seed 13 \
    --max-minutes $(S 3 0.7) --device $DEVICE
fi
if wants cos; then
  job cos-lora $(S 900 200) $PY -m sleuth cos train --device $DEVICE --out "$W/models/cos-lora" \
    --hotpotqa $DATA/hotpotqa/hotpot_train_100.json --hotpotqa-corpus $DATA/hotpotqa/hotpot_train_100_corpus.json \
    --hotpotqa $DATA/hotpotqa/hotpot_train_more.json --twowiki $DATA/2wikimultihopqa/2wiki_train_more.json \
    --musique $DATA/musique/musique_train_100.json --musique-corpus $DATA/musique/musique_train_100_corpus.json \
    --nq-questions $DATA/nq/questions.jsonl --nq-corpus $DATA/nq/corpus.jsonl --nq-split train \
    --squad $DATA/squad2/dev-v2.0.json --ottqa $DATA/ottqa --ottqa-questions $DATA/ottqa/dev.traced.json \
    --wikipedia $DATA/wikipedia/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2 \
    --wikipedia $DATA/wikipedia/enwiki-table-markup.xml.bz2 --variant lora --frozen-expert 1 --frozen-expert 3 \
    --pooling mean --expert-layer 2 --expert-layer 3 --expert-layer 4 --expert-layer 5 --lora-rank 8 --lora-alpha 16 \
    --lora-target query --lora-target key --lora-target value --lora-target attention_output \
    --lora-target intermediate --lora-target output --weight reranking=2 --weight span=2 --source-temperature 0 \
    --lr 1e-3 --batch-size $(S 4 32) --max-length 256 --max-steps $(S 2 1200) --time-budget $(S 10 2.2) --seed 13
fi

ls -la "$OUT"
