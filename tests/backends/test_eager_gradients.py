"""backends.tf.eager_gradients_counted on real TensorFlow steps."""

import threading

import pytest

pytest.importorskip("tensorflow")

from pipediag.backends.tf import eager_gradients_counted, tf  # noqa: E402
from tests.fixtures import pipelines as P  # noqa: E402


def batch():
    return next(iter(P.in_memory()))


def test_an_eager_step_is_counted_once_a_step_and_a_compiled_one_only_never():
    data = batch()
    eager, compiled = P.eager_step(), P.compiled_step()
    with eager_gradients_counted() as counted:
        for _ in range(5):
            eager(data)
    assert counted.calls == 5
    with eager_gradients_counted() as counted:
        for _ in range(5):
            compiled(data)  # its first call traces: the tape is read in graph mode, not eagerly
    assert counted.calls == 0


def test_a_step_in_another_thread_is_counted_and_the_method_is_put_back():
    data, step = batch(), P.eager_step()
    original = tf.GradientTape.__dict__["gradient"]
    with eager_gradients_counted() as counted:
        worker = threading.Thread(target=lambda: [step(data) for _ in range(3)])  # pipediag run: the loop's thread
        worker.start()
        worker.join()
    assert counted.calls == 3
    assert tf.GradientTape.__dict__["gradient"] is original
    with pytest.raises(RuntimeError):
        with eager_gradients_counted():
            raise RuntimeError("a step that raised")
    assert tf.GradientTape.__dict__["gradient"] is original
