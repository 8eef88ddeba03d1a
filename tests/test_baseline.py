"""`pipediag baseline` and `compare --baseline A.json B.json`: profiles on scripted numbers, the
CLI in-process, and real (slow) runs on the CPU with the Keras TensorFlow and JAX backends."""

import json
import os
import random
import subprocess
import sys

import pytest
from rich.console import Console

from pipediag import cli
from pipediag.analysis.gpu import PeakMemory
from pipediag.analysis.sweep import oom_edge
from pipediag.api.baseline import _point, measure_sizes
from pipediag.errors import UsageError
from pipediag.records.run import ErrorInfo, ModeRun
from pipediag.report.html.pages import render_page
from pipediag.report.terminal.baseline import render_profile
from pipediag.results.baseline import (
    INTERRUPTED,
    OK,
    OUT_OF_MEMORY,
    SKIPPED,
    BaselinePoint,
    BaselineProfile,
    compare_profiles,
)
from tests.summaries import environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MS = 1_000_000
GiB = 2**30


def text(renderable, width=120):
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def point(b, step_ms, seed=0, status=OK, n=60):
    if status != OK:
        return BaselinePoint(b, status, note="skipped: the time budget (60 s) was spent" if status == SKIPPED else None,
                             error=ErrorInfo("ResourceExhaustedError", "OOM when allocating", "tensorflow")
                             if status == OUT_OF_MEMORY else None)
    rng = random.Random(seed)
    step_ns = tuple(int(step_ms * MS * (1 + rng.uniform(-0.01, 0.01))) for _ in range(n))
    rate = b * 1000 / step_ms
    return BaselinePoint(b, OK, rate, (rate * 0.99, rate * 1.01), step_ms, (step_ms * 0.99, step_ms * 1.01),
                         step_ms * 1.02, step_ns, 900.0, 1.5, 6.0, "stable",
                         PeakMemory(b * GiB // 16, "jax Device.memory_stats()", "mode", 140 * GiB), None, 2 * GiB,
                         97.0, None, 81.0, 610.0)


def a_profile(points, model="resnet50", created="2026-12-01T20:00:00+00:00", precision="float32"):
    ran = [p for p in points if p.status == OK]
    edge = oom_edge([p.batch_size for p in ran], [p.batch_size for p in points if p.status == OUT_OF_MEMORY],
                    {p.batch_size: p.peak_memory.bytes for p in ran})
    return BaselineProfile("complete", model, "Keras ResNet-50", "the Keras jax backend has a GPU", "jax", "gpu",
                           25_636_712, environment(), tuple(points), edge,
                           {"batch_sizes": [p.batch_size for p in points], "budget_s": 170.0, "window_s": 6.0,
                            "warmup_steps": 2}, created_at=created, precision=precision)


def write(tmp_path, name, profile):
    path = tmp_path / name
    path.write_text(json.dumps(profile.to_dict()))
    return str(path)


def test_profile_json_round_trip_and_report():
    p = a_profile([point(64, 100), point(128, 190), point(256, 370, status=OUT_OF_MEMORY),
                   point(512, 0, status=SKIPPED)])
    d = json.loads(json.dumps(p.to_dict()))
    assert d["schema_version"] == 2 and d["kind"] == "baseline" and "environment" in d
    assert BaselineProfile.from_dict(d) == p
    out = text(render_profile(p))
    assert "Keras ResNet-50, Keras jax backend on the gpu, precision float32, 25,636,712 parameters" in out
    assert "Memory: fits at 128 (peak 8.00 GiB), runs out of memory at 256" in out
    assert "batch 256: out of memory (ResourceExhaustedError: OOM when allocating)" in out
    assert "batch 512: skipped: the time budget (60 s) was spent" in out
    assert "SM act" in out and "power W" in out
    page = render_page(p)
    assert 'id="chart-baseline"' in page and "runs out of memory at 256" in page and "<svg" in page


def test_the_precision_is_in_the_json_and_both_reports_and_an_older_file_reads_as_float32():
    p = a_profile([point(64, 60), point(128, 110)], precision="mixed_float16")
    d = json.loads(json.dumps(p.to_dict()))
    assert d["precision"] == "mixed_float16" and BaselineProfile.from_dict(d) == p
    assert "Keras jax backend on the gpu, precision mixed_float16" in text(render_profile(p))
    page = render_page(p)
    assert "mixed_float16 (Keras dtype policy)" in page and "<title>pipediag baseline: resnet50 mixed_float16" in page
    # written before the option: pipediag then always built its model under Keras' default policy
    del d["precision"]
    assert BaselineProfile.from_dict(d).precision == "float32"


def test_compare_baseline_says_when_the_precisions_differ(tmp_path, capsys):
    a = write(tmp_path, "a.json", a_profile([point(64, 100, 1), point(128, 190, 2)]))
    b = write(tmp_path, "b.json", a_profile([point(64, 60, 3), point(128, 110, 4)], precision="mixed_bfloat16"))
    assert cli.main(["compare", "--baseline", a, b]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "differs: precision: float32 vs mixed_bfloat16 (the ratios measure the precision change" in out
    assert "(resnet50, float32, jax on the gpu" in out and "(resnet50, mixed_bfloat16, jax on the gpu" in out
    assert "Verdict: B is" in out and "faster" in out  # allowed: what mixed precision gains is a fair question
    assert cli.main(["compare", "--baseline", a, a]) == 0
    assert "differs: precision" not in capsys.readouterr().out


def test_the_reference_model_is_built_under_the_precision_and_the_policy_put_back():
    pytest.importorskip("tensorflow")
    from pipediag.api.baseline import MODELS, _Profiler
    from pipediag.backends.tf import keras

    profiler = _Profiler(MODELS["resnet20"], keras.backend.backend(), "cpu", 60.0, None, None, None, "mixed_bfloat16")
    profiler.build(None)
    layers = profiler.keras_model.layers
    assert {layer.compute_dtype for layer in layers if isinstance(layer, keras.layers.Conv2D)} == {"bfloat16"}
    assert profiler.keras_model.dtype_policy.name == "mixed_bfloat16"
    assert keras.mixed_precision.dtype_policy().name == "float32"


def test_an_unknown_precision_is_refused_before_anything_runs(capsys):
    assert cli.main(["baseline", "--precision", "float16"]) == 2
    assert "invalid choice: 'float16'" in capsys.readouterr().err


def test_a_profile_file_of_another_kind_is_refused():
    with pytest.raises(UsageError, match="not a baseline profile"):
        BaselineProfile.from_dict({"kind": "sweep", "schema_version": 1})


def test_profiles_of_different_models_do_not_compare():
    with pytest.raises(UsageError, match="different models") as error:
        compare_profiles(a_profile([point(64, 100)]), a_profile([point(64, 100)], model="resnet20"))
    assert "--model resnet50" in error.value.hint


def test_compare_baseline_a_profile_with_itself_says_no_difference(tmp_path, capsys):
    a = write(tmp_path, "a.json", a_profile([point(64, 100), point(128, 190), point(256, 370)]))
    assert cli.main(["compare", "--baseline", a, a]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Verdict: no difference" in out and "B against A, per batch size" in out


def test_compare_baseline_a_slower_node(tmp_path, capsys):
    a = write(tmp_path, "a.json", a_profile([point(64, 100, 1), point(128, 190, 2)]))
    b = write(tmp_path, "b.json", a_profile([point(64, 100, 3), point(128, 190 / 0.85, 4)],
                                            created="2026-12-02T09:00:00+00:00"))
    assert cli.main(["compare", "--baseline", a, b]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Verdict: B is 15% slower at batch 128" in out
    assert "profile B again, and A if you can, before acting on it" in out
    assert cli.main(["compare", "--baseline", a, b, "--fail-if-slower", "10%"]) == 3
    assert cli.main(["compare", "--baseline", a, b, "--fail-if-slower", "20%"]) == 0


def test_compare_baseline_different_sizes_and_a_moved_oom_edge(tmp_path, capsys):
    a = write(tmp_path, "a.json", a_profile([point(64, 100, 1), point(128, 190, 2), point(256, 370, 3)]))
    b = write(tmp_path, "b.json", a_profile([point(32, 55, 4), point(64, 100, 5), point(128, 190, 6),
                                             point(256, 0, status=OUT_OF_MEMORY)]))
    assert cli.main(["compare", "--baseline", a, b]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Verdict: B ran out of memory at batch 256, where A ran" in out
    assert "not compared (measured in one profile only): B 32" in out


def test_compare_baseline_refuses_a_profile_against_a_pipeline(tmp_path, capsys):
    a = write(tmp_path, "a.json", a_profile([point(64, 100)]))
    other = tmp_path / "run.json"
    other.write_text(json.dumps({"schema_version": 1, "kind": "diagnosis"}))
    assert cli.main(["compare", "--baseline", a, str(other)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "is not (kind 'diagnosis')" in err and "HINT:" in err


def test_an_out_of_memory_mode_is_an_oom_point():
    run = ModeRun("batch 512", 0, 0, (), (), 5 * MS, 1, 5 * MS, "out_of_memory",
                  ErrorInfo("XlaRuntimeError", "RESOURCE_EXHAUSTED: Out of memory", "jax"))

    class Summary:
        batches_per_sec = batches_per_sec_ci = step_ms_median = step_ms_median_ci = step_ms_p90 = None
        first_step_ms, peak_memory, peak_memory_reason, rss_max_bytes = 5.0, None, "the step ran on the CPU", None
        gpu_util_pct, gpu_util_reason, gpu = None, "no GPU", None

    p = _point(512, run, Summary(), 6.0)
    assert p.status == OUT_OF_MEMORY and p.error.framework == "jax" and p.samples_per_sec is None


class Scripted:
    """A `measure` for measure_sizes: each size takes `setup_s` plus its window on a scripted clock;
    sizes in `oom` run out of memory, `interrupt_at` is interrupted."""

    def __init__(self, oom=(), setup_s=5.0, interrupt_at=None):
        self.now_s, self.oom, self.setup_s, self.interrupt_at = 0.0, set(oom), setup_s, interrupt_at
        self.windows = {}

    def __call__(self, b, window):
        self.windows[b] = window
        self.now_s += self.setup_s + window
        if b == self.interrupt_at:
            return BaselinePoint(b, INTERRUPTED), self.setup_s
        return (BaselinePoint(b, OUT_OF_MEMORY) if b >= min(self.oom, default=10**9) else point(b, 10)), self.setup_s


def schedule(sizes, scripted, budget_s=60.0, cap_s=6.0, find_oom_edge=False):
    points, notes = [], []
    status = measure_sizes(sizes, scripted, points, notes, budget_s=budget_s, cap_s=cap_s,
                           find_oom_edge=find_oom_edge, elapsed_s=lambda: scripted.now_s)
    return status, [(p.batch_size, p.status) for p in points], notes


def test_sizes_after_an_out_of_memory_one_are_skipped():
    status, points, _ = schedule((16, 32, 64, 128), Scripted(oom=(64,)))
    assert status == "complete" and points == [(16, OK), (32, OK), (64, OUT_OF_MEMORY), (128, SKIPPED)]


def test_the_budget_shortens_windows_then_skips_sizes():
    scripted = Scripted(setup_s=15.0)
    status, points, _ = schedule((16, 32, 64, 128), scripted, budget_s=60.0)
    assert scripted.windows[16] == 6.0  # the first size: the cap (its set-up is not known yet)
    assert scripted.windows[32] == pytest.approx(1.0)  # 39 s left for 3 sizes, 15 s set-up each: the shortest
    assert points[2:] == [(64, OK), (128, SKIPPED)]  # 23 s left fit 64's set-up and 1 s; then 7 s do not
    assert scripted.now_s <= 60.0


def test_find_oom_edge_doubles_until_memory_runs_out_or_the_budget_ends():
    status, points, _ = schedule((16, 32), Scripted(oom=(256,), setup_s=1.0), budget_s=600.0, find_oom_edge=True)
    assert points == [(16, OK), (32, OK), (64, OK), (128, OK), (256, OUT_OF_MEMORY)]
    _, short, _ = schedule((16, 32), Scripted(oom=(4096,), setup_s=10.0), budget_s=60.0, find_oom_edge=True)
    assert short[-1][1] == SKIPPED and all(s != OUT_OF_MEMORY for _, s in short)


def test_an_interruption_keeps_what_was_measured():
    status, points, notes = schedule((16, 32, 64), Scripted(interrupt_at=32))
    assert status == "interrupted" and points == [(16, OK), (32, INTERRUPTED), (64, SKIPPED)]
    assert notes == ["interrupted at batch size 32: the profile stops there"]


# -- real runs on this machine's CPU (slow) ----------------------------------------------------------
# The real runs' arguments, by precision; each writes PRECISION.json and PRECISION.html in its folder.
RUNS = {"float32": ("--batch-sizes", "2,4"), "mixed_float16": ("--batch-sizes", "2", "--precision", "mixed_float16"),
        "mixed_bfloat16": ("--batch-sizes", "2", "--precision", "mixed_bfloat16")}


def baseline_argv(precision, folder):
    return ["baseline", *RUNS[precision], "--budget", "600", "--seconds-per-size", "1", "--quiet",
            "--json", str(folder / f"{precision}.json"), "--html", str(folder / f"{precision}.html")]


EACH = """
import contextlib, io, json, sys
from pipediag.cli import main
done = []
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    done.append({"code": code, "stdout": out.getvalue()})
print(json.dumps(done))
"""


@pytest.fixture(scope="module")
def jax_baselines(tmp_path_factory):
    """{precision: (the finished command, its folder)} for the JAX runs of this module, by
    `pipediag.cli.main` one after another in one process of the JAX backend (KERAS_BACKEND must be
    set before Keras is first imported): a process for the backend, not one per run."""
    folder = tmp_path_factory.mktemp("baseline-jax")
    precisions = ("float32", "mixed_bfloat16")
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="120", KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2")
    child = subprocess.run([sys.executable, "-c", EACH, json.dumps([baseline_argv(p, folder) for p in precisions])],
                           capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    assert child.returncode == 0, child.stderr[-3000:]
    done = json.loads(child.stdout.strip().splitlines()[-1])
    return {p: (subprocess.CompletedProcess(["pipediag", *baseline_argv(p, folder)], d["code"], d["stdout"],
                                            child.stderr), folder) for p, d in zip(precisions, done)}


def baseline_on(backend, precision, request, tmp_path):
    """`pipediag baseline` at `precision` with Keras on `backend`, and the folder it wrote in:
    TensorFlow's by `main` in this process (the tests' Keras runs on TensorFlow), JAX's from
    jax_baselines."""
    if backend == "jax":
        return request.getfixturevalue("jax_baselines")[precision]
    import keras

    assert backend == "tensorflow" and keras.backend.backend() == "tensorflow"
    return request.getfixturevalue("cli_main")(*baseline_argv(precision, tmp_path)), tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_baseline_runs_on_the_cpu_with_each_keras_backend(backend, tmp_path, cli_main, request):
    pytest.importorskip("tensorflow")
    pytest.importorskip(backend)
    done, folder = baseline_on(backend, "float32", request, tmp_path)
    out, page = folder / "float32.json", folder / "float32.html"
    assert done.returncode == 0, done.stderr[-3000:]
    d = json.loads(out.read_text())
    assert d["kind"] == "baseline" and d["backend"] == backend and d["device"] == "cpu" and d["model"] == "resnet20"
    assert "has no GPU" in d["model_reason"]
    for p in d["points"]:
        assert p["status"] == "ok", p
        assert p["samples_per_sec"] > 0 and p["step_ns"] and p["first_step_ms"] > 0
        assert p["step_ms_p50"] <= p["step_ms_p90"]
        assert p["peak_memory"] is None and p["peak_memory_reason"]  # the CPU: no device memory, and said why
        assert p["gpu_util_pct"] is None and p["gpu_util_reason"]
        assert p["rss_max_bytes"] > 0
    assert d["oom_edge"]["smallest_oom"] is None
    assert "pipediag baseline" in done.stdout and "<svg" in page.read_text()
    same = cli_main("compare", "--baseline", str(out), str(out))  # two saved profiles: no backend, no process
    assert same.returncode == 0 and "Verdict: no difference" in same.stdout, same.stderr[-2000:]
    assert d["precision"] == "float32" and not any("on the CPU" in n for n in d["notes"])


@pytest.mark.slow
@pytest.mark.parametrize("backend, precision", [("tensorflow", "mixed_float16"), ("jax", "mixed_bfloat16")])
def test_a_mixed_precision_baseline_runs_on_the_cpu_with_a_note(backend, precision, tmp_path, request):
    pytest.importorskip("tensorflow")
    pytest.importorskip(backend)
    done, folder = baseline_on(backend, precision, request, tmp_path)
    out = folder / f"{precision}.json"
    assert done.returncode == 0, done.stderr[-3000:]
    d = json.loads(out.read_text())
    assert d["precision"] == precision and d["device"] == "cpu"
    assert [p["status"] for p in d["points"]] == ["ok"], d["points"]
    assert any(n.startswith(f"{precision} on the CPU") for n in d["notes"]), d["notes"]
    assert f"precision {precision}" in " ".join(done.stdout.split())
