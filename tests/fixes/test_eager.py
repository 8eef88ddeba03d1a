"""The tf.function fix for an eager TensorFlow step, on scripted readings (no TensorFlow)."""

from pipediag.analysis.eager import eager_use
from pipediag.fixes.eager import compiled_step_advice
from pipediag.fixes.recommend import recommend
from pipediag.records.step import EagerUse
from pipediag.records.verdict import Verdict
from tests.summaries import summary


def verdict(bottleneck, **facts):
    return Verdict(bottleneck, "high", "h", ("e",), facts=facts)


def modes():
    return {"synthetic": summary("synthetic", 60), "pipeline": summary("pipeline", 59, wait=0.02)}


MEASURED = EagerUse(133, 133, compiled_rate=1588.6, compiled_ci=(1555.0, 1623.7), eager_rate=63.1, speedup=25.17,
                    speedup_ci=(24.24, 26.14))


def test_a_step_that_reads_its_tape_eagerly_every_step_is_eager_and_a_compiled_one_is_not():
    assert EagerUse(133, 133).eager
    assert EagerUse(70, 133).eager  # a step or two the count did not see: still eager
    assert not EagerUse(0, 133).eager  # a tf.function reads its tape only while traced, in graph mode
    assert not EagerUse(3, 133).eager  # a few eager reads beside a compiled step
    assert not EagerUse(0, 0).eager


def test_the_reading_round_trips_through_json():
    again = EagerUse.from_dict(MEASURED.to_dict())
    assert again == MEASURED and MEASURED.to_dict()["eager"] is True
    assert EagerUse.from_dict(EagerUse(0, 40, compiled_missing="why").to_dict()) == EagerUse(0, 40, compiled_missing="why")


def test_the_speedup_is_the_compiled_rate_over_synthetic_modes_with_the_far_ends_of_their_intervals():
    eager = summary("synthetic", 50)
    compiled = summary("compiled_step", 500)
    use = eager_use(100, 100, eager, compiled)
    assert abs(use.speedup - 10.0) < 1e-9 and use.eager_rate == 50 and use.compiled_rate == 500
    low, high = use.speedup_ci
    assert low == compiled.batches_per_sec_ci[0] / eager.batches_per_sec_ci[1]
    assert high == compiled.batches_per_sec_ci[1] / eager.batches_per_sec_ci[0]
    assert eager_use(100, 100, eager, None, "tf.function could not run it").speedup is None


def test_an_eager_compute_bound_step_gets_tf_function_first_measured_and_no_xla():
    rec = recommend(verdict("compute"), modes(), [], gpu_present=True, step_eager=MEASURED)
    kinds = [f.kind for f in rec.fixes]
    assert kinds == ["tf_function", "mixed_precision"], kinds  # XLA compiles what tf.function makes a graph
    fix = rec.fixes[0]
    assert fix.measured_speedup == 25.17 and fix.speedup_ci == (24.24, 26.14)
    assert fix.basis.startswith("measured: the step wrapped in tf.function by pipediag ran 25.17x (95%: 24.24-26.14x)")
    assert "133 times in 133 steps" in fix.basis
    assert "@tf.function" in fix.code


def test_a_host_bound_eager_step_gets_it_first_too():
    rec = recommend(verdict("host"), modes(), [], gpu_present=True, step_eager=MEASURED)
    assert rec.fixes[0].kind == "tf_function" and "xla" not in [f.kind for f in rec.fixes]


def test_several_steps_per_call_come_after_tf_function_for_an_eager_step():
    """An eager step has no compiled call yet: the fix says it comes after tf_function, and gives
    a loop of one's own its form beside Keras' (a custom training loop has no model.compile)."""
    eager = recommend(verdict("host"), modes(), [], gpu_present=True, step_eager=MEASURED)
    [fix] = [f for f in eager.fixes if f.kind == "steps_per_call"]
    assert fix.basis.startswith("not measured; after tf_function, which makes the step a compiled call")
    assert "steps_per_execution=8" in fix.code and "for _ in tf.range(steps):" in fix.code
    compiled = recommend(verdict("host"), modes(), [], gpu_present=True, step_eager=EagerUse(0, 133))
    [fix] = [f for f in compiled.fixes if f.kind == "steps_per_call"]
    assert fix.basis.startswith("not measured: the host's work for each call of the compiled step")
    assert "tf.range" not in fix.code


def test_unmeasured_it_says_why():
    use = EagerUse(40, 40, compiled_missing="a script's own loop: pipediag swaps its batches, not its code")
    rec = recommend(verdict("compute"), modes(), [], gpu_present=False, step_eager=use)
    fix = rec.fixes[0]
    assert fix.kind == "tf_function" and fix.measured_speedup is None
    assert fix.basis.startswith("not measured (a script's own loop: pipediag swaps its batches, not its code): "
                                "the step read its gradient tape outside any tf.function 40 times in 40 steps with free input")


def test_wrapping_that_measured_no_gain_is_a_note_and_the_fixes_stay_as_they_were():
    flat = EagerUse(40, 40, compiled_rate=61.0, compiled_ci=(59.0, 63.0), eager_rate=60.0, speedup=1.02,
                    speedup_ci=(0.94, 1.07))
    rec = recommend(verdict("compute"), modes(), [], gpu_present=False, step_eager=flat)
    assert [f.kind for f in rec.fixes] == ["xla"]
    assert len(rec.withheld) == 1 and "1.02x" in rec.withheld[0] and "no gain worth the change" in rec.withheld[0]


def test_nothing_changes_for_a_compiled_step_an_unwatched_one_or_another_verdict():
    plain = [f.kind for f in recommend(verdict("compute"), modes(), [], gpu_present=True).fixes]
    for use in (None, EagerUse(0, 133)):
        assert [f.kind for f in recommend(verdict("compute"), modes(), [], gpu_present=True,
                                          step_eager=use).fixes] == plain
    # input- or memory-bound: a faster step would not train faster
    for bottleneck in ("input", "memory"):
        rec = recommend(verdict(bottleneck), modes(), [], gpu_present=True, step_eager=MEASURED)
        assert "tf_function" not in [f.kind for f in rec.fixes]
    # a JAX or PyTorch step never reads a TensorFlow tape; a reading there would not be about it
    assert compiled_step_advice(EagerUse(0, 10)) is None
    rec = recommend(verdict("compute"), modes(), [], gpu_present=True, framework="jax", step_eager=MEASURED)
    assert "tf_function" not in [f.kind for f in rec.fixes]


def test_an_error_from_tf_function_s_trace_is_said_in_its_own_line_with_the_users_line():
    from pipediag.errors import error_line

    traced = AttributeError('in user code:\n\n    File "/home/me/train.py", line 18, in step  *\n'
                            '        history.append(loss.numpy())\n\n'
                            "    AttributeError: 'SymbolicTensor' object has no attribute 'numpy'\n")
    assert error_line(traced) == "AttributeError: 'SymbolicTensor' object has no attribute 'numpy' (at /home/me/train.py:18)"
    assert error_line(ValueError("bad value\nmore detail")) == "ValueError: bad value"
    assert error_line(RuntimeError()) == "RuntimeError"
