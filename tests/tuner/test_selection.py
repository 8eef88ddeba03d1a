"""Which saved changes are carried over, and the graph-match check: plain records, no TensorFlow."""

import pytest

from pipediag.analysis.ablation import Ablation, ChangeEffect
from pipediag.errors import UsageError
from pipediag.records.change import Change
from pipediag.records.stage import Stage
from pipediag.tuner.selection import graph_mismatch, select_gains
from tests.summaries import diagnosis

STAGES = (Stage(0, "TensorSliceDataset/_1", "TensorSliceDataset", "source"),
          Stage(1, "MapDataset/_2", "MapDataset", "map", function="decode_example", parallelism=1, is_random=True),
          Stage(2, "BatchDatasetV2/_3", "BatchDatasetV2", "batch", buffer_size=16))
MAP = Change("parallel_map", "map(decode_example)", "MapDataset/_2", "parallel", True)
PREFETCH = Change("prefetch", "batch(16)", "BatchDatasetV2/_3", "prefetch", True)
THREADS = Change("threading", None, None, "threads", False, reason="the CPUs were busy")


def ablation(**effects):
    rows = tuple(ChangeEffect(key, key.split("@")[0], None, effect, 1.4, (1.2, 1.6), "alone")
                 for key, effect in effects.items())
    return Ablation("fed_step", 10.0, (9.0, 11.0), (), rows, 1.5, (1.3, 1.7), 3.0)


def test_only_gains_are_carried_over_and_the_rest_say_why():
    d = diagnosis(tuning=(MAP, PREFETCH, THREADS), ablation=ablation(**{MAP.key: "gain", PREFETCH.key: "none"}))
    s = select_gains(d)
    assert s.gains == (MAP,)
    reasons = {c.kind: c.reason for c in s.left_out}
    assert reasons == {"prefetch": "measured no gain: none (1.40x alone)", "threading": "the CPUs were busy"}
    assert (s.together_speedup, s.together_ci) == (1.5, (1.3, 1.7))


def test_a_change_missing_from_the_ablation_is_not_carried_over():
    s = select_gains(diagnosis(tuning=(MAP,), ablation=ablation()))
    assert s.gains == () and s.left_out[0].reason == "measured no gain: not measured"


def test_no_tuned_mode_or_no_ablation_is_a_usage_error():
    with pytest.raises(UsageError, match="no tuned mode"):
        select_gains(diagnosis())
    with pytest.raises(UsageError, match="no measured effect per change \\(interrupted run\\)"):
        select_gains(diagnosis(tuning=(MAP,), status="interrupted"))


def test_graph_mismatch_names_the_first_stage_that_differs():
    assert graph_mismatch(STAGES, list(STAGES)) is None
    other = STAGES[:2] + (Stage(2, "BatchDatasetV2/_3", "BatchDatasetV2", "batch", buffer_size=8),)
    assert graph_mismatch(STAGES, other) == ("stage 2 was batch(16) [BatchDatasetV2] when diagnosed, "
                                             "and is batch(8) [BatchDatasetV2] now")
    renamed = STAGES[:1] + (Stage(1, "MapDataset/_9", "MapDataset", "map", function="decode_example"),) + STAGES[2:]
    assert "is graph node MapDataset/_9 now, MapDataset/_2 when diagnosed" in graph_mismatch(STAGES, renamed)
    longer = STAGES + (Stage(3, "PrefetchDataset/_4", "PrefetchDataset", "prefetch", buffer_size=-1),)
    assert graph_mismatch(STAGES, longer) == ("the diagnosed pipeline had 3 stages, it has 4 now "
                                              "(the pipeline now also has prefetch(AUTOTUNE))")


def test_a_gain_on_top_of_the_others_is_carried_over():
    on_top = ChangeEffect(THREADS.key, "threading", None, "none", 0.96, (0.8, 1.1), "alone",
                          without_speedup=3.54, without_ci=(1.11, 11.47))
    not_clear = ChangeEffect(PREFETCH.key, "prefetch", None, "none", 0.96, (0.8, 1.1), "alone",
                             without_speedup=1.5, without_ci=(0.9, 2.5))
    threads = Change("threading", None, None, "threads", True)
    d = diagnosis(tuning=(threads, PREFETCH), ablation=Ablation("fed_step", 10.0, (9.0, 11.0), (),
                                                                (on_top, not_clear), 4.0, (2.0, 8.0), 3.0))
    s = select_gains(d)
    assert s.gains == (threads,)
    assert s.left_out[0].reason == "measured no gain: none (0.96x alone, 1.50x on top of the others)"
