"""diagnose() and sweep() with JAX and PyTorch steps (CPU builds) fed by tf.data, end to end."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("jax", reason="JAX is in the test extra: pip install -e '.[test]'")
pytest.importorskip("torch", reason="PyTorch is in the test extra: pip install -e '.[test]'")

import pipediag  # noqa: E402
from pipediag import stats  # noqa: E402
from pipediag.api.sweep import sweep
from pipediag.records.run import StopRule  # noqa: E402
from pipediag.results.sweep import OK, OUT_OF_MEMORY, SKIPPED  # noqa: E402
from tests.fixtures import frameworks as F  # noqa: E402

pytestmark = pytest.mark.slow
RULE = StopRule(max_seconds=1.5, min_seconds=0.3, min_steps=10, warmup_steps=2)
TWO = ("synthetic", "pipeline")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "frameworks.py")


def test_jax_step_fed_numpy_batches():
    d = pipediag.diagnose(F.vectors, step=F.jax_step(), batch_format="numpy", stop_rule=RULE, modes=TWO)
    assert d.step.framework == "jax" and "block_until_ready" in d.step.sync
    assert d.modes["synthetic"].steps >= 10 and d.modes["pipeline"].steps >= 10
    assert d.verdict.bottleneck in ("compute", "input")  # a CPU machine: which one is not the point here
    assert d.modes["synthetic"].peak_memory is None  # JAX on the CPU keeps no device memory stats
    assert "no NVML" in d.modes["synthetic"].peak_memory_reason
    assert d.to_dict()["step"]["framework"] == "jax"
    # JAX dispatches asynchronously: the modes keep one step in flight while fetching the next batch.
    synthetic, pipeline = d.runs["synthetic"], d.runs["pipeline"]
    assert synthetic.overlapped and pipeline.overlapped
    assert pipeline.hideable_ns == int(stats.median(synthetic.block_ns))
    assert all(0 <= w <= f for w, f in zip(pipeline.wait_ns, pipeline.fetch_ns))


def test_jax_step_fed_dlpack_batches():
    d = pipediag.diagnose(F.vectors, step=F.jax_dlpack_step(), batch_format="dlpack", stop_rule=RULE, modes=TWO)
    assert d.step.batch_format == "dlpack" and d.step.framework == "jax"
    assert d.modes["pipeline"].steps >= 10


def test_torch_step_fed_dlpack_batches():
    d = pipediag.diagnose(F.vectors, step=F.torch_step(), batch_format="dlpack", stop_rule=RULE, modes=TWO)
    assert d.step.framework == "torch"
    assert d.modes["synthetic"].steps >= 10


def test_jax_step_that_returns_nothing_is_waited_for_with_a_barrier():
    step = F.jax_silent_step()
    d = pipediag.diagnose(F.vectors, step=step, batch_format="numpy", stop_rule=RULE, modes=TWO)
    assert "returned nothing to wait on" in d.step.sync
    assert step.state["last"].is_ready()


def test_jax_out_of_memory_is_a_memory_verdict_with_jax_fixes():
    d = pipediag.diagnose(F.vectors, step=F.jax_oom_step(), batch_format="numpy", stop_rule=RULE)
    assert d.verdict.bottleneck == "memory" and d.verdict.confidence == "high"
    assert d.runs["synthetic"].error.framework == "jax"
    assert "RESOURCE_EXHAUSTED" in d.runs["synthetic"].error.message
    kinds = [f.kind for f in d.fixes]
    assert kinds[:2] == ["batch_size", "gradient_accumulation"]
    assert "optax.MultiSteps" in d.fixes[1].code
    assert "mixed_precision" not in kinds  # no GPU here: half-width activations are not offered


def test_sweep_finds_the_oom_edge_and_skips_larger_sizes():
    s = sweep(F.vectors, [8, 16, 32, 64], step=F.jax_oom_from_32_step(), batch_format="numpy", stop_rule=RULE)
    assert [p.status for p in s.points] == [OK, OK, OUT_OF_MEMORY, SKIPPED]
    assert (s.oom_edge.largest_fitting, s.oom_edge.smallest_oom) == (16, 32)
    assert s.points[0].examples_per_sec > 0 and s.points[1].examples_per_sec > 0
    assert len(s.knee.gains) == 1 and s.knee.gains[0].from_batch == 8
    assert s.step.framework == "jax"
    again = type(s).from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s


def test_sweep_cli_writes_json_and_report_prints_it(tmp_path, cli_main, monkeypatch):
    """What the command writes and prints, by its `main` in this process (the JAX step runs here, as
    in the tests above)."""
    out = tmp_path / "sweep.json"
    monkeypatch.setenv("COLUMNS", "120")
    run = cli_main
    page = tmp_path / "sweep.html"
    result = run("sweep", f"{FIXTURES}:vectors", "--step", f"{FIXTURES}:jax_step", "--batch-format", "numpy",
                 "--batch-sizes", "8,32", "--max-seconds", "1", "--json", str(out), "--html", str(page), "--quiet")
    assert result.returncode == 0, result.stderr
    html = page.read_text(encoding="utf-8")
    assert 'id="chart-sweep"' in html and "<td>32</td>" in html
    assert "Batch sizes" in result.stdout and "knee:" in result.stdout
    data = json.loads(out.read_text())
    assert data["kind"] == "sweep" and [p["batch_size"] for p in data["points"]] == [8, 32]
    again = run("report", str(out))
    assert again.returncode == 0 and "Batch sizes" in again.stdout


def test_gpu_memory_limit_without_a_gpu_is_a_usage_error():
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run([sys.executable, "-m", "pipediag", "sweep", f"{FIXTURES}:vectors", "--batch-sizes", "8,16",
                             "--gpu-memory-limit", "1024"], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=120)
    assert result.returncode == 2 and "--gpu-memory-limit needs an NVIDIA GPU" in result.stderr
