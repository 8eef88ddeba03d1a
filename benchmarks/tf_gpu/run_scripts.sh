#!/usr/bin/env bash
# On the GPU machine, with TensorFlow's GPU build (the parts of pack.sh copied to /tmp/parts and
# unpacked by setup.py): `pipediag run` on the published scripts against `pipediag diagnose` on
# their builder form (benchmarks/run_scripts.py), each step on the GPU.
#
#     bash benchmarks/tf_gpu/run_scripts.sh OUT CASE...
#
# Needs scenarios/scripts/CASE/train.py (not in git: carry them) and, on EXTRA_PYTHONPATH=DIR,
# TensorBoard (tf_distribute_keras' callback) and the tensorflow_datasets helpers the GPU build's
# carry lacks (the data makers of tf_load_images and tf_distribute_keras call tfds.builder), made
# here with `pip install --no-deps --target DIR tensorboard tensorboard-data-server markdown
# werkzeug markupsafe promise six importlib_resources zipp` (35 MB, one carry). Writes
# OUT/run-scripts-gpu.{md,json}, OUT/keep/ (both JSON reports of each case), OUT/log.txt and
# OUT/gpu.txt (nvidia-smi's name, driver and memory).
set -uo pipefail
out=$1
shift
mkdir -p "$out"
LD_LIBRARY_PATH=$(python3 benchmarks/tf_gpu/setup.py --link-only | sed -n 's/^LD_LIBRARY_PATH=//p')
export LD_LIBRARY_PATH
export PYTHONPATH=/tmp/site:$PWD${EXTRA_PYTHONPATH:+:$EXTRA_PYTHONPATH}
export KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=2 MPLBACKEND=Agg
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.txt" 2>&1
python3 -c "import tensorflow as tf; print('tensorflow', tf.__version__, tf.config.list_physical_devices('GPU'))" \
  >> "$out/gpu.txt" 2>&1
python3 benchmarks/run_scripts.py "$@" --no-lock --keep "$out/keep" --out "$out/run-scripts-gpu" > "$out/log.txt" 2>&1
rc=$?
tail -n 20 "$out/log.txt"
exit $rc
