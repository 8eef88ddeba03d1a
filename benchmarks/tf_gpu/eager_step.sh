#!/usr/bin/env bash
# On the GPU machine, with TensorFlow's GPU build (pack.sh's parts in /tmp/parts, unpacked by
# setup.py): the eager step on the GPU. Plain TensorFlow first (benchmarks/eager_step_truth.py: the
# walkthrough's step as written and in tf.function), then `pipediag run` on the script as published
# against `pipediag diagnose` on its builder form (benchmarks/tf_gpu/run_scripts.sh).
#
#     bash benchmarks/tf_gpu/eager_step.sh OUT [CASE...]     # default: both walkthroughs
#
# Needs scenarios/scripts/CASE/train.py (not in git: carry it). Writes OUT/truth-CASE.txt and what
# run_scripts.sh writes.
set -uo pipefail
out=$1
shift
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(tf_custom_training_walkthrough tf_custom_training_walkthrough_iris)
mkdir -p "$out"
LD_LIBRARY_PATH=$(python3 benchmarks/tf_gpu/setup.py --link-only | sed -n 's/^LD_LIBRARY_PATH=//p')
export LD_LIBRARY_PATH
export PYTHONPATH=/tmp/site:$PWD${EXTRA_PYTHONPATH:+:$EXTRA_PYTHONPATH}
export KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=2 MPLBACKEND=Agg
for case in "${cases[@]}"; do
  python3 benchmarks/eager_step_truth.py "scenarios/scripts/$case/builder.py" > "$out/truth-$case.txt" 2>&1
  tail -n 4 "$out/truth-$case.txt"
done
bash benchmarks/tf_gpu/run_scripts.sh "$out" "${cases[@]}"
