"""Real Comparisons without TensorFlow: rounds run on a fake clock, assembled by compare_api.conclude."""

import random

from pipediag.analysis.compare import LookPlan
from pipediag.api.compare import conclude
from pipediag.modes.compare import ComparePlan, Side, run_rounds
from pipediag.records.element import ElementInfo, Leaf
from pipediag.records.readings import CpuReading, Sample, SampleLog
from pipediag.records.stage import Stage
from pipediag.records.step import StepInfo
from pipediag.results.compare import SideInfo
from pipediag.verdict.compare import is_clear
from tests.modes.test_compare import FakeClock, feed, stepper
from tests.summaries import GiB, environment


def side_info(label, stages, batch_size=32, scale=1.0):
    element = ElementInfo(leaves=(Leaf("[0]", "dense", "float32", (None, 8)), Leaf("[1]", "dense", "int64", (None,))),
                          batch_size=batch_size, batch_bytes=1024)
    return SideInfo(label=label, source="live", element=element, stages=tuple(stages), cardinality="infinite",
                    first_batch_ms=12.0, rate_scale=scale)


STAGES_A = (Stage(0, "n0", "TensorSliceDataset", "source"), Stage(1, "n1", "MapDataset", "map", function="decode"),
            Stage(2, "n2", "BatchDatasetV2", "batch", buffer_size=32))
STAGES_B = (Stage(0, "n0", "TensorSliceDataset", "source"),
            Stage(1, "n1", "ParallelMapDatasetV2", "parallel_map", function="decode", parallelism=-1),
            Stage(2, "n2", "BatchDatasetV2", "batch", buffer_size=32))


def comparison(a_ms=10.0, b_ms=5.0, jitter=0.05, fail_if_slower=None, max_seconds=60.0, max_rounds=30, seed=1,
               notes=()):
    clock = FakeClock()
    rng = random.Random(seed)
    plan = ComparePlan(looks=LookPlan(max_rounds=max_rounds), max_seconds=max_seconds)
    rounds = run_rounds(Side("A", feed(clock, a_ms, jitter, rng)), Side("B", feed(clock, b_ms, jitter, rng)),
                        stepper(clock, 2), plan, clear=lambda iv: is_clear(iv, 0.05, fail_if_slower), clock_ns=clock)
    cpu = CpuReading(60.0, (70.0, 50.0), 110.0, 0.0, 2 * GiB, 12 * GiB, 24 * GiB)
    log = SampleLog(interval_s=0.1, samples=tuple(Sample(t, cpu) for t in range(0, clock.ns, 100_000_000)),
                    gpu_unavailable_reason="NVML could not start")
    return conclude(
        side_info("data.py:make_dataset", STAGES_A), side_info("data.py:make_dataset_v2", STAGES_B),
        StepInfo(kind="standin", description="stand-in model (an MLP)"), rounds, None, environment(), plan,
        0.05, fail_if_slower, log, list(notes), clock.ns / 1e9, 32, "tf",
    )
