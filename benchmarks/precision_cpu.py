"""What each Keras mixed-precision policy does on this machine's CPU: the reference ResNet-20 of
`pipediag baseline` built under float32, mixed_float16 and mixed_bfloat16, its layers' compute
dtype, the optimizer Keras compiled, and the time of 5 train steps at batch 32 after the first.

    KERAS_BACKEND=tensorflow flock /tmp/cpu.lock python benchmarks/precision_cpu.py
    KERAS_BACKEND=jax flock /tmp/cpu.lock python benchmarks/precision_cpu.py

One run, for orientation (why a mixed policy on a CPU gets a note, not a refusal): not a benchmark
of the policies.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipediag.api.baseline import MODELS, build_model, synthetic_batch  # noqa: E402
from pipediag.backends.tf import keras  # noqa: E402
from pipediag.steps.precision import PRECISIONS, built_under  # noqa: E402

STEPS = 5


def main() -> None:
    spec = MODELS["resnet20"]
    backend = keras.backend.backend()
    print(f"Keras {keras.__version__} on {backend}, global policy {keras.mixed_precision.dtype_policy().name}")
    for precision in PRECISIONS:
        model = built_under(precision, lambda: build_model(spec))
        conv = next(layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D))
        x, y = synthetic_batch(spec, 32, backend, "cpu")
        started = time.perf_counter()
        model.train_on_batch(x, y)
        first_s = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(STEPS):
            loss = model.train_on_batch(x, y)
        step_ms = (time.perf_counter() - started) / STEPS * 1e3
        print(f"{precision:15s} model {model.dtype_policy.name}, conv computes {conv.compute_dtype} with "
              f"{conv.variable_dtype} weights, optimizer {type(model.optimizer).__name__}, global after "
              f"{keras.mixed_precision.dtype_policy().name}; first step {first_s:.2f} s, then {step_ms:.1f} ms/step "
              f"(loss {float(loss):.3f})")


if __name__ == "__main__":
    main()
