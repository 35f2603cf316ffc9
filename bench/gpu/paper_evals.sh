#!/usr/bin/env bash
# Session 18 (issues 27 and 32), the second call to a warm GPU machine whose first call unpacked the model and the
# wheels (`bash bench/gpu/train_all.sh full none`, carry [".gpu"]): Chain-of-Skills at the paper's limits on the
# whole report part of HotpotQA dev (its own paragraphs, and the pooled corpus), sharded over processes that share
# the GPU (`sleuth cos eval --shard i/n`, joined here by `sleuth cos merge`), the 400-step checkpoint's report point
# at reduced limits, and, beside them, DHR's second (ANCE-style) training round.
#   here:  python bench/gpu/prepare_carry.py --out .gpu --parts model wheels   (the first call: 61 MiB with the repo)
#          python bench/gpu/prepare_carry.py data-dev.tar.xz data-dhr.tar.xz data-pooled.tar.xz --out .gpu2 --parts
#          cp .gpu3/cos-curve-checkpoints.tgz .gpu2/   (session 15's checkpoints)
#   device run, carry [".gpu2"]:  LIMIT=420 bash bench/gpu/paper_evals.sh
#   here, at toy size on the CPU:  PY=.venv/bin/python DEVICE=cpu SMOKE=2 LIMIT=300 OUT=/tmp/o bash bench/gpu/paper_evals.sh
# Matrix products run in TF32 on the GPU (float32 weights); every evaluation still running at LIMIT is stopped.
set -u
OUT=${OUT:?set OUT}; PY=${PY:-python3}; DEVICE=${DEVICE:-cuda}; SMOKE=${SMOKE:-}
W=${WORK:-/tmp/sleuth-gpu}; DATA=../shared/data; H=$DATA/hotpotqa; END=$((SECONDS + ${LIMIT:-420}))
mkdir -p "$W/elogs" "$W/evals" "$W/curve-models" "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 JAX_PLATFORMS=cpu XLA_PYTHON_CLIENT_PREALLOCATE=false
export PYTHONPATH=$PWD:/tmp/site:$PWD/bench/gpu/faiss_shim TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1
if [ -z "$SMOKE" ]; then  # the data (the model and wheels came in the first call)
  for archive in .gpu2/data-*.tar.xz; do mkdir -p "$DATA" && tar xJf "$archive" -C "$DATA" || exit 1; done
  tar xzf .gpu2/cos-curve-checkpoints.tgz -C "$W/curve-models" || exit 1
  (NO_UNPACK=1 bash bench/gpu/train_all.sh full dhr-round2 > "$W/elogs/dhr-round2-call.log" 2>&1; echo "dhr-round2 done at $SECONDS s") &
fi
if [ -n "$SMOKE" ]; then  # toy copies: the first few questions of each file
  mkdir -p "$W/smoke" && for f in hotpot_dev_distractor_100 hotpot_dev_distractor_more hotpot_train_100 hotpot_train_more; do
    $PY -c "import json,sys; json.dump(json.load(open('$H/$f.json'))[:8], open('$W/smoke/$f.json', 'w'))"
  done; H=$W/smoke
fi
DEV=(--questions $H/hotpot_dev_distractor_100.json --questions $H/hotpot_dev_distractor_more.json --part report)
POOL=(--pooled --distractors $H/hotpot_train_100.json --distractors $H/hotpot_train_more.json)
PAPER=(--limits paper --k-hop2-rerank 30)

source bench/gpu/lib.sh
ev() {  # ev NAME SHARD N ARGS...: one shard of one evaluation, stopped at END (shards share one index build)
  local name=$1 shard=$2 n=$3; shift 3
  cos_eval_shard "$W/evals/$name-$shard.json" "$W/elogs/$name-$shard.log" $shard $n "${DEV[@]}" "$@"
}
N=${SHARDS:-5}
for i in $(seq 0 $((N - 1))); do  # the default (fused) chain and its baselines first, the paper's order after
  (ev paper $i $N "${PAPER[@]}"; ev paper-order $i $N "${PAPER[@]}" --chain hotpotqa --ablate fusion) &
  (ev pooled-paper $i $N "${POOL[@]}" "${PAPER[@]}"; ev pooled-paper-order $i $N "${POOL[@]}" "${PAPER[@]}" \
     --chain hotpotqa --ablate fusion) &
done
STEP400=(--model $W/curve-models/cos-curve-checkpoints/step-400)
[ -n "$SMOKE" ] && STEP400=()  # (no checkpoint here: the shipped model)
for i in 0 1; do  # the curve's 400-step report point in the paper's order, as the curve's other points
  (ev step-400 $i 2 "${STEP400[@]}" --ablate fusion) &
done
wait
merge_evals "$W/evals" "$W/elogs" paper paper-order pooled-paper pooled-paper-order step-400
(cd "$W" && tar czf "$OUT/evals.tgz" evals elogs); ls -la "$OUT"
