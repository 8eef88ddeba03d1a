"""On the device: pipediag's InputMonitor inside a real Keras fit on the GPU (TensorFlow backend),
once plain and once under tf.distribute.MirroredStrategy on the one GPU.

    KERAS_BACKEND=tensorflow python3 benchmarks/tf_gpu/fit_monitor.py OUT_DIR

The model and pipeline are scenarios/gpu/tf_keras_input.py's (a small CNN fed by a JPEG decode).
Prints each run's verdict, its measured wait and the steps timed; writes each diagnosis as JSON.
"""

import os
import sys

import tensorflow as tf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scenarios", "gpu"))

import tf_keras_input as scenario  # noqa: E402

from pipediag.keras import InputMonitor  # noqa: E402


def fit(name: str, out: str, strategy=None) -> None:
    scope = strategy.scope() if strategy else tf.device("/GPU:0")
    with scope:
        model = scenario.make_model()
    monitor = InputMonitor(json=os.path.join(out, f"fit_{name}.json"), verbose=0)
    model.fit(scenario.make_dataset(), steps_per_epoch=150, epochs=2, callbacks=[monitor], verbose=0)
    d = monitor.diagnosis
    run = d.modes["pipeline"]
    print(f"{name}: verdict {d.verdict.bottleneck} ({d.verdict.confidence}); {d.verdict.headline}")
    for line in d.verdict.evidence[:4]:
        print(f"    {line}")
    print(f"    steps timed {run.steps}, {run.batches_per_sec} batches/s, input wait {run.input_wait_frac}")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    fit("plain", out)
    fit("mirrored", out, tf.distribute.MirroredStrategy(["/GPU:0"]))
