# Shell functions the device scripts share (sourced; they read PY, DEVICE, END, SMOKE and SECONDS).

install_wheels() {  # install_wheels WHEEL...: into /tmp/site (once per machine), no index, no dependencies
  [ -d /tmp/site/mwparserfromhell ] || [ $# -eq 0 ] && return 0
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@"
}

cos_eval_shard() {  # cos_eval_shard JSON LOG SHARD N ARGS...: one shard of `sleuth cos eval`, stopped at END
  local json=$1 log=$2 shard=$3 n=$4; shift 4
  [ $((END - SECONDS)) -gt 10 ] || return 0
  OMP_NUM_THREADS=1 timeout $((END - SECONDS)) $PY -m sleuth cos eval --shard "$shard/$n" --device "$DEVICE" \
    --json "$json" ${SMOKE:+--limit $SMOKE} "$@" > "$log" 2>&1
  local rc=$?
  echo "$(basename "$json" .json) $shard/$n: exit $rc at $SECONDS s"
}

merge_evals() {  # merge_evals DIR LOGDIR NAME...: join each NAME's shard records DIR/NAME-i.json into DIR/NAME.json
  local dir=$1 logs=$2 name; shift 2
  for name in "$@"; do
    ls "$dir/$name"-[0-9]*.json > /dev/null 2>&1 || { echo "$name: no record"; continue; }
    $PY -m sleuth cos merge "$dir/$name"-[0-9]*.json --json "$dir/$name.json" > "$logs/merge-$name.log" 2>&1 \
      && grep -v "^$" "$logs/merge-$name.log" | tail -6 || echo "$name: not merged ($(tail -1 "$logs/merge-$name.log"))"
  done
}
