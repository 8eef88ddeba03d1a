"""`diagnose()` on a scripted host of four GPUs: the chosen ones are read, each gets its window, the
JSON keeps them and the terminal shows a row per GPU. A real TensorFlow pipeline on the CPU."""

import json

import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.api import diagnose as api  # noqa: E402
from pipediag.backends.fake_nvml import FakeGpu, FakeNvml  # noqa: E402
from pipediag.records.run import StopRule  # noqa: E402
from pipediag.results.diagnose import Diagnosis  # noqa: E402

pytestmark = pytest.mark.slow
RULE = StopRule(max_seconds=1.0, min_seconds=0.5, min_steps=5, warmup_steps=2)


def _dataset():
    return tf.data.Dataset.range(100_000).map(lambda x: tf.ones([8]) * tf.cast(x, tf.float32)).batch(16)


def test_the_chosen_gpus_are_read_and_reported_each():
    fake = FakeNvml([FakeGpu(util_pct=90.0), FakeGpu(util_pct=10.0), FakeGpu(util_pct=50.0), FakeGpu(util_pct=70.0)])
    d = api.diagnose(_dataset, modes=("synthetic", "pipeline"), anatomy=False, stop_rule=RULE, nvml_lib=fake,
                     gpus="2,0")
    assert d.samples.gpu_selection == "GPUs 2, 0 (--gpus)"
    assert [g.index for g in d.samples.gpu_devices] == [2, 0]
    assert len(d.environment.gpus) == 4  # the host's GPUs, all of them
    synthetic = d.modes["synthetic"]
    assert [(g.index, g.util_pct) for g in synthetic.gpus] == [(2, 50.0), (0, 90.0)]
    assert synthetic.gpu_util_pct == 70.0
    back = Diagnosis.from_dict(json.loads(json.dumps(d.to_dict())))
    assert back.modes["synthetic"].gpus == synthetic.gpus
    from rich.console import Console

    from pipediag.report.terminal.diagnose import render_diagnosis

    console = Console(width=140, record=True, color_system=None)
    console.print(render_diagnosis(d))
    out = console.export_text()
    assert "GPUs 2, 0 (--gpus); the Modes table's GPU column is their mean" in " ".join(out.split())
