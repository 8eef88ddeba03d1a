"""Sequential stopping (verdict.sequential) on scripted step times: no TensorFlow, no clock."""

import random

from pipediag.verdict.sequential import (
    LINE_MARGIN,
    ContentionDecided,
    ControlAgainDecided,
    FullControlDecided,
    InputOnlyDecided,
    PipelineDecided,
    RateReading,
    TunedDecided,
    clear_of,
    rate_reading,
    wait_share,
)

MS = 1_000_000


def noisy(ms: float, n: int, spread: float = 0.03, seed: int = 1) -> list[int]:
    """n step times around `ms`, +-spread uniformly (a steady step on a quiet machine)."""
    rng = random.Random(seed)
    return [int(ms * MS * (1 + rng.uniform(-spread, spread))) for _ in range(n)]


FREE = rate_reading(noisy(10.0, 200))  # the free step: 100 batches/s


def test_the_rate_reading_matches_the_summary_rate_and_brackets_it():
    reading = rate_reading(noisy(10.0, 200))
    assert abs(reading.rate - 100) < 1
    assert reading.low < reading.rate < reading.high


def test_clear_of_needs_the_margin_on_one_side():
    assert clear_of(1.30, 1.40, 1.15)  # 1.30 > 1.15 * 1.1
    assert not clear_of(1.20, 1.40, 1.15)  # inside the margin
    assert clear_of(0.90, 1.03, 1.15)  # 1.03 < 1.15 / 1.1
    assert not clear_of(None, 1.0, 1.15)


def test_wait_share_has_an_interval_around_the_share():
    wait = [5 * MS] * 40
    step = [20 * MS] * 40
    value, low, high = wait_share(wait, step)
    assert value == 0.25 and low == high == 0.25
    assert wait_share(wait[:4], step[:4]) is None  # too few steps for batch means


def test_a_starved_step_is_decided_at_once():
    """Fed at a quarter of the free rate, waiting 75% of the time: far from every line."""
    decided = PipelineDecided(FREE)
    wait = noisy(30.0, 30, seed=2)
    compute = noisy(10.0, 30, seed=3)
    assert decided(wait, compute)
    assert "clear of the verdict's lines" in decided.reason


def test_a_compute_bound_step_is_decided_when_fed_at_the_free_rate_without_waiting():
    decided = PipelineDecided(FREE)
    assert decided([10_000] * 30, noisy(10.0, 30, seed=4))


def test_a_gap_near_its_line_is_not_decided():
    """Fed 1.15x slower than free: the slowdown's line itself; measure on."""
    decided = PipelineDecided(FREE)
    assert not decided([10_000] * 200, noisy(11.5, 200, seed=5))


def test_a_wait_near_its_line_is_not_decided():
    decided = PipelineDecided(FREE)
    wait = [int(0.55 * MS)] * 60  # ~5% of a ~10.5 ms step: the moderate line
    assert not decided(wait, noisy(10.0, 60, seed=6))


def test_a_window_whose_second_half_crosses_a_line_is_not_decided():
    """A prefetch buffer drained in the first steps: fast at first, then slower than free by 1.2x.
    The whole window (1.1x) would pass for no slowdown; its second half sits above the line."""
    decided = PipelineDecided(FREE)
    compute = noisy(7.0, 40, seed=7) + noisy(12.5, 40, seed=8)
    assert not decided([10_000] * 80, compute)


def test_input_alone_far_above_or_below_the_free_step_is_decided():
    assert InputOnlyDecided(FREE)([int(0.5 * MS)] * 2 + noisy(0.5, 40), [0] * 42)  # 20x the free step
    below = InputOnlyDecided(FREE)
    assert below(noisy(40.0, 30, seed=9), [0] * 30)  # a quarter of it
    assert "0.25x" in below.reason


def test_input_alone_near_the_headroom_line_is_not_decided():
    assert not InputOnlyDecided(FREE)(noisy(7.7, 100, seed=10), [0] * 100)  # 1.3x: the headroom line
    assert not InputOnlyDecided(FREE)(noisy(10.0, 100, seed=11), [0] * 100)  # 1.0x: as fast as the step


def test_no_interval_on_the_free_step_decides_nothing():
    assert not PipelineDecided(RateReading(100.0, None, None))([10_000] * 30, noisy(10.0, 30))


# -- the tuned run (TunedDecided) -----------------------------------------------------------------
REFERENCE = RateReading(25.0, 24.0, 26.0)  # the control: 25 batches/s (40 ms a batch)


def tuned(ms: float, n: int = 40, seed: int = 7):
    """The tuned run's (wait_ns, compute_ns): all of it waiting, as a pipeline-bound run is."""
    return noisy(ms, n, seed=seed), [0] * n


