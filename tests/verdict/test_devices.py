"""Evidence lines for a job on several GPUs (an idle device, a straggler): on scripted windows, and
on the scripted NVML through the sampler and the per-mode summaries."""

import math
from dataclasses import replace

from pipediag.analysis.modes import summarize
from pipediag.backends.fake_nvml import FakeGpu, FakeNvml
from pipediag.records.run import ModeRun
from pipediag.records.verdict import Verdict
from pipediag.samples.gpu import GpuReader
from pipediag.samples.sampler import Sampler
from pipediag.samples.selection import GpuSelection
from pipediag.verdict.devices import device_lines, idle_devices, stragglers, with_device_lines
from tests.summaries import summary


def window(index, util, half=2.0):
    base = summary("synthetic", 100.0, gpu_util=util).gpu
    return replace(base, index=index, uuid=f"GPU-{index}", util_pct=util,
                   util_pct_ci=None if half is None else (util - half, util + half))


def mode(name, *utils, half=2.0):
    windows = tuple(window(k, u, half) for k, u in enumerate(utils))
    return replace(summary(name, 100.0, gpu_util=sum(utils) / len(utils)), gpu=windows[0], gpus=windows)


def test_an_idle_gpu_beside_busy_ones():
    [found] = idle_devices(mode("pipeline", 90.0, 88.0, 0.5, half=1.0))
    assert (found.kind, found.index) == ("idle", 2)
    assert stragglers(mode("pipeline", 90.0, 88.0, 0.5, half=1.0)) == []  # idle is its own line, not a straggler


def test_every_gpu_idle_is_no_device_line():
    assert idle_devices(mode("pipeline", 1.0, 0.0, 0.5, half=0.5)) == []  # the GPU rules speak to that


def test_a_straggler_with_intervals_apart():
    [found] = stragglers(mode("pipeline", 92.0, 90.0, 55.0, 91.0))
    assert (found.kind, found.index, found.peers_util_pct) == ("straggler", 2, (92.0, 90.0, 91.0))


def test_noise_does_not_make_a_straggler():
    assert stragglers(mode("pipeline", 92.0, 90.0, 55.0, 91.0, half=20.0)) == []  # intervals overlap
    assert stragglers(mode("pipeline", 92.0, 90.0, 55.0, 91.0, half=None)) == []  # too few readings to tell
    assert stragglers(mode("pipeline", 92.0, 90.0, 72.0, 91.0, half=0.5)) == []  # 19 points: not far less


def test_a_straggler_only_when_fed_is_the_input_sides():
    lines, facts = device_lines({"synthetic": mode("synthetic", 95.0, 94.0, 93.0),
                                 "pipeline": mode("pipeline", 80.0, 79.0, 30.0)})
    assert facts == {"straggler_gpus": [2]}
    [line] = lines
    assert line.startswith("GPU 2 (GPU-2) straggles: busy 30% (95% 28–32%) in pipeline mode, against 79–80% on")
    assert line.endswith("with free input (synthetic mode) it kept up: the input side feeds it late")


def test_a_straggler_in_both_modes_is_the_steps_own_split_told_once():
    lines, facts = device_lines({"synthetic": mode("synthetic", 95.0, 40.0), "pipeline": mode("pipeline", 80.0, 30.0)})
    assert facts == {"straggler_gpus": [1]} and len(lines) == 1
    assert "so it did with free input (synthetic mode): the step's own split, not the input" in lines[0]


def test_one_gpu_adds_nothing_to_the_verdict():
    verdict = Verdict("compute", "high", "compute-bound", ("GPU busy 97%",))
    one = {"synthetic": summary("synthetic", 100.0, gpu_util=97.0), "pipeline": summary("pipeline", 99.0, gpu_util=96.0)}
    assert with_device_lines(verdict, one) is verdict


def test_on_the_scripted_nvml_idle_and_straggler_through_the_sampler():
    """Four scripted GPUs: GPU 3 never runs a kernel; GPU 2 keeps up with free input (the first
    three seconds, synthetic mode) and falls to ~40% busy when fed (the next three, pipeline)."""
    now = {"s": 0.0}

    def busy(level):
        return lambda t: level + 4.0 * math.sin(7.0 * t)  # a wobble, as real readings have

    def gpu2(t):
        return busy(94.0)(t) if t < 3.0 else busy(40.0)(t)

    gpus = [FakeGpu(util_pct=busy(95.0)), FakeGpu(util_pct=busy(93.0)), FakeGpu(util_pct=gpu2),
            FakeGpu(util_pct=0.0)]
    fake = FakeNvml(gpus, clock_s=lambda: now["s"])
    sampler = Sampler(gpu_reader=GpuReader(fake, gpus=GpuSelection.choose("0,1,2,3", environ={})), hz=10,
                      clock_ns=lambda: int(now["s"] * 1e9))
    sampler.gpu_reader.open()
    sampler.cpu_reader.prime()
    for tick in range(1, 61):
        now["s"] = tick / 10
        sampler.sample_once()
    log = sampler.stop()

    def run(name, start_s, end_s):
        steps = int((end_s - start_s) * 100)
        return ModeRun(name=name, start_ns=int(start_s * 1e9), end_ns=int(end_s * 1e9), wait_ns=(0,) * steps,
                       compute_ns=(10_000_000,) * steps, first_step_ns=None, warmup_steps=0, warmup_ns=0,
                       stop_reason="stable")

    modes = {"synthetic": summarize(run("synthetic", 0.05, 3.0), log),
             "pipeline": summarize(run("pipeline", 3.05, 6.0), log)}
    assert [g.index for g in modes["pipeline"].gpus] == [0, 1, 2, 3]
    assert modes["pipeline"].gpus[0].uuid == "GPU-fake0000-0000-0000-0000-000000000000"
    lines, facts = device_lines(modes)
    assert facts == {"idle_gpus": [3], "straggler_gpus": [2]}
    assert [line.split(":")[0] for line in lines] == [
        "GPU 3 (GPU-fake0000-0000-0000-0000-000000000003) idle",
        "GPU 2 (GPU-fake0000-0000-0000-0000-000000000002) straggles",
    ]
    assert lines[1].endswith("the input side feeds it late")


def test_feeding_n_devices_says_how_many_the_pipeline_keeps_fed():
    from pipediag.verdict.devices import feeding_line

    modes = {"synthetic": summary("synthetic", 40.0, rel_ci=0.02), "input_only": summary("input_only", 20.0, rel_ci=0.02)}
    text, facts = feeding_line(modes, tuple(f"gpu:{k}" for k in range(8)))
    assert text == ("the step ran on 8 devices (gpu:0–gpu:7): with free input they take 40.0 global batches/s "
                    "together, 5.0/s per device's share (1/8 of each batch); the pipeline alone delivers 20.0/s, "
                    "0.50x that: enough for 4.0 of the 8 devices (95% 3.8–4.2)")
    assert facts == {"devices": 8, "devices_fed": 4.0}
    plenty = {**modes, "input_only": summary("input_only", 100.0, rel_ci=0.02)}
    assert "enough for all 8; it would keep 20.0 such devices fed" in feeding_line(plenty, tuple(f"gpu:{k}" for k in range(8)))[0]
    near = {**modes, "input_only": summary("input_only", 39.0, rel_ci=0.1)}
    assert "about what the 2 devices take (1.9 of them, 95% 1.7–2.2)" in feeding_line(near, ("gpu:0", "gpu:1"))[0]
    assert feeding_line(modes, ("gpu:0",)) == (None, {})  # one device: nothing to say
