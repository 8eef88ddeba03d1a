"""On the device, after benchmarks/tf_gpu/setup.py: does TensorFlow's GPU build run on this GPU, and
which CUDA library families work through the links setup.py made?

    python3 benchmarks/tf_gpu/probe.py [--json PATH]

One op per library TensorFlow loads (cuBLAS: matmul; cuBLASLt: a fused matmul+bias; cuDNN: conv2d;
cuFFT: fft2d; cuSOLVER: a Cholesky solve; cuSPARSE: a sparse-dense matmul; cuRAND is not used by
TF's own RNG), each checked against the same op on the CPU; then a Keras 3 fit (TensorFlow
backend) on the GPU, tf.config.experimental.get_memory_info, and TensorFlow's own out-of-memory
error. Every check is reported, failures included, and the script never stops at the first.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

os.environ.setdefault("KERAS_BACKEND", "tensorflow")


def check(name, fn, results):
    started = time.perf_counter()
    try:
        detail = fn()
        results.append({"check": name, "ok": True, "detail": detail, "s": round(time.perf_counter() - started, 3)})
    except Exception as error:  # noqa: BLE001 - every failure is the result
        results.append({"check": name, "ok": False, "detail": f"{type(error).__name__}: {error}"[:600],
                        "trace": traceback.format_exc()[-1500:], "s": round(time.perf_counter() - started, 3)})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    results: list[dict] = []
    import numpy as np
    import tensorflow as tf

    info = dict(tf.sysconfig.get_build_info())
    gpus = tf.config.list_physical_devices("GPU")
    results.append({"check": "build", "ok": bool(info.get("is_cuda_build")),
                    "detail": {k: info.get(k) for k in ("cuda_version", "cudnn_version", "cuda_compute_capabilities")}})
    results.append({"check": "gpus", "ok": bool(gpus), "detail": [g.name for g in gpus]})
    if gpus:
        tf.config.experimental.set_memory_growth(gpus[0], True)
    rng = np.random.default_rng(0)

    def same(gpu_fn, cpu_fn, tol=1e-3):
        with tf.device("/GPU:0"):
            g = gpu_fn()
        with tf.device("/CPU:0"):
            c = cpu_fn()
        err = float(np.max(np.abs(np.asarray(g) - np.asarray(c))) / (np.max(np.abs(np.asarray(c))) + 1e-12))
        if err > tol:
            raise AssertionError(f"GPU and CPU differ: relative error {err:.2e}")
        return {"device": g.device, "rel_err": err}

    a = tf.constant(rng.normal(size=(512, 512)).astype("float32"))
    b = tf.constant(rng.normal(size=(512, 512)).astype("float32"))
    bias = tf.constant(rng.normal(size=(512,)).astype("float32"))
    check("cublas matmul", lambda: same(lambda: tf.linalg.matmul(a, b), lambda: tf.linalg.matmul(a, b), 1e-2), results)
    check("cublasLt matmul+bias (fused)", lambda: same(lambda: tf.nn.bias_add(tf.linalg.matmul(a, b), bias),
                                                       lambda: tf.nn.bias_add(tf.linalg.matmul(a, b), bias), 1e-2),
          results)
    img = tf.constant(rng.normal(size=(8, 64, 64, 16)).astype("float32"))
    ker = tf.constant(rng.normal(size=(3, 3, 16, 32)).astype("float32"))
    check("cudnn conv2d", lambda: same(lambda: tf.nn.conv2d(img, ker, 1, "SAME"),
                                       lambda: tf.nn.conv2d(img, ker, 1, "SAME"), 1e-2), results)
    sig = tf.constant(rng.normal(size=(64, 64)).astype("complex64"))
    check("cufft fft2d", lambda: same(lambda: tf.abs(tf.signal.fft2d(sig)), lambda: tf.abs(tf.signal.fft2d(sig))),
          results)
    spd = tf.constant((lambda m: m @ m.T + 64 * np.eye(64))(rng.normal(size=(64, 64))).astype("float32"))
    rhs = tf.constant(rng.normal(size=(64, 4)).astype("float32"))
    check("cusolver cholesky", lambda: same(lambda: tf.linalg.cholesky_solve(tf.linalg.cholesky(spd), rhs),
                                            lambda: tf.linalg.cholesky_solve(tf.linalg.cholesky(spd), rhs)), results)
    sparse = tf.sparse.from_dense(tf.constant((rng.random((256, 256)) < 0.05).astype("float32")))
    dense = tf.constant(rng.normal(size=(256, 32)).astype("float32"))
    check("cusparse sparse@dense", lambda: same(lambda: tf.sparse.sparse_dense_matmul(sparse, dense),
                                                lambda: tf.sparse.sparse_dense_matmul(sparse, dense)), results)

    def keras_fit():
        import keras

        model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(32, 3, activation="relu"),
                                  keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)])
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        ds = tf.data.Dataset.from_tensors((tf.zeros((64, 32, 32, 3)), tf.zeros((64,), tf.int32))).repeat(50)
        started = time.perf_counter()
        history = model.fit(ds, epochs=1, verbose=0)
        return {"backend": keras.backend.backend(), "loss": float(history.history["loss"][-1]),
                "weights_on": model.weights[0].value.device, "fit_s": round(time.perf_counter() - started, 2)}

    check("keras fit (tensorflow backend)", keras_fit, results)
    check("get_memory_info", lambda: tf.config.experimental.get_memory_info("GPU:0"), results)

    def oom():
        try:
            with tf.device("/GPU:0"):
                x = tf.zeros((200 * 1024, 1024, 1024), tf.float32)  # 800 GiB
                return {"unexpected": str(x.shape)}
        except tf.errors.ResourceExhaustedError as error:
            return {"raised": "ResourceExhaustedError", "message": str(error)[:200]}

    check("out of memory", oom, results)
    for r in results:
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['check']:32} {json.dumps(r['detail'], default=str)[:300]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