def test_a_clear_gain_below_free_input_is_decided():
    decided = TunedDecided(REFERENCE, FREE)
    assert decided(*tuned(20.0))  # 50/s: 2x the control, half the free rate
    assert decided.reason.startswith("over its reference 2.0") and "0.50x free input" in decided.reason


def test_clear_harm_is_decided_too():
    assert TunedDecided(REFERENCE, FREE)(*tuned(60.0))  # 16.7/s: 0.67x the control


def test_a_speedup_near_a_gain_line_measures_on():
    # 1.05x and 1.0x the control: inside the margins of MIN_GAIN and of 1
    assert not TunedDecided(REFERENCE, FREE)(*tuned(40.0 / 1.05))
    assert not TunedDecided(REFERENCE, FREE)(*tuned(40.0))


def test_a_tuned_run_near_free_input_measures_on():
    # 10.5 ms a batch: ~0.95x the free step, so whether it outran free input (drift) is not clear
    assert not TunedDecided(REFERENCE, FREE)(*tuned(10.5))
    assert TunedDecided(REFERENCE, None)(*tuned(10.5))  # without a free rate, only the gain lines


def test_a_reference_without_an_interval_never_decides():
    assert not TunedDecided(RateReading(25.0, None, None), FREE)(*tuned(20.0))


def test_a_window_that_slows_in_its_second_half_is_not_decided():
    # the first half at 2.2x the control, the second at 1.1x: the whole clears 1.05, the late half does not
    wait = noisy(18.0, 40, seed=8)[:20] + noisy(36.0, 40, seed=9)[:20]
    assert not TunedDecided(REFERENCE, FREE)(wait, [0] * 40)


# -- a contention reading measured again (ContentionDecided) ----------------------------------------
FREE_COMPUTE = noisy(10.0, 200, seed=11)  # the new synthetic run: a 10-ms step, 100 batches/s


def contention_decided():
    return ContentionDecided(rate_reading(FREE_COMPUTE), FREE_COMPUTE)


def test_a_step_no_slower_beside_the_pipeline_ends_the_measured_again_run():
    """Fed at the free rate, its own time as alone: both readings far below the 1.15x line."""
    decided = contention_decided()
    assert decided([10_000] * 40, noisy(10.0, 40, seed=12))
    assert "settled below the 1.15x line: not contention" in decided.reason


def test_a_step_slowed_well_past_the_line_on_both_readings_ends_it():
    """The step itself 1.6x slower beside the pipeline, so the fed step too: contention, decided."""
    decided = contention_decided()
    assert decided([10_000] * 40, noisy(16.0, 40, seed=13))
    assert "both settled above the 1.15x line" in decided.reason


def test_a_reading_below_the_line_by_less_than_the_modes_margin_ends_it():
    """The step 1.07x slower beside the pipeline, its interval below the 1.15x line but not by
    LINE_MARGIN: the re-measure stops (the test that sent it to be measured again is met), where
    the modes' 10% margin would have run the window to its end."""
    compute = noisy(10.7, 200, seed=19)
    decided = contention_decided()
    assert decided([10_000] * 200, compute)
    assert "settled below the 1.15x line" in decided.reason
    assert not ContentionDecided(rate_reading(FREE_COMPUTE), FREE_COMPUTE, margin=LINE_MARGIN)([10_000] * 200, compute)


def test_readings_on_the_line_measure_on():
    """The step 1.15x slower beside the pipeline: both readings on the line; the run goes on."""
    decided = contention_decided()
    assert not decided([10_000] * 200, noisy(11.5, 200, seed=14))
    assert decided.reason is None


def test_one_reading_above_and_the_other_on_the_line_measure_on():
    """The fed step 1.6x slower (it waited), the step's own time 1.15x: contention is still on its
    edge (both near, one straddling), so not decided."""
    decided = contention_decided()
    compute = noisy(11.5, 200, seed=15)
    wait = [int(4.5 * MS)] * 200
    assert not decided(wait, compute)


def test_a_second_half_that_crosses_the_line_measures_on():
    """Below the line over the window, above it in its second half (the machine got busier)."""
    decided = contention_decided()
    compute = noisy(9.0, 60, seed=16) + noisy(13.5, 60, seed=17)
    assert not decided([10_000] * 120, compute)


def test_too_few_steps_for_an_interval_are_not_decided():
    assert not contention_decided()([10_000] * 4, noisy(10.0, 4, seed=18))


# -- the control run again with the full window (FullControlDecided) ------------------------------
def control(ms: float, n: int = 40, spread: float = 0.03, seed: int = 11):
    """The control's (wait_ns, compute_ns) so far."""
    return noisy(ms, n, spread=spread, seed=seed), [0] * n


