"""The published-script cases (scenarios/scripts/, issue 24 item 7): how the scripts are fetched and
exported, how run_scripts.py compares `pipediag run` with `diagnose`, and, with TensorFlow, that
each data maker writes what its script opens and each builder yields a batch.

None of the scripts takes arguments (their epochs are fixed), so they are not run here: the
benchmark runs them (`python benchmarks/run_scripts.py --plain`)."""

import argparse
import hashlib
import importlib.util
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES_DIR = os.path.join(ROOT, "scenarios", "scripts")


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


get_scripts = _load(os.path.join(CASES_DIR, "get_scripts.py"), "pipediag_get_scripts")
CASES = get_scripts.case_names()


def test_there_are_at_least_six_cases_each_pinned_to_a_commit_and_a_hash():
    assert len(CASES) >= 6
    for case in CASES:
        source = get_scripts.read_source(case)
        assert len(source["commit"]) == 40 and len(source["sha256"]) == 64, case
        assert source["license"] == "Apache-2.0"
        assert os.path.exists(os.path.join(CASES_DIR, case, "make_data.py"))
        with open(os.path.join(CASES_DIR, case, "builder.py")) as f:
            assert "\nEXPECTED = " in f.read(), case


def _notebook(*cells):
    return json.dumps({"cells": [{"cell_type": kind, "source": text} for kind, text in cells]}).encode()


def test_a_notebook_exports_its_code_cells_with_ipython_lines_commented_out():
    data = _notebook(("markdown", "# Title"), ("code", ["import os\n", "!pip install x\n", "  %load_ext tb"]),
                     ("code", "print(1)\n"))
    assert get_scripts.export_notebook(data) == "import os\n# !pip install x\n#   %load_ext tb\n\nprint(1)\n"


def test_an_edit_applies_once_and_must_carry_the_mark():
    text = "a = load()\nb = 2\n"
    new = "a = local()  # pipediag: local data"
    assert get_scripts.apply_edits(text, [["a = load()", new]]) == f"{new}\nb = 2\n"
    with pytest.raises(SystemExit, match="must carry"):
        get_scripts.apply_edits(text, [["a = load()", "a = local()"]])
    with pytest.raises(SystemExit, match="found 0 times"):
        get_scripts.apply_edits(text, [["c = 3", new]])


def test_a_source_whose_hash_differs_is_refused(tmp_path):
    case_dir = tmp_path / "repo" / "docs"
    case_dir.mkdir(parents=True)
    (case_dir / "train.py").write_text("print('hi')\n")
    source = {"repo": "o/r", "path": "docs/train.py", "commit": "0" * 40, "license": "Apache-2.0", "edits": [],
              "sha256": hashlib.sha256(b"print('hi')\n").hexdigest()}
    assert get_scripts.published_bytes(source, {"o/r": str(tmp_path / "repo")}) == b"print('hi')\n"
    header = get_scripts.header(source)
    assert "commit " + "0" * 40 in header and "Edits: 0." in header


run_scripts = _load(os.path.join(ROOT, "benchmarks", "run_scripts.py"), "pipediag_run_scripts_benchmark")


def _side(bottleneck, stage, kinds):
    return {"found": {"bottleneck": bottleneck, "stage": stage, "fixes": [{"kind": k} for k in kinds]}}


def test_run_and_diagnose_agree_part_by_part():
    same = run_scripts.agreement(_side("input", "map(f)", ["cache", "prefetch"]), _side("input", "map(f)", ["prefetch", "cache"]))
    assert same == {"bottleneck": True, "stage": True, "fix_kinds": True}
    other = run_scripts.agreement(_side("input", "map(f)", ["cache"]), _side("compute", None, []))
    assert other == {"bottleneck": False, "stage": False, "fix_kinds": False}
    assert run_scripts.agreement({"error": "`pipediag run` is not in this pipediag"}, _side("compute", None, [])) is None


def test_a_missing_run_command_is_said_not_faked():
    row = {"case": "c", "expected": {"bottleneck": "compute", "stage": None},
           "run": {"error": "`pipediag run` is not in this pipediag (exited 2)"},
           "diagnose": {"found": {"bottleneck": "compute", "stage": None, "fixes": []}, "judged": {"correct": True}},
           "agree": None}
    table = run_scripts.markdown([row], {"date": "d", "command": "x", "cpus": 2, "lock": None, "commit": "abc"})
    assert "not run: `pipediag run` is not in this pipediag" in table
    assert "compute, no stage, no fix (right)" in table


def _empty_case(monkeypatch, tmp_path) -> str:
    """A case folder in tmp_path with empty files, where run_scripts looks for the cases."""
    case = CASES[0]
    monkeypatch.setattr(run_scripts, "CASES", str(tmp_path))
    os.makedirs(tmp_path / case)
    for name in ("train.py", "builder.py"):
        (tmp_path / case / name).write_text("")
    (tmp_path / case / "source.json").write_text("{}")
    return case


