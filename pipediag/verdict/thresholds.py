"""The thresholds the verdict uses, in one place. docs/verdict.md explains each choice.

They are judgement calls, not measurements of one machine: each has a reason that does not
depend on this machine's noise, and tests pin the behaviour on both sides of each.
"""

# Share of step time the training loop waited for the next batch (pipeline mode).
# The TensorFlow profiler's input-pipeline analyzer calls >= 20% "highly input-bound" and
# >= 5% "moderately input-bound"; below 5% input is not what limits the step.
INPUT_WAIT_HIGH = 0.20
INPUT_WAIT_MODERATE = 0.05

# A slowdown of the fed step against the synthetic one counts only when at least this large
# *and* the two rates' 95% intervals do not overlap. FastFlow uses a 1.3x gap to call a job
# CPU-bound; we accept a smaller gap because our intervals already guard against noise.
GAP_SIGNIFICANT = 1.15

# The input side alone outruns the step by this much: the input could feed the step, so waiting
# in pipeline mode means missing overlap (prefetch), not too little input capacity.
INPUT_HEADROOM = 1.3

# With free input, a GPU busy less than this share of the time is starved by the host
# (Python dispatch, per-step overhead), not by its own compute.
GPU_BUSY_FOR_COMPUTE_PCT = 50.0

# GPM (Hopper and newer): how much of the chip worked while NVML called the GPU busy.
# NVIDIA's DCGM guidance for SM activity: >= 80% is necessary (not sufficient) for effective use,
# < 50% "likely indicates ineffective GPU usage". While a kernel ran, fewer than a quarter of the
# SMs had work (half DCGM's "ineffective" line): the GPU is busy but barely working — kernels too
# small to fill it, one after another (launch overhead): a host-side problem, as idle time is.
SM_ACTIVE_WHILE_BUSY_LOW_PCT = 25.0
# DCGM's line itself, over the whole window: SM activity under 50% "likely indicates ineffective
# GPU usage". A step that limits training while its SMs work less than this (and no arithmetic
# pipe or DRAM is busy) is compute-bound only in name: it leaves most of the chip idle.
SM_ACTIVE_INEFFECTIVE_PCT = 50.0
# DRAM bandwidth: DCGM puts the practical peak near 80% of the theoretical one and calls >= 50%
# heavy traffic. A step that moves that much while no arithmetic pipe (tensor cores, FP32, FP16)
# is busy 30% of the time waits on memory, not on math: memory-bandwidth-bound.
DRAM_BW_HIGH_PCT = 50.0
MATH_ACTIVE_LOW_PCT = 30.0

# Memory.
GPU_MEMORY_FULL_FRAC = 0.95
HOST_MEMORY_LOW_FRAC = 0.05  # available host memory below 5% of total
# The pipeline's shuffle buffers alone (buffer size x measured bytes per element) hold more than
# the RAM budget (or, without one, the host's memory). The budget itself is the line: a limit is
# a limit, and buffers that cannot fit in it leave nothing for TensorFlow, the model or the batches.
BUFFERS_OVER_BUDGET_FRAC = 1.0

# CPU pattern while the step waited, in cores' worth of this process's busy time.
CPU_SATURATED_FRAC = 0.85  # busy >= 85% of all cores: CPU-bound preprocessing
ONE_CORE_LOW, ONE_CORE_HIGH = 0.6, 1.4  # about one core's worth on a machine with more: serial/GIL
CPU_IDLE_CORES = 0.5  # under half a core busy: waiting on I/O or sleeps, not computing
IOWAIT_NOTABLE_PCT = 10.0
# Other processes using at least half a core during a mode make its timings contended: evidence
# says so and confidence drops. (Seen on the development machine: a parallel pip install made an
# input-bound demo's own serial map look like "all cores saturated" when judged system-wide.)
OTHER_LOAD_CORES = 0.5
# ...but only while less than one core was left idle: otherwise the other work ran beside the
# mode, not instead of it (on the 16-core H200 host, 0.5 cores of background with 14 cores idle
# had lowered a clear compute verdict to low).
CONTENDED_IDLE_CORES = 1.0

# The container's CPU quota (docs/verdict.md, "The container"): a mode throttled in at least this
# share of its CFS periods ran at its quota. Kubernetes' own monitoring (kubernetes-mixin's
# CPUThrottlingHigh alert) uses the same line: above 25% of periods throttled, the quota is what
# the workload is short of; below it, throttling is the odd burst hitting the limit.
THROTTLED_FRAC = 0.25

# Trust in a mode's numbers.
MIN_STEPS = 10  # fewer timed steps than this: inconclusive
WIDE_CI_REL = 0.25  # a rate interval wider than +-25%: noisy, confidence drops

# The host edge (the hand-over, docs/verdict.md): the step's wait in pipeline mode is the hand-over
# itself when it is at most this many times what handing over an already-produced batch costs.
# Beside the pipeline's own threads get_next costs more than beside a trivial dataset (the
# iterator's threads and the step compete for cores); a pipeline that cannot keep up makes the
# step wait for whole batches to be made, and then the input-alone rate is below the step's.
HANDOVER_WAIT_MARGIN = 2.0

# The device copy of each batch, made in line before the step: worth hiding (prefetch to the
# device) when it takes at least this share of the free step. Hidden behind the step, a quarter
# of the step is up to 1.25x: beyond GAP_SIGNIFICANT, so a gain of that size would be measurable.
DEVICE_COPY_SHARE = 0.25
