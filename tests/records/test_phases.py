"""Where a diagnosis's time went: the accumulator (a scripted clock), its record and its line."""

from pipediag.records.phases import Phase, PhaseClock, mode_phase, phases_text
from tests.clocks import FakeClock


def test_an_inner_phase_is_taken_out_of_the_outer_one():
    clock = FakeClock()
    phases = PhaseClock(clock)
    with phases.phase("tuning_plan"):
        clock.advance(1.0e3)
        with phases.phase("control"):
            clock.advance(3.0e3)
        clock.advance(0.5e3)
    with phases.phase("control"):  # a phase that runs twice is summed
        clock.advance(2.0e3)
    assert phases.phases() == (Phase("tuning_plan", 1.5), Phase("control", 5.0))
    assert phases.current is None


def test_a_modes_warm_up_is_moved_to_its_own_phase_and_phases_come_in_run_order():
    clock = FakeClock()
    phases = PhaseClock(clock)
    with phases.phase("pipeline"):
        clock.advance(4.0e3)
    with phases.phase("synthetic"):
        clock.advance(5.0e3)
    phases.move("synthetic", "warmup", 2_000_000_000)
    phases.move("pipeline", "warmup", 9_000_000_000)  # never more than the phase had
    assert [(p.name, p.seconds) for p in phases.phases()] == [("warmup", 6.0), ("synthetic", 3.0), ("pipeline", 0.0)]


def test_the_time_line_names_each_phase_and_what_none_accounts_for():
    phases = (Phase("first_batch", 0.31), Phase("synthetic", 4.0), Phase("handover", 0.01), Phase("conclude", 0.2))
    assert phases_text(phases, 5.5) == "time: 5.5 s — first batch 0.3, synthetic 4.0, verdict and fixes 0.2, other 1.0"
    assert phases_text((), 2.0) == "time: 2.0 s"


def test_the_time_line_ends_with_the_start_up_when_the_command_knew_it():
    phases = (Phase("synthetic", 4.0),)
    assert phases_text(phases, 4.0, startup_s=8.04) == (
        "time: 4.0 s — synthetic 4.0; before it, start-up 8.0 s (Python, imports, your module)")
    assert "start-up" not in phases_text(phases, 4.0, startup_s=None)  # the Python API: unknown, not 0


def test_each_run_is_booked_to_its_phase():
    assert mode_phase("synthetic", None) == "synthetic"
    assert mode_phase("control again", "variant_builds") == "control"
    assert mode_phase("parallel_map map(f) alone", "variant_builds") == "ablation"
    assert mode_phase("pipeline", "remeasure") == "remeasure"
    assert Phase.from_dict(Phase("tuned", 2.0).to_dict()).label == "tuned"
