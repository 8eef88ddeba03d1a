"""The sweep report and its JSON, on plain numbers."""

import json

import pytest
from rich.console import Console

from pipediag.analysis.gpu import PeakMemory
from pipediag.analysis.sweep import Rate, find_knee, oom_edge
from pipediag.commands.sweep import parse_batch_sizes
from pipediag.errors import UsageError
from pipediag.records.memory import MemoryLimit
from pipediag.report.terminal.sweep import render_sweep
from pipediag.results.sweep import OK, OUT_OF_MEMORY, SKIPPED, Sweep, SweepPoint
from tests.summaries import environment

GiB = 2**30


def point(b, rate, status=OK, peak=None):
    return SweepPoint(b, status, rate, None if rate is None else (rate * 0.97, rate * 1.03), None if rate is None else rate * 0.95,
                      None, None if rate is None else 1000 * b / rate, 0.01, 90.0, 80.0,
                      None if peak is None else PeakMemory(peak, "jax Device.memory_stats()", "mode", 3 * GiB),
                      None, "compute" if status == OK else None)


def a_sweep():
    points = (point(64, 100_000, peak=GiB // 2), point(256, 300_000, peak=GiB), point(1024, 330_000, peak=2 * GiB),
              point(4096, None, OUT_OF_MEMORY), SweepPoint(16384, SKIPPED, *([None] * 11), note="skipped"))
    ran = [p for p in points if p.status == OK]
    limit = MemoryLimit(3 * GiB, 140 * GiB, ["jax: XLA_PYTHON_CLIENT_MEM_FRACTION=0.0214, read when its GPU backend starts"])
    return Sweep(status="complete", target="sweep.py:make_dataset", step=None, environment=environment(), points=points,
                 knee=find_knee([Rate(p.batch_size, p.examples_per_sec, p.examples_per_sec_ci) for p in ran]),
                 oom_edge=oom_edge([p.batch_size for p in ran], [4096], {p.batch_size: p.peak_memory.bytes for p in ran},
                                   limit.text),
                 memory_limit=limit, settings={"batch_sizes": [64, 256, 1024, 4096, 16384]}, elapsed_s=42.0,
                 created_at="2026-11-30T10:00:00+00:00")


def test_sweep_report_rows_knee_and_edge():
    console = Console(width=130, record=True, color_system=None)
    console.print(render_sweep(a_sweep()))
    out = console.export_text()
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert "1.73x" in rows["256"]  # (300k / 100k) ** (1/2): per doubling, over two doublings
    assert "compute ← knee" in rows["256"]
    assert "out of memory" in rows["4096"] and "skipped" in rows["16384"]
    assert "knee: batch size 256 (300000 examples/s)" in out
    assert "memory: fits at 1024 (peak 2.00 GiB), runs out of memory at 4096 (a 3072 MiB card simulated on 140.0 GiB)" in out
    assert "limit applied: jax: XLA_PYTHON_CLIENT_MEM_FRACTION=0.0214" in out


def test_sweep_json_round_trip():
    s = a_sweep()
    data = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert data["kind"] == "sweep" and data["schema_version"] == 2
    assert Sweep.from_dict(data) == s
    with pytest.raises(UsageError, match="not a sweep file"):
        Sweep.from_dict({**data, "kind": None})


@pytest.mark.parametrize("text, sizes", [("16,32,64,128", (16, 32, 64, 128)), ("128, 16", (16, 128))])
def test_batch_sizes_parse_and_sort(text, sizes):
    assert parse_batch_sizes(text) == sizes


@pytest.mark.parametrize("text", ["16", "16,16", "16,x", "0,16"])
def test_bad_batch_sizes_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_batch_sizes(text)


def test_the_precision_is_in_the_json_and_both_reports_and_an_older_file_has_none_with_a_reason():
    from dataclasses import replace

    from pipediag.report.html.pages import render_page

    s = replace(a_sweep(), precision="mixed_float16")
    data = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert data["precision"] == "mixed_float16" and Sweep.from_dict(data) == s
    console = Console(width=130, record=True, color_system=None)
    console.print(render_sweep(s))
    assert "precision: mixed_float16 (the Keras model's dtype policy)" in console.export_text()
    assert "mixed_float16 (the Keras model&#x27;s dtype policy)" in render_page(s)
    # written before pipediag recorded it: the user's builder may have set any policy, so unknown
    del data["precision"], data["precision_reason"]
    old = Sweep.from_dict(data)
    assert old.precision is None and old.precision_reason.startswith("not recorded")
    console = Console(width=130, record=True, color_system=None)
    console.print(render_sweep(old))
    assert "precision: unknown (not recorded: the file was written before" in console.export_text()
