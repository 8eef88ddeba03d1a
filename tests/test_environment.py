"""The environment's GPU facts against the scripted NVML (no TensorFlow needed)."""

from rich.console import Console

from pipediag.backends.fake_nvml import FakeGpu, FakeNvml
from pipediag.environment import Environment, collect
from pipediag.report.environment import render_environment


def text(renderable):
    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_gpm_support_is_part_of_the_environment():
    with_gpm = collect(with_tensorflow=False, nvml_lib=FakeNvml([FakeGpu()]))
    without = collect(with_tensorflow=False, nvml_lib=FakeNvml([FakeGpu(gpm_supported=False)]))
    no_gpu = collect(with_tensorflow=False, nvml_lib=FakeNvml([], library_missing=True))
    assert (with_gpm.gpm_supported, with_gpm.gpm_reason) == (True, None)
    assert without.gpm_supported is False and "needs Hopper or newer" in without.gpm_reason
    assert no_gpu.gpm_supported is None
    assert "GPM         │ yes: SM, tensor-core and DRAM activity" in text(render_environment(with_gpm))
    assert Environment.from_dict(without.to_dict()) == without


def test_a_jax_or_torch_step_drops_the_tensorflow_sees_no_gpu_warning():
    env = collect(with_tensorflow=False, nvml_lib=FakeNvml([FakeGpu()]))
    warned = Environment.from_dict({**env.to_dict(), "warnings": [
        "NVML sees 1 GPU(s) but TensorFlow sees none (a CPU-only build): TensorFlow steps run on the CPU.",
        "another warning"]})
    assert warned.for_step("jax").warnings == ("another warning",) == warned.for_step("torch").warnings
    assert warned.for_step("tensorflow") == warned == warned.for_step(None)
