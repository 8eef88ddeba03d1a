"""CPU contention and other processes' load: whether the step slowed beside the pipeline, and whether
the pipeline's CPU could have caused it."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.modes import ModeSummary, Ratio
from pipediag.verdict import thresholds as T
from pipediag.verdict.edges import Edge, ratio_interval

# How the contention rule is said in the evidence, before the readings that sat on its line.
CALLED_WHEN = ("CPU contention is called when both the fed step and the step itself are >= "
               f"{T.GAP_SIGNIFICANT:.2f}x slower")


def other_load_cores(m: ModeSummary) -> float:
    """Cores' worth of CPU used by other processes during a mode (system minus this process)."""
    if m.cpu_util_pct is None or m.process_cpu_pct is None or not m.cpu_per_core_pct:
        return 0.0
    return max(0.0, m.cpu_util_pct / 100.0 * len(m.cpu_per_core_pct) - m.process_cpu_pct / 100.0)


def host_idle_cores(m: ModeSummary) -> float:
    return max(0.0, len(m.cpu_per_core_pct or ()) * (1.0 - (m.cpu_util_pct or 0.0) / 100.0))


def idle_cores(m: ModeSummary) -> float:
    """Idle cores this process could have used: the host's, but in a container no more than its
    limit leaves (a 2-core quota at 2 cores' use has none, however many the host has idle)."""
    idle = host_idle_cores(m)
    host = len(m.cpu_per_core_pct or ())
    if m.effective_cores is not None and m.effective_cores < host and m.process_cpu_pct is not None:
        idle = min(idle, max(0.0, m.effective_cores - m.process_cpu_pct / 100.0))
    return idle


def contended_by_others(m: ModeSummary) -> bool:
    """Other processes took CPU this mode could have used: they used at least OTHER_LOAD_CORES
    and the machine had less than one core idle. (Half a core of background work on a 16-core
    host with 14 idle takes nothing from the pipeline; seen on the H200.) The host's idle cores,
    not the container's: other processes compete for the host's cores, not for the quota."""
    return other_load_cores(m) >= T.OTHER_LOAD_CORES and host_idle_cores(m) < T.CONTENDED_IDLE_CORES


@dataclass(frozen=True)
class PipelineCpu:
    """The pipeline's own CPU use at the rate the step took batches (see pipeline_cpu_at_fed_rate)."""

    cores: float  # cores' worth of this process's CPU the pipeline needs at the fed rate
    alone_cores: float  # this process's CPU in input_only mode
    alone_over_fed: float  # input_only rate / pipeline rate
    step_cores: float  # this process's CPU in synthetic mode: the step's own use
    most_slowdown: float | None  # the most the pipeline's CPU could slow the step; None: unbounded

    @property
    def too_light(self) -> bool:
        return self.most_slowdown is not None and self.most_slowdown < T.GAP_SIGNIFICANT

    def barely_ran_text(self) -> str:
        """What the pipeline cost at the fed rate, worked out from input_only mode."""
        return (f"the pipeline barely ran: alone it used {self.alone_cores:.2f} cores at {self.alone_over_fed:.0f}x "
                f"the fed rate, so about {self.cores:.3f} cores at the fed rate")

    def text(self, pipeline: ModeSummary, synthetic: ModeSummary) -> str:
        return (
            f"the step itself took {pipeline.compute_ms_median:.2f} ms beside the pipeline vs "
            f"{synthetic.compute_ms_median:.2f} ms alone, but {self.barely_ran_text()}; taken from the step's "
            f"{self.step_cores:.2f} cores that slows it by at most {self.most_slowdown:.2f}x, under the "
            f"{T.GAP_SIGNIFICANT:.2f}x contention line: not input; the slowdown came from elsewhere (other "
            "processes, the step's own variance), so confidence is lowered"
        )

    def near_line_text(self, contention: Contention) -> str:
        """A contention reading within its spread of the line, below it in value, that the
        pipeline's CPU could not have pushed over: not measured again."""
        return (
            f"{CALLED_WHEN}; " + "; ".join(e.text() for e in contention.edges)
            + f", within their spread of the line, but {self.barely_ran_text()}, which slows the step's "
            f"{self.step_cores:.2f} cores by at most {self.most_slowdown:.2f}x, under the line: not contention, "
            "whatever a longer run read, so the modes were not measured again"
        )


def pipeline_cpu_at_fed_rate(synthetic: ModeSummary, pipeline: ModeSummary,
                             input_only: ModeSummary | None) -> PipelineCpu | None:
    """How much CPU the pipeline needed while it fed the step, and the most that could slow it.

    tf.data runs in this process, so input_only mode's process CPU (cores busy) is the pipeline's
    cost at its own full rate; producing batches only as fast as the step takes them costs that
    scaled by fed rate / input-only rate (a prefetching pipeline idles once its buffer is full).
    A step that uses s cores alone (synthetic mode's process CPU), losing c cores' worth of time to
    the pipeline, does its work at s - c: it is slowed by at most s / (s - c). None when a number is
    unknown (then the contention rule decides as before)."""
    if input_only is None or not input_only.batches_per_sec or not pipeline.batches_per_sec:
        return None
    if input_only.process_cpu_pct is None or not synthetic.process_cpu_pct:
        return None
    alone = input_only.process_cpu_pct / 100.0
    ratio = input_only.batches_per_sec / pipeline.batches_per_sec
    cores = alone / ratio
    step = synthetic.process_cpu_pct / 100.0
    most = step / (step - cores) if cores < step else None
    return PipelineCpu(cores=cores, alone_cores=alone, alone_over_fed=ratio, step_cores=step, most_slowdown=most)


@dataclass(frozen=True)
class Contention:
    """The CPU-contention rule's two readings: the fed step against the free one (gap) and the
    step's own time beside the pipeline against alone, each held to GAP_SIGNIFICANT."""

    gap: Edge
    step: Edge
    gap_clear: bool  # the gap's interval lies above 1: the fed step is slower at all

    @property
    def edges(self) -> tuple[Edge, ...]:
        return (self.gap, self.step)

    @property
    def decided(self) -> bool:
        """Contention, with neither reading within its spread of the line."""
        return self.gap.above and self.gap_clear and self.step.above and not self.on_edge

    @property
    def on_edge(self) -> bool:
        """Both readings are at or near the line (at or above it, or their interval reaching it),
        both show a slowdown at all (a step faster beside the pipeline is not near contention,
        however wide its interval on a noisy machine), and at least one could fall on the other
        side of the line next run."""
        near = all((e.above or e.straddles) and e.value >= 1.0 for e in self.edges)
        return near and (self.gap.straddles or self.step.straddles)


def read_contention(gap: Ratio | None, synthetic: ModeSummary, pipeline: ModeSummary) -> Contention | None:
    if gap is None or not pipeline.compute_ms_median or not synthetic.compute_ms_median:
        return None
    step = ratio_interval(pipeline.compute_ms_median, pipeline.compute_ms_median_ci,
                          synthetic.compute_ms_median, synthetic.compute_ms_median_ci)
    return Contention(
        gap=Edge("cpu_contention", "the fed step's slowdown (synthetic over pipeline rate)", gap.value, gap.low,
                 gap.high, T.GAP_SIGNIFICANT),
        step=Edge("cpu_contention", "the step's own time beside the pipeline over alone", step[0], step[1], step[2],
                  T.GAP_SIGNIFICANT),
        gap_clear=gap.clearly_above_one,
    )
