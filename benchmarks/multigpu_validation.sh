#!/usr/bin/env bash
# Issue 18's multi-GPU validation: tf.data on the TensorFlow CPU build feeding a JAX step sharded over
# the GPUs (scenarios/multigpu/mesh.py), on a host of 2 or more GPUs. One diagnosis per case, each in
# its own process as a user runs it; JSON, HTML and the terminal report of each under $OUT, and a
# table last. See docs/gpu-validation.md, "Multi-GPU run", for what each case should show.
set -u
OUT=${OUT:-/tmp/multigpu}
mkdir -p "$OUT"
N=$(python3 -c "import pynvml as n; n.nvmlInit(); print(n.nvmlDeviceGetCount())")
SCEN=scenarios/multigpu/mesh.py
run() {  # name, env..., then -- and pipediag's extra options
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 150 python3 -m pipediag diagnose "$SCEN:make_dataset" --step "$SCEN:make_step" \
    --batch-format numpy --max-seconds 3 --quiet --json "$OUT/$name.json" --html "$OUT/$name.html" "$@" \
    > "$OUT/$name.txt" 2> "$OUT/$name.err"
  echo "$name exit $?"
}
run one_gpu CUDA_VISIBLE_DEVICES=0 --
run all_gpus CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((N - 1))) --
run idle_gpu CUDA_VISIBLE_DEVICES=0,1 MESH_DEVICES=1 --
run gpus_flag MESH_DEVICES=0 -- --gpus 0,1
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
print(f"{'case':10} {'verdict':12} {'devices':>7} {'fed':>5} {'gpus (index: busy% in pipeline)':40} lines")
for name in ("one_gpu", "all_gpus", "idle_gpu", "gpus_flag"):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        print(f"{name:10} no result"); continue
    d = json.load(open(path))
    v, facts = d.get("verdict") or {}, (d.get("verdict") or {}).get("facts", {})
    p = d["modes"].get("pipeline") or {}
    gpus = p.get("gpus") or ([p["gpu"]] if p.get("gpu") else [])
    busy = ", ".join(f"{g.get('index')}: {g['util_pct']:.0f}" for g in gpus if g.get("util_pct") is not None)
    lines = [e[:60] for e in v.get("evidence", []) if e.startswith(("GPU ", "the step ran on"))]
    print(f"{name:10} {v.get('bottleneck', '-'):12} {facts.get('devices', 1):>7} "
          f"{facts.get('devices_fed') or 0:>5.1f} {busy:40} {' | '.join(lines)}")
    print(f"{'':10} selection: {d['samples'].get('gpu_selection')}; step.devices: {d['step'].get('devices')}")
PY
