"""diagnose() on an eager TensorFlow step: the tf.function fix, measured by wrapping the step."""

import pytest

pytest.importorskip("tensorflow")

import pipediag  # noqa: E402
from pipediag.records.run import StopRule  # noqa: E402
from tests.fixtures import pipelines as P  # noqa: E402

pytestmark = pytest.mark.slow

STRUCTURE = StopRule(max_seconds=1.0, min_seconds=0.2, min_steps=10, warmup_steps=3)


def test_an_eager_step_gets_tf_function_first_with_its_gain_measured():
    d = pipediag.diagnose(P.one_batch_repeated, step=P.eager_step(), stop_rule=STRUCTURE)
    # One batch repeated: the input costs next to nothing beside a step of ~50 ops run from Python.
    assert d.verdict.bottleneck in ("compute", "host"), d.verdict
    eager = d.step.eager
    assert eager.eager and eager.eager_gradients >= eager.steps > 0, eager
    fix = d.fixes[0]
    assert fix.kind == "tf_function", d.fixes
    assert "xla" not in [f.kind for f in d.fixes]
    # On the 2-core machine this step ran about 10x faster compiled; 2x is far below any noise.
    assert fix.measured_speedup > 2, fix
    assert fix.basis.startswith("measured: the step wrapped in tf.function by pipediag ran"), fix
    assert any(p.name == "compiled_step" for p in d.phases)
    again = type(d).from_dict(d.to_dict())
    assert again.step.eager == eager


def test_a_step_tf_function_cannot_trace_gets_the_fix_unmeasured_with_the_line_that_stopped_it():
    d = pipediag.diagnose(P.one_batch_repeated, step=P.eager_step(numpy_inside=True), stop_rule=STRUCTURE)
    fix = d.fixes[0]
    assert fix.kind == "tf_function" and fix.measured_speedup is None, d.fixes
    assert fix.basis.startswith("not measured (tf.function could not run it: AttributeError:"), fix.basis
    assert "numpy" in fix.basis and "pipelines.py:" in fix.basis, fix.basis
    assert d.status == "complete"  # the user's step failing inside pipediag's wrapper is no failure of theirs

