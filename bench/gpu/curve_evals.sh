#!/usr/bin/env bash
# The cos-curve job's evaluations, rerun on the warm GPU machine from the models it trained (brought back in .gpu3),
# three at a time, beside the dhr-round2 job. Session 15 ran it without the JAX settings below: JAX (initialised by
# bm25s) took 60 GiB per process, and only step-150's two evaluations finished.
#   device run, carry [".gpu2", ".gpu3"]:  bash bench/gpu/curve_evals.sh   (.gpu2: prepare_carry.py data-dev, data-dhr, wheels)
set -u
OUT=${OUT:?set OUT}; W=/tmp/sleuth-gpu; DATA=../shared/data; M=/tmp/curve-models; END=$((SECONDS + ${LIMIT:-430}))
mkdir -p $M $W/logs $W/models/cos-curve-evals && for f in .gpu3/*.tgz; do tar xzf $f -C $M; done
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 SLEUTH_HOME="$W/home" PYTHONPATH=$PWD:/tmp/site:$PWD/bench/gpu/faiss_shim
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True JAX_PLATFORMS=cpu XLA_PYTHON_CLIENT_PREALLOCATE=false
bash bench/gpu/train_all.sh full none > /dev/null 2>&1 || exit 1  # wheels and data (.gpu2), the model if carried
(bash bench/gpu/train_all.sh full dhr-round2 > $W/logs/dhr-round2-call.log 2>&1; echo "dhr done $SECONDS s") &
run() {  # run NAME PART [--model DIR]
  [ $((END - SECONDS)) -gt 10 ] || return 0
  TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=0 OMP_NUM_THREADS=2 timeout $((END - SECONDS)) python3 -m sleuth cos eval \
    --questions $DATA/hotpotqa/hotpot_dev_distractor_100.json --questions $DATA/hotpotqa/hotpot_dev_distractor_more.json \
    --part $2 $([ $2 = tune ] && echo --limit 200) --device cuda --json "$W/models/cos-curve-evals/$1-$2.json" "${@:3}" \
    > "$W/logs/eval-$1-$2.log" 2>&1
  echo "$1 $2: exit $? at $SECONDS s"
}
(run final report --model $M/cos-curve; run final tune --model $M/cos-curve; run step-150 tune --model $M/cos-curve-checkpoints/step-150) &
(run step-400 report --model $M/cos-curve-checkpoints/step-400; run shipped tune) &
(run step-150 report --model $M/cos-curve-checkpoints/step-150; run shipped report) &
wait
(cd $W/models && tar czf $OUT/evals.tgz cos-curve-evals); (cd $W && tar czf $OUT/logs2.tgz logs); ls -la $OUT
