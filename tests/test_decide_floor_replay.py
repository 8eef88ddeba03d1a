"""benchmarks/decide_floor_replay.py on scripted step times: where a decided run would have stopped
from a lower floor, and a reading that an early stop puts on the other side of a line."""

import importlib.util
import json
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("decide_floor_replay",
                                               os.path.join(ROOT, "benchmarks", "decide_floor_replay.py"))
replay = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(replay)

MS = 1_000_000


def _run(wait_ms, compute_ms, stop_reason="decided", overhead=1.0):
    rng = random.Random(len(wait_ms))
    wait = [int(w * MS * rng.uniform(0.95, 1.05)) for w in wait_ms]
    compute = [int(c * MS * rng.uniform(0.95, 1.05)) for c in compute_ms]
    return {"wait_ns": wait, "compute_ns": compute, "stop_reason": stop_reason,
            "start_ns": 0, "end_ns": int(sum(wait + compute) * overhead)}


def _write(tmp_path, name, pipeline):
    synthetic = _run([0.0] * 2000, [1.0] * 2000, stop_reason="stable")
    with open(tmp_path / f"{name}.json", "w") as f:
        json.dump({"modes": {"synthetic": {"run": synthetic}, "pipeline": {"run": pipeline}}}, f)


def test_a_clear_reading_decides_at_the_floor_on_the_whole_windows_side(tmp_path):
    _write(tmp_path, "input", _run([10.0] * 200, [1.0] * 200))  # 11x slower than free, waiting 91%
    [row] = replay.replay_file(str(tmp_path / "input.json"), 0.5)
    assert row["mode"] == "pipeline" and row["flips"] == []
    assert 0.5 <= row["early_s"] < 0.6 and row["window_s"] > 2.0
    assert replay.main([str(tmp_path), "--floor", "0.5"]) == 0


def test_the_floor_is_read_on_the_windows_wall_clock(tmp_path):
    # the loop's own work doubles the window's wall time: the floor comes after half as many steps
    _write(tmp_path, "slow_loop", _run([10.0] * 200, [1.0] * 200, overhead=2.0))
    [row] = replay.replay_file(str(tmp_path / "slow_loop.json"), 0.5)
    assert 0.5 <= row["early_s"] < 0.6 and row["early_steps"] < 30


def test_an_early_stop_on_the_other_side_of_a_line_is_reported(tmp_path):
    # 60 slow steps, then thousands fed at once: the first half second reads input-bound, the whole
    # window a slowdown under 1.15x and a wait under 20%
    _write(tmp_path, "drifts", _run([10.0] * 60 + [0.0] * 5000, [1.0] * 5060))
    [row] = replay.replay_file(str(tmp_path / "drifts.json"), 0.5)
    assert "slowdown >= 1.15" in row["flips"] and "wait >= 20%" in row["flips"]
    assert replay.main([str(tmp_path), "--floor", "0.5"]) == 1


def test_runs_that_measured_on_to_their_own_rule_are_not_replayed(tmp_path):
    _write(tmp_path, "stable", _run([10.0] * 200, [1.0] * 200, stop_reason="stable"))
    assert replay.replay_file(str(tmp_path / "stable.json"), 0.5) == []
