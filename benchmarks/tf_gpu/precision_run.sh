#!/usr/bin/env bash
# On the H200, with TensorFlow's GPU build unpacked by benchmarks/tf_gpu/setup.py (runs 14-17,
# docs/gpu-validation.md "TensorFlow on the GPU"): mixed precision on the TensorFlow backend, in
# one device call of under 4 minutes. From the project root:
#
#     bash benchmarks/tf_gpu/precision_run.sh          # writes $OUT/precision-*.{json,html,txt,err}
#
# 1. sweep fp32 and 2. sweep mixed_float16: scenarios/gpu/tf_keras_input.py (the small CNN of run
#    17's sweep) at batch 512, 1024, 2048 under --gpu-memory-limit 3072 (run 17, float32: 256 fit
#    at a 1.05 GiB peak, 1024 ran out of memory). Should show the peaks about halved under
#    mixed_float16 and the OOM edge moving up (not measured yet).
# 3. baseline mixed_float16: ResNet-50, Keras on TensorFlow, batch 64, 128, 256, 2 s per size
#    (float32 is run 15's: 2,448 / 3,035 / 3,605 samples/s; compare with
#    `pipediag compare --baseline benchmarks/results/tf-gpu-2026-12-02/baseline-tf-fp32.json
#    $OUT/precision-baseline-mixed_float16.json`, which labels the precision difference).
#    Each size's first step took 35-49 s in run 15 (XLA compiling, the driver JIT-compiling the
#    build's compute_90 PTX), so the three sizes need about 150 s: the deadline, not --budget,
#    bounds it (pipediag's budget would skip 256 on the set-up 128 took, and say so).
# 4. baseline mixed_bfloat16, only if at least 60 s are left: not within the default deadline;
#    PRECISION_RUN_DEADLINE_S=420 gives it room (a second call, or a longer one).
#
# The sweeps go first: each is capped at 45 s, so the baseline keeps at least 140 s. Every step
# has a timeout inside one deadline (PRECISION_RUN_DEADLINE_S, default 230 s from the start); a
# step cut short gets SIGINT, on which pipediag writes its partial result (status interrupted,
# the sizes measured kept), and SIGKILL 10 s later if it is still inside a compile (no JSON then):
# at most 240 s in all. A step that fails is recorded (rc in $OUT/precision-summary.txt) and
# the next one runs. Nothing here needs the network.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
DEADLINE_S=${PRECISION_RUN_DEADLINE_S:-230}
SCENARIO=scenarios/gpu/tf_keras_input.py
SWEEP_SIZES=${SWEEP_SIZES:-512,1024,2048}
SWEEP_LIMIT_MB=${SWEEP_LIMIT_MB:-3072}
BASELINE_MODEL=${BASELINE_MODEL:-resnet50}
BASELINE_SIZES=${BASELINE_SIZES:-64,128,256}

export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=2 PYTHONUNBUFFERED=1 COLUMNS=120
# Kernels the driver JIT-compiles from the build's PTX are cached on disk; a larger cache may keep
# them from one process to the next (not measured).
export CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
case ":${LD_LIBRARY_PATH:-}:" in
  *:/tmp/cuda12:*) ;;
  *) # the links setup.py made, and the path it prints last (run 18 looked only in /tmp/parts, found
     # nothing there, and TensorFlow ran on the CPU: the copy in this tree is the one to ask)
     setup=benchmarks/tf_gpu/setup.py
     [ -f "$setup" ] || setup=/tmp/parts/setup.py
     if [ -f "$setup" ]; then
       lib=$(python3 "$setup" --link-only | sed -n 's/^LD_LIBRARY_PATH=//p')
       export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
     else
       echo "no /tmp/cuda12 in LD_LIBRARY_PATH and no setup.py: TensorFlow may not see the GPU" >&2
     fi ;;
esac
# Refuse to measure on the CPU: every number below is about the GPU.
if ! python3 -c "import tensorflow as tf, sys; sys.exit(0 if tf.config.list_physical_devices('GPU') else 1)" 2>/dev/null; then
  echo "TensorFlow sees no GPU here (LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}): nothing run" | tee "$OUT/precision-summary.txt" >&2
  exit 2
fi

SUMMARY="$OUT/precision-summary.txt"
: > "$SUMMARY"
left() { echo $((DEADLINE_S - SECONDS)); }

# step NAME CAP_S ARGS...: `python -m pipediag ARGS`, JSON and HTML to $OUT/precision-NAME.*,
# at most CAP_S seconds and never past the deadline.
step() {
  local name=$1 cap=$2 limit
  shift 2
  limit=$(left)
  [ "$cap" -lt "$limit" ] && limit=$cap
  if [ "$limit" -lt 20 ]; then
    echo "$name: not run, $(left) s left of ${DEADLINE_S} s" | tee -a "$SUMMARY"
    return
  fi
  local started=$SECONDS
  timeout -s INT -k 10 "$limit" python3 -m pipediag "$@" --quiet \
    --json "$OUT/precision-$name.json" --html "$OUT/precision-$name.html" \
    > "$OUT/precision-$name.txt" 2> "$OUT/precision-$name.err"
  local rc=$?
  echo "$name: rc=$rc in $((SECONDS - started)) s (limit ${limit} s)" | tee -a "$SUMMARY"
  [ "$rc" -ne 0 ] && tail -n 5 "$OUT/precision-$name.err" | sed 's/^/    /' | tee -a "$SUMMARY"
}

sweep() {  # sweep PRECISION
  step "sweep-$1" 45 sweep "$SCENARIO:make_dataset" --model "$SCENARIO:make_model" --batch-sizes "$SWEEP_SIZES" \
    --gpu-memory-limit "$SWEEP_LIMIT_MB" --max-seconds 1 --precision "$1"
}

baseline() {  # baseline PRECISION MIN_LEFT_S
  if [ "$(left)" -lt "$2" ]; then
    echo "baseline-$1: not run, $(left) s left of ${DEADLINE_S} s" | tee -a "$SUMMARY"
    return
  fi
  step "baseline-$1" 300 baseline --model "$BASELINE_MODEL" --batch-sizes "$BASELINE_SIZES" \
    --seconds-per-size 2 --budget 300 --precision "$1"
}

sweep float32
sweep mixed_float16
baseline mixed_float16 20
baseline mixed_bfloat16 60

python3 - "$OUT" <<'EOF' | tee -a "$SUMMARY"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, f"precision-{name}.json")) as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        print(f"{name}: no JSON ({type(error).__name__})")
        return None
def gib(peak):
    return "-" if not peak else f"{peak['bytes'] / 2**30:.2f} GiB"
for p in ("float32", "mixed_float16"):
    d = load(f"sweep-{p}")
    if d:
        print(f"sweep {d.get('precision')} ({d['status']}): " + ", ".join(
            f"{x['batch_size']} {x['status']} {gib(x['peak_memory'])}" for x in d["points"]))
        print(f"  {d['oom_edge']['text']}")
for p in ("mixed_float16", "mixed_bfloat16"):
    d = load(f"baseline-{p}")
    if d:
        print(f"baseline {d['model']} {d.get('precision')} ({d['status']}, {d['elapsed_s']:.0f} s): " + ", ".join(
            f"{x['batch_size']} {x['status']} "
            + ("" if x["samples_per_sec"] is None else f"{x['samples_per_sec']:.0f}/s ")
            + f"peak {gib(x['peak_memory'])} first step "
            + ("-" if x["first_step_ms"] is None else f"{x['first_step_ms'] / 1e3:.0f} s") for x in d["points"]))
EOF
echo "total ${SECONDS} s" | tee -a "$SUMMARY"
