"""--samples-csv: every sample, its mode and phase; unknown values empty, never 0."""

import csv
import io
from dataclasses import replace

from pipediag.records.readings import CpuReading, GpuDevice, GpuReading, Sample, SampleLog
from pipediag.records.run import ModeRun
from pipediag.report.samples_csv import format_samples_csv
from tests.summaries import GiB, diagnosis


def rows(d):
    return list(csv.DictReader(io.StringIO(format_samples_csv(d))))


def cpu(iowait=0.0):
    return CpuReading(50.0, (70.0, 30.0), 100.0, iowait, GiB, 12 * GiB, 24 * GiB)


def run(name, warm_start, start, end):
    return ModeRun(name, start, end, (1,), (1,), None, 1, start - warm_start, "stable")


def test_each_sample_gets_its_mode_and_phase():
    samples = [Sample(t, cpu()) for t in (5, 15, 25, 35, 45, 55)]
    d = replace(diagnosis(), samples=SampleLog(0.1, tuple(samples)),
                runs={"synthetic": run("synthetic", 10, 20, 30), "pipeline": run("pipeline", 40, 50, 60)})
    got = [(r["time_ns"], r["mode"], r["phase"]) for r in rows(d)]
    assert got == [("5", "", "between"), ("15", "synthetic", "warmup"), ("25", "synthetic", "timed"),
                   ("35", "", "between"), ("45", "pipeline", "warmup"), ("55", "pipeline", "timed")]
    first = rows(d)[0]
    assert first["time_s"] == "0.000" and first["cpu0_pct"] == "70" and first["cpu1_pct"] == "30"
    assert not any(k.startswith("gpu") for k in first)  # no GPU: no GPU columns


def test_gpu_columns_and_missing_values_are_empty():
    gpus = (GpuReading(0, 87.0, 10 * GiB, 80 * GiB, 350.5, 1980.0), GpuReading(1, None, None, None, None, None))
    d = replace(diagnosis(), samples=SampleLog(0.1, (Sample(5, cpu(iowait=None), gpus),),
                                               gpu_devices=(GpuDevice(0, "H200", 80 * GiB), GpuDevice(1, "H200", None))))
    (row,) = rows(d)
    assert row["gpu0_util_pct"] == "87" and row["gpu0_power_w"] == "350.5" and row["gpu0_memory_used_bytes"] == str(10 * GiB)
    assert row["gpu1_util_pct"] == "" and row["gpu1_sm_clock_mhz"] == ""
    assert row["iowait_pct"] == ""
