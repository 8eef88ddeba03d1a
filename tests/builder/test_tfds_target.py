"""`tfds:NAME` targets: datasets already on disk, read with tfds' own API, never downloaded."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pipediag.errors import UsageError

tfds = pytest.importorskip("tensorflow_datasets")

from pipediag.builder import tfds_target  # noqa: E402  (after the skip: it needs tfds)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TinyPairs(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """40 examples of (8 floats, label): prepared locally in a test's data dir."""

    name = "pipediag_tiny_pairs"
    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict({
                "x": tfds.features.Tensor(shape=(8,), dtype=np.float32),
                "label": tfds.features.ClassLabel(num_classes=2),
            }),
            supervised_keys=("x", "label"),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(40), "test": self._generate_examples(8)}

    def _generate_examples(self, n):
        for i in range(n):
            yield i, {"x": np.full((8,), i, np.float32), "label": i % 2}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("tfds"))
    tfds.disable_progress_bar()
    TinyPairs(data_dir=folder).download_and_prepare()
    return folder


def test_reads_a_prepared_dataset_as_batched_pairs(data_dir):
    make = tfds_target.load("tfds:pipediag_tiny_pairs", data_dir=data_dir, split="test")
    batch = next(iter(make(batch_size=4)))
    assert isinstance(batch, tuple) and batch[0].shape == (4, 8) and batch[1].shape == (4,)


def test_unknown_dataset_lists_what_is_there(data_dir):
    with pytest.raises(UsageError) as info:
        tfds_target.load("tfds:no_such_dataset", data_dir=data_dir)
    assert "no_such_dataset" in info.value.message
    assert "pipediag_tiny_pairs" in info.value.hint and "never downloads" in info.value.hint


def test_a_known_dataset_that_is_not_there_is_not_downloaded(tmp_path):
    with pytest.raises(UsageError) as info:
        tfds_target.load("tfds:mnist", data_dir=str(tmp_path))
    assert "not prepared" in info.value.message and "tfds build mnist" in info.value.hint
    files = [f for _, _, names in os.walk(tmp_path) for f in names]
    assert files == []  # nothing fetched


def test_unknown_split_names_the_splits(data_dir):
    with pytest.raises(UsageError) as info:
        tfds_target.load("tfds:pipediag_tiny_pairs", data_dir=data_dir, split="validation")
    assert "train" in info.value.hint and "test" in info.value.hint


def test_bad_targets():
    with pytest.raises(UsageError):
        tfds_target.dataset_name("tfds:")
    with pytest.raises(UsageError, match="not a folder"):
        tfds_target.load("tfds:x", data_dir="/no/such/folder")
    assert tfds_target.is_tfds_target("tfds:mnist") and not tfds_target.is_tfds_target("data.py:make")


def _pipediag(*args):
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "pipediag", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=ROOT)


def test_data_dir_is_only_for_tfds_targets(tmp_path):
    result = _pipediag("diagnose", "tests/fixtures/pipelines.py:in_memory", "--data-dir", str(tmp_path))
    assert result.returncode == 2 and "for tfds:NAME targets" in result.stderr


@pytest.mark.slow
def test_diagnose_a_tfds_target_end_to_end(data_dir, tmp_path, cli_main):
    """The command line's `main`, in this process: tfds is imported here already, and a process of
    its own would import TensorFlow and tfds again for each command."""
    out = tmp_path / "run.json"
    result = cli_main("diagnose", "tfds:pipediag_tiny_pairs", "--data-dir", data_dir, "--batch-size", "8",
                       "--max-seconds", "1", "--quiet", "--json", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["target"] == "tfds:pipediag_tiny_pairs" and data["dataset"]["element"]["batch_size"] == 8
    missing = cli_main("diagnose", "tfds:mnist", "--data-dir", str(tmp_path), "--quiet")
    assert missing.returncode == 2 and "not prepared" in missing.stderr and "HINT:" in missing.stderr
