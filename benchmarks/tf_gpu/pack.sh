#!/usr/bin/env bash
# Packs TensorFlow's GPU build (the `tensorflow` wheel, not `tensorflow-cpu`) with the Python
# packages the device image lacks and CUDA 12's runtime (libcudart.so.12), into parts that each
# travel with one device call (64 MiB per call). Extends ../shared/gpu/pack-tf.sh's approach, with
# no recompression: the wheels are zip files already (deflate), and zstd -19 over the 1.1 GB
# libtensorflow_cc.so.2 would take most of an hour on the 2-core machine for ~20 % less.
#
# Left out of the TensorFlow wheel (deleted from the zip, nothing recompressed): the C++ headers
# (tensorflow/include, 55 MB deflated). The profiler plugin and TF Lite stay: `import tensorflow`
# needs both (seen on the H200, 2026-12-02).
#
# The other CUDA libraries TensorFlow 2.21 asks for at GPU start-up (cuBLAS/cuBLASLt 12, cuFFT 11,
# cuSOLVER 11, cuSPARSE 12, cuDNN 9, NCCL 2) are NOT carried: their CUDA 12 wheels are 581, 201,
# 338, 366, 717 and 352 MB (2,555 MB deflated, ~48 more calls). benchmarks/tf_gpu/setup.py points
# those sonames at the device's own CUDA 13 builds instead (docs/gpu-validation.md says what ran).
#
# Run from the project root; output .devcarry-gpu/p1..pN (git-ignored), each 48 MiB: a call carries
# the tree too (11 MB on 2026-12-02, when 54-MiB parts no longer fit the 64 MiB a call takes).
set -euo pipefail
TF_VERSION=${TF_VERSION:-2.21.0}
root=$(git rev-parse --show-toplevel)
here="$root/benchmarks/tf_gpu"
work=${PACK_WORK:-$(mktemp -d)}
mkdir -p "$work/whl"
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
# What the device image lacks (it has numpy, protobuf, absl-py, h5py, rich, psutil, pyarrow,
# nvidia-ml-py, grpcio, ml-dtypes, wrapt, tqdm, requests, jax, torch, scipy, matplotlib).
pkgs=(tensorflow==$TF_VERSION "nvidia-cuda-runtime-cu12<13" astunparse gast google-pasta termcolor keras namex
      optree libcst tensorflow-datasets tensorflow-metadata googleapis-common-protos etils dm-tree
      simple-parsing docstring-parser array-record immutabledict toml)
for p in "${pkgs[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${plat[@]}" -d "$work/whl" "$p" 2>&1 | grep -v "is ignored" || true
done
tfwhl=$(ls "$work"/whl/tensorflow-"$TF_VERSION"-*.whl)
zip -q -d "$tfwhl" 'tensorflow/include/*' || true
cp "$here/setup.py" "$work/whl/"
tar -C "$work/whl" -cf "$work/carry.tar" .
rm -rf "$root/.devcarry-gpu"
mkdir -p "$root/.devcarry-gpu"
( cd "$root/.devcarry-gpu" && split -b 48M -d -a 2 "$work/carry.tar" part. )
n=0
for f in "$root"/.devcarry-gpu/part.*; do n=$((n+1)); mkdir -p "$root/.devcarry-gpu/p$n"; mv "$f" "$root/.devcarry-gpu/p$n/"; done
grep -qx '/.devcarry-gpu/' "$root/.git/info/exclude" 2>/dev/null || echo '/.devcarry-gpu/' >> "$root/.git/info/exclude"
du -sh "$root"/.devcarry-gpu/p* | tr '\n' ' '; echo
echo "packed $n parts"
