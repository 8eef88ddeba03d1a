"""`pipediag fix RUN.json` on a copy of small real builders: run as users run it (a subprocess)
where the test is about what a pipe gets (`--diff -`), by the command line's `main` in this process
(`cli_main`: the same output and exit code, no TensorFlow import of its own) elsewhere.

The diagnoses are scripted around the real graphs (tests.api.test_tuned.scripted): what is tested
is the patch, its proof and the refusals, never a timing."""

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("libcst")

from pipediag.records.files import write_json  # noqa: E402
from tests.api.test_tuned import scripted  # noqa: E402
from tests.fixtures import patch_builders  # noqa: E402
from tests.test_cli import pipediag  # noqa: E402

FIXTURE = Path(patch_builders.__file__)


def saved_run(tmp_path, name, target=None):
    builder = tmp_path / "builders.py"
    shutil.copy(FIXTURE, builder)
    run = tmp_path / "run.json"
    diagnosis = scripted(getattr(patch_builders, name))
    write_json(replace(diagnosis, target=target or f"{builder}:{name}").to_dict(), str(run))
    return builder, run


@pytest.mark.slow
def test_fix_prints_the_diff_checks_the_stages_and_writes_nothing_without_apply(tmp_path, cli_main):
    builder, run = saved_run(tmp_path, "cache_then_random")
    before = builder.read_text()
    diff = tmp_path / "fix.diff"
    result = cli_main("fix", str(run), "--no-measure", "--diff", str(diff))
    assert result.returncode == 0, result.stderr
    assert "+    ds = ds.map(expensive).cache().map(noisy, num_parallel_calls=tf.data.AUTOTUNE)" in result.stdout
    assert "-    ds = ds.map(expensive).map(noisy)" in result.stdout
    assert "ok  cache map(expensive): map(expensive) is followed by cache" in result.stdout
    assert "ok  parallel_map map(noisy)" in result.stdout
    assert builder.read_text() == before
    assert diff.read_text().splitlines()[0].startswith("--- a/") and "+++ b/" in diff.read_text()
    piped = pipediag("fix", str(run), "--no-measure", "--diff", "-")  # `... --diff - | git apply`
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == diff.read_text()  # the diff alone; the checks go to standard error
    assert "ok  parallel_map map(noisy)" in piped.stderr


@pytest.mark.slow
def test_fix_apply_writes_the_patched_builder_and_keeps_its_comments(tmp_path, cli_main):
    builder, run = saved_run(tmp_path, "vectorizable")
    before = builder.read_text()
    result = cli_main("fix", str(run), "--no-measure", "--apply")
    assert result.returncode == 0, result.stderr
    after = builder.read_text()
    assert "return ds.batch(batch_size).map(normalize, num_parallel_calls=tf.data.AUTOTUNE)" in after
    old = "    return ds.map(normalize).batch(batch_size)\n"
    new = "    return ds.batch(batch_size).map(normalize, num_parallel_calls=tf.data.AUTOTUNE)\n"
    assert after == before.replace(old, new)  # nothing else moved: comments, docstrings, blank lines
    assert f"wrote {builder}" in result.stderr
    assert not list(tmp_path.glob(".pipediag_patched_*"))  # the hidden copy is gone


@pytest.mark.slow
def test_fix_refuses_a_builder_that_changed_since_the_diagnosis(tmp_path, cli_main):
    builder, run = saved_run(tmp_path, "serial_random_map")
    result = cli_main("fix", str(run), "--target", f"{builder}:changed_function", "--no-measure")
    assert result.returncode == 2
    assert "is not the one diagnosed" in result.stderr and "map(noisy)" in result.stderr
    assert "HINT:" in result.stderr


@pytest.mark.slow
def test_fix_refuses_a_tfds_target(tmp_path, cli_main):
    _, run = saved_run(tmp_path, "serial_random_map", target="tfds:mnist")
    result = cli_main("fix", str(run))
    assert result.returncode == 2 and "nothing of yours to patch" in result.stderr


@pytest.mark.slow
def test_fix_measures_the_patch_against_the_original(tmp_path, cli_main):
    _, run = saved_run(tmp_path, "serial_random_map")
    result = cli_main("fix", str(run), "--max-seconds", "4", "--quiet")
    assert result.returncode == 0, result.stderr
    assert "measured: patched / original = " in result.stdout
    assert "the diagnosis measured tuned / pipeline = 1.80x [1.60, 2.00]" in result.stdout
