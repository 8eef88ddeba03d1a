"""CPU/GPU use over a side's turns: only samples whose whole interval lies inside a turn count."""

from pipediag.analysis.usage import usage
from pipediag.records.readings import CpuReading, GpuReading, Sample, SampleLog

MS = 1_000_000


def cpu(pct):
    return CpuReading(pct, (pct, pct), 2 * pct, None, 1, 2, 4)


def test_samples_straddling_the_start_of_a_turn_are_left_out():
    # Samples every 100 ms; the other side ran until 250 ms at 100% CPU, this side at 20% after.
    samples = tuple(Sample(t * MS, cpu(100.0 if t <= 300 else 20.0), (GpuReading(0, 50.0, None, None, None, None),))
                    for t in range(100, 1001, 100))
    log = SampleLog(interval_s=0.1, samples=samples)
    u = usage(log, [(250 * MS, 1000 * MS)])
    # 300 ms covers 200-300 ms (partly the other side's turn): out. 400..1000 ms: in.
    assert u.samples == 7 and u.cpu_util_pct == 20.0 and u.gpu_util_pct == 50.0 and u.gpu_util_reason is None


def test_no_gpu_is_none_with_the_reason_never_zero():
    log = SampleLog(interval_s=0.1, samples=(Sample(500 * MS, cpu(10.0)),), gpu_unavailable_reason="no NVML")
    u = usage(log, [(0, 1000 * MS)])
    assert u.gpu_util_pct is None and u.gpu_util_reason == "no NVML"
    empty = usage(SampleLog(interval_s=0.1, samples=()), [(0, 50 * MS)])
    assert empty.cpu_util_pct is None and "no sample fell wholly inside" in empty.gpu_util_reason