def test_a_case_whose_data_cannot_be_made_gets_a_row_saying_why_and_the_rest_still_run(monkeypatch, tmp_path):
    """On the H200 the GPU build's carry lacked tensorflow_datasets' helpers: make_data.py failed
    for one case, and the whole benchmark used to stop there with nothing written."""
    case = _empty_case(monkeypatch, tmp_path)
    monkeypatch.setattr(run_scripts, "describe", lambda builder: {"expected": {"bottleneck": "input", "stage": None}})

    def no_data(case_, root):
        raise RuntimeError("make_data.py failed: ModuleNotFoundError: No module named 'promise'")

    monkeypatch.setattr(run_scripts, "make_data", no_data)
    args = argparse.Namespace(plain=False, lock=None, keep=None, timeout=1.0, max_seconds=1.0)
    row = run_scripts.run_case(case, args, (True, ""))
    assert row["agree"] is None
    assert "No module named 'promise'" in row["run"]["error"]
    table = run_scripts.markdown([row], {"date": "d", "command": "x", "cpus": 2, "lock": None, "commit": "abc"})
    assert "not run: make_data.py failed" in table


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_the_data_maker_writes_what_the_script_opens_and_the_builder_yields_a_batch(case):
    """On the data the builder reads: make_data.py's output, made once into $TMPDIR (the first run
    makes every case's data, ~2 minutes here, mostly tfds preparing two datasets)."""
    import tensorflow as tf

    builder = _load(os.path.join(CASES_DIR, case, "builder.py"), f"pipediag_test_builder_{case}")
    data = sys.modules["_data"]  # the builders' helper, on sys.path through them
    root = data.case_root(case)
    missing = [p for p in data.load_maker(case).READS if not os.path.exists(os.path.join(root, p))]
    assert not missing, f"{case}: make_data.py did not write {missing}"

    batch = next(iter(builder.make_dataset()))
    first = tf.nest.flatten(batch)[0]
    assert first.shape[0] and first.shape[0] >= 16  # a whole batch (32 or 64 in these scripts)
    assert hasattr(builder, "make_model") or hasattr(builder, "make_step")


def test_make_data_says_how_to_run_the_script_inside_its_root(tmp_path):
    maker = _load(os.path.join(CASES_DIR, "tf_quickstart_advanced", "make_data.py"), "pipediag_test_make_data_q")
    spec = maker.make(str(tmp_path))
    assert spec == {"env": {}, "cwd": str(tmp_path)}
    assert all(os.path.exists(os.path.join(tmp_path, p)) for p in maker.READS)


def test_a_script_whose_loop_differs_is_judged_on_its_own_answer(monkeypatch, tmp_path):
    """The 2021 custom-training walkthrough: its builder form repeat()s (compute), its script makes a
    new iterator every 4-batch epoch (input at the epoch starts): `pipediag run` is judged against
    the builder's RUN_EXPECTED, and the two forms are not expected to agree."""
    case = _empty_case(monkeypatch, tmp_path)
    inputs = ["prefetch", "parallel_map", "cache"]
    monkeypatch.setattr(run_scripts, "describe", lambda builder: {
        "expected": {"bottleneck": "compute", "stage": None, "right_fixes": [], "wrong_fixes": inputs},
        "run_expected": {"bottleneck": "input", "stage": None, "right_fixes": ["one_iterator"], "wrong_fixes": inputs},
        "step": "step", "diagnose_args": []})
    monkeypatch.setattr(run_scripts, "make_data", lambda case_, root: {"env": {}, "cwd": str(tmp_path)})

    def timed(cmd, cwd, env, timeout_s):  # each command writes the answer its form gives
        answer = ({"bottleneck": "input"}, [{"kind": "one_iterator"}, {"kind": "xla"}]) if "run" in cmd else \
                 ({"bottleneck": "compute"}, [{"kind": "xla"}])
        with open(cmd[cmd.index("--json") + 1], "w") as f:
            json.dump({"verdict": answer[0], "fixes": answer[1]}, f)
        return {"exit_code": 0, "wall_s": 1.0, "tail": ""}

    monkeypatch.setattr(run_scripts, "_timed", timed)
    args = argparse.Namespace(plain=False, lock=None, keep=None, timeout=1.0, max_seconds=1.0)
    row = run_scripts.run_case(case, args, (True, ""))
    assert row["run"]["judged"]["correct"] and row["run"]["judged"]["right_fixes_given"] == ["one_iterator"]
    assert row["diagnose"]["judged"]["correct"] and row["agree"] is None
    table = run_scripts.markdown([row], {"date": "d", "command": "x", "cpus": 2, "lock": None, "commit": "abc"})
    assert "builder: compute, no stage; script: input, no stage" in table
    assert "not expected (the script's loop differs)" in table
