"""modes.distributed.partial_batch_handling against TensorFlow's own choice for the same dataset
(the distributed dataset's private `_enable_get_next_as_optional`, read here as the oracle only)."""

import pytest

from pipediag.backends.tf import tf
from pipediag.modes.distributed import partial_batch_handling

ELEMENTS = tf.data.Dataset.range(10).map(lambda x: tf.fill([3], x))
FORMS = {
    "batch": ELEMENTS.batch(4),  # the last batch may be partial: the slower path
    "drop_remainder": ELEMENTS.batch(4, drop_remainder=True),  # static shapes
    "repeat": ELEMENTS.batch(4).repeat(),  # infinite
    "unbatched": ELEMENTS,  # static element shapes
}


@pytest.fixture(scope="module")
def strategy():
    return tf.distribute.MirroredStrategy(["/cpu:0"])


@pytest.mark.parametrize("form, expected", [("batch", True), ("drop_remainder", False), ("repeat", False),
                                            ("unbatched", False)])
def test_it_says_what_tensorflow_chooses(strategy, form, expected):
    dataset = FORMS[form]
    assert partial_batch_handling(dataset, strategy) is expected
    oracle = getattr(strategy.experimental_distribute_dataset(dataset), "_enable_get_next_as_optional", None)
    if oracle is not None:  # a private name: where TensorFlow renamed it, the expected values stand alone
        assert oracle is expected


def test_without_a_strategy_that_says_it_is_unknown():
    assert partial_batch_handling(FORMS["batch"], tf.distribute.get_strategy()) is None