def test_a_gain_clear_of_the_lines_against_the_control_is_decided():
    # the change ran 30 (29-31) batches/s; the control runs at 20/s: 1.5x, clear of 1.05
    decided = FullControlDecided([RateReading(30.0, 29.0, 31.0)])
    assert decided(*control(50.0))
    assert decided.reason.startswith("the control's interval")


def test_a_control_as_narrow_as_the_changes_own_run_stops_though_the_gain_is_open():
    # 1.07x: on the gain line, but the change's own run (21.4, 19.4-23.4: +-9%) is the wider one
    wide_run = RateReading(21.4, 19.4, 23.4)
    assert FullControlDecided([wide_run])(*control(50.0, spread=0.03))


def test_a_gain_on_its_line_with_a_narrow_run_measures_on():
    # 1.07x, the change's own run pinned to +-1%: only a long control could decide it
    narrow_run = RateReading(21.4, 21.2, 21.6)
    assert not FullControlDecided([narrow_run])(*control(50.0, spread=0.3, n=12))


def test_every_undecided_run_must_be_settled():
    clear, on_line = RateReading(30.0, 29.0, 31.0), RateReading(21.4, 21.2, 21.6)
    assert not FullControlDecided([clear, on_line])(*control(50.0, spread=0.3, n=12))
    assert not FullControlDecided([])(*control(50.0))  # nothing to decide: the rule's own window
    assert not FullControlDecided([RateReading(30.0, None, None)])(*control(50.0))


# -- the control run again after the changes alone (ControlAgainDecided) --------------------------
FIRST_CONTROL = RateReading(20.0, 19.4, 20.6)  # the first control: 20 batches/s (50 ms a batch)


def test_changes_alone_clear_of_the_gain_lines_against_both_controls_end_the_control_again():
    # a gain (30/s: 1.5x) and a harm (12/s: 0.6x) against controls at 20/s: both clear of every line
    decided = ControlAgainDecided(FIRST_CONTROL, [RateReading(30.0, 29.0, 31.0), RateReading(12.0, 11.5, 12.5)])
    assert decided(*control(50.0))
    assert decided.reason == "every change alone clear of the gain lines against the two controls (1.50x, 0.60x)"


def test_a_change_alone_near_a_gain_line_keeps_the_control_again_running():
    # 1.07x the controls: on MIN_GAIN's line, whatever the control again reads; and no gain at all
    assert not ControlAgainDecided(FIRST_CONTROL, [RateReading(21.4, 21.2, 21.6)])(*control(50.0))
    assert not ControlAgainDecided(FIRST_CONTROL, [RateReading(20.0, 19.8, 20.2)])(*control(50.0))
    clear, on_line = RateReading(30.0, 29.0, 31.0), RateReading(21.4, 21.2, 21.6)
    assert not ControlAgainDecided(FIRST_CONTROL, [clear, on_line])(*control(50.0))  # every one must be


def test_the_control_again_is_judged_with_the_first_one_as_conclude_takes_them():
    """A gain clear against the first control alone is not decided where the control again runs
    fast enough that the two together (mean rate, an interval spanning both) put it on a line."""
    gain = RateReading(27.0, 26.5, 27.5)  # 1.35x the first control: clear of 1.05 by its margin
    assert ControlAgainDecided(FIRST_CONTROL, [gain])(*control(50.0))  # the control again at 20/s too
    # the control again at 25/s: together 22.5 (19.4-25.8), the gain 1.20x (1.03-1.42): on the lines
    assert not ControlAgainDecided(FIRST_CONTROL, [gain])(*control(40.0))


def test_a_control_again_that_speeds_up_mid_window_is_not_decided():
    # its first half at 20/s, its second at 26/s (late, the gain reads 1.17x): the two controls
    # together span 19.4-25.2 batches/s, and the gain's 1.27x (1.05-1.42) is no longer clear of 1.05
    gain = RateReading(27.0, 26.5, 27.5)
    wait = noisy(50.0, 40, seed=12)[:20] + noisy(38.5, 40, seed=13)[:20]
    assert not ControlAgainDecided(FIRST_CONTROL, [gain])(wait, [0] * 40)
    assert ControlAgainDecided(FIRST_CONTROL, [gain])(noisy(50.0, 40, seed=12), [0] * 40)  # steady at 20/s


def test_without_intervals_or_runs_the_control_again_keeps_its_own_rule():
    gain = RateReading(30.0, 29.0, 31.0)
    assert not ControlAgainDecided(RateReading(20.0, None, None), [gain])(*control(50.0))  # first control
    assert not ControlAgainDecided(FIRST_CONTROL, [RateReading(30.0, None, None)])(*control(50.0))  # a change
    assert not ControlAgainDecided(FIRST_CONTROL, [])(*control(50.0))  # nothing to decide
    assert not ControlAgainDecided(FIRST_CONTROL, [gain])(*control(50.0, n=2))  # too few steps for an interval
