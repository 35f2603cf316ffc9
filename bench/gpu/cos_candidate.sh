#!/usr/bin/env bash
# Issue 27: a candidate Chain-of-Skills model trained on a lent GPU and, in the same call, the evaluations its rule
# reads (docs/cos/README.md, "Session 26") beside the report-part ones. The second call to a warm machine whose
# first call unpacked the model (`bash bench/gpu/train_all.sh full none`, carry [".gpu"]):
#   while it trains:  the shipped model on the tuning part (paper limits and reduced limits, all 499 each)
#   once it is saved: the candidate on the same two, and on the report part (paper limits, all 1,213; reduced)
# RECIPE picks the candidate:
#   continue      (session 20, run and refused) the shipped model trained 800 more steps, lr 5e-4, seed 14, the
#                 reranker's weight 3 (the paper-limit gap is the hop-2 reranker's order: "Session 19")
#   own-reranker  (prepared in session 20, not run) a fresh model with the shipped recipe (800 steps of 32, lr 1e-3,
#                 seed 13) whose reranker reads an expert of its own (`--route reranking=6,6`): in the paper's
#                 routing it shares expert 4 with the expanded query, and weighting it up moved both; SEED (13 in
#                 session 25, refused; 17 in session 26) picks the batches and the initial deltas
#   large-batch   (session 37) own-reranker's model and data with the paper's kind of batch: BATCH 128 (the paper
#                 fine-tunes with 192; one skill and one source per batch, so in-batch negatives grow with it),
#                 STEPS 700 (89,600 examples, 2.2 epochs of the 40,814, against 0.63 at 800 x 32), lr 1e-3, seed 13,
#                 source temperature 0.5, not 0 (at 128 a batch of each source in turn would read MuSiQue's 137
#                 expanded examples 21 times over)
#   here:
#          python bench/gpu/prepare_carry.py --out .gpu --parts model               (the first call's carry)
#          python bench/gpu/prepare_carry.py data-cos.tar.xz --out .gpu2 --parts wheels   (this call's, with sleuth.egg-info)
#   device run, carry [".gpu2", "sleuth.egg-info"]:  RECIPE=own-reranker SEED=17 LIMIT=560 bash bench/gpu/cos_candidate.sh
#                                                     RECIPE=large-batch LIMIT=540 bash bench/gpu/cos_candidate.sh
#   here, at toy size on the CPU:  PY=.venv/bin/python DEVICE=cpu SMOKE=9 LIMIT=900 OUT=/tmp/o RECIPE=... bash bench/gpu/cos_candidate.sh
# Paper limits run with TF32 matrix products (as session 18's report figures), reduced limits in float32 (as the
# curve's). Every evaluation still running at LIMIT is stopped; the model and every finished record come back.
set -u
OUT=${OUT:?set OUT}; PY=${PY:-python3}; DEVICE=${DEVICE:-cuda}; SMOKE=${SMOKE:-}; RECIPE=${RECIPE:?set RECIPE: continue or own-reranker}; SEED=${SEED:-13}
W=${WORK:-/tmp/sleuth-gpu}; DATA=../shared/data; H=$DATA/hotpotqa; END=$((SECONDS + ${LIMIT:-540}))
mkdir -p "$W/clogs" "$W/cevals" "$W/cmodels" "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 SLEUTH_HOME="$W/home" JAX_PLATFORMS=cpu XLA_PYTHON_CLIENT_PREALLOCATE=false
export PYTHONPATH=$PWD:/tmp/site:$PWD/bench/gpu/faiss_shim
source bench/gpu/lib.sh
if [ -z "$SMOKE" ]; then  # the wheels and the data travel in this call (the model alone fills the first)
  install_wheels $(ls .gpu2/whl/*.whl 2> /dev/null) || exit 1
  for archive in .gpu2/data-*.tar.xz; do mkdir -p "$DATA" && tar xJf "$archive" -C "$DATA" || exit 1; done
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fi
MODEL=$W/cmodels/cos-candidate
if [ -n "$SMOKE" ]; then  # toy copies: the first few questions of each dev file; two training steps
  mkdir -p "$W/smoke" && for f in hotpot_dev_distractor_100 hotpot_dev_distractor_more; do
    $PY -c "import json; json.dump(json.load(open('$H/$f.json'))[:40], open('$W/smoke/$f.json', 'w'))"
  done; H=$W/smoke
fi
S() { if [ -n "$SMOKE" ]; then echo "$1"; else echo "$2"; fi; }

ev() {  # ev NAME PART SHARD N ARGS...: one shard of one evaluation, stopped at END
  local name=$1 part=$2 shard=$3 n=$4; shift 4
  cos_eval_shard "$W/cevals/$name-$shard.json" "$W/clogs/$name-$shard.log" $shard $n \
    --questions $H/hotpot_dev_distractor_100.json --questions $H/hotpot_dev_distractor_more.json --part $part \
    --per-question "$@"  # outcomes by question: `sleuth cos compare` tests the two models pairwise
}
paper() { TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 ev "$@" --limits paper --k-hop2-rerank 30; }
reduced() { TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=0 ev "$@"; }

source bench/gpu/cos_recipe.sh
case $RECIPE in
  continue) RECIPE_ARGS=(--model cos-minilm-lora "${COS_DATA[@]}" --weight reranking=3 --weight span=2
                         --source-temperature 0 --lr 5e-4 --seed 14) ;;
  own-reranker) RECIPE_ARGS=("${COS_DATA_AND_MODEL[@]}" --route reranking=6,6 --lr 1e-3 --seed $SEED) ;;
  large-batch) RECIPE_ARGS=("${COS_DATA_AND_MODEL[@]}" --route reranking=6,6 --source-temperature 0.5 --lr 1e-3 --seed $SEED)
               BATCH=${BATCH:-128}; STEPS=${STEPS:-700} ;;
  *) echo "unknown RECIPE $RECIPE (continue, own-reranker, large-batch)"; exit 1 ;;
esac
echo "== training ($RECIPE) and the shipped model's tuning-part evaluations, at $SECONDS s"
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 timeout $(S 900 300) $PY -m sleuth cos train --device $DEVICE --out "$MODEL" \
  "${RECIPE_ARGS[@]}" $(S "--wikipedia-max-articles 30" "") --batch-size $(S 4 ${BATCH:-32}) --max-length 256 \
  --max-steps $(S 2 ${STEPS:-800}) --time-budget $(S 10 ${BUDGET:-3.5}) > "$W/clogs/train.log" 2>&1 &
trainer=$!
for i in 0 1 2 3 4; do (paper shipped-paper-tune tune $i 5) & done
for i in 0 1; do (reduced shipped-reduced-tune tune $i 2) & done
wait $trainer; echo "== training: exit $? at $SECONDS s"; grep -v "Warning\|warn(" "$W/clogs/train.log" | tail -4
if [ -d "$MODEL" ]; then
  (cd "$W/cmodels" && tar czf "$OUT/cos-candidate.tgz" cos-candidate)  # bring it back at once
  for i in 0 1 2 3 4; do (paper new-paper-tune tune $i 5 --model "$MODEL") & done
  for i in 0 1; do (reduced new-reduced-tune tune $i 2 --model "$MODEL") & done
  for i in 0 1 2 3 4 5 6 7 8; do (paper new-paper-report report $i 9 --model "$MODEL") & done
  for i in 0 1; do (reduced new-reduced-report report $i 2 --model "$MODEL") & done
fi
wait
merge_evals "$W/cevals" "$W/clogs" shipped-paper-tune shipped-reduced-tune new-paper-tune new-reduced-tune \
  new-paper-report new-reduced-report
(cd "$W" && tar czf "$OUT/cevals.tgz" cevals clogs); ls -la "$OUT"
