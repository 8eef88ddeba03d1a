"""What each processing mode means for the user's data, said with the pipeline's own facts."""

import pytest

from pipediag.analysis.visitation import visitation
from pipediag.records.stage import Stage

SOURCE = Stage(0, "TensorSliceDataset/_0", "TensorSliceDataset", "source")
GENERATOR = Stage(0, "GeneratorDataset/_0", "GeneratorDataset", "source", has_py_function=True)
SHUFFLE = Stage(1, "ShuffleDatasetV3/_1", "ShuffleDatasetV3", "shuffle", buffer_size=100, is_random=True)
BATCH = Stage(2, "BatchDatasetV2/_2", "BatchDatasetV2", "batch", buffer_size=32)


def test_parallel_epochs_finite_counts_each_example_once_per_worker():
    lines = visitation("parallel_epochs", 2, 50, [SOURCE, SHUFFLE, BATCH])
    text = "\n".join(lines)
    assert "every worker runs your whole pipeline" in text
    assert "50 batches per pass" in text and "2 × 50 batches" in text
    assert "leave its seed unset" in text


def test_parallel_epochs_without_shuffle_warns_of_duplicates_arriving_together():
    text = "\n".join(visitation("parallel_epochs", 4, "infinite", [SOURCE, BATCH]))
    assert "does not shuffle" in text and "count steps, not epochs" in text and "about 4 times" in text


def test_distributed_epoch_visits_once_and_names_an_unsplittable_source():
    text = "\n".join(visitation("distributed_epoch", 2, 10, [GENERATOR, SHUFFLE, BATCH]))
    assert "each example is produced once per pass" in text
    assert "at most once" in text
    assert "GeneratorDataset" in text and "may not be splittable" in text
    assert "shared by 2 workers" in text
    assert "its own splits" in text and "one short batch" in text


def test_distributed_epoch_with_a_splittable_source_does_not_warn():
    text = "\n".join(visitation("distributed_epoch", None, "infinite", [SOURCE, BATCH]))
    assert "splittable" not in text and "without end" in text


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError):
        visitation("off", 1, 1, [SOURCE])
