"""Small training scripts written into a test's folder, and `pipediag run` on them, in this
process (the library entry point) or as the command (`python -m pipediag run`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

from pipediag.records.run import StopRule

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Short windows: these tests check structure, not timing.
QUICK = StopRule(max_seconds=0.8, min_seconds=0.2, min_steps=5, warmup_steps=2)

HEAD = """\
import os, sys, time
import numpy as np
import tensorflow as tf
"""


def write(folder, name: str, body: str) -> str:
    path = os.path.join(str(folder), name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(HEAD + textwrap.dedent(body))
    return path


def run_here(path: str, *args: str, **plan):
    """run_script on `path` in this process, with short windows and no anatomy unless asked."""
    from pipediag.run.launch import ScriptTarget
    from pipediag.run.script import run_script
    from pipediag.run.session import ScriptPlan

    # The script runs as `python SCRIPT` would: under the default warning filters, not pytest's
    # "error" (Keras warns, e.g., that a Dataset given to fit is expected to be shuffled already).
    plan = {"rule": QUICK, "observe_steps": 12, "anatomy": False, "modes": ("synthetic", "pipeline", "input_only"),
            **plan}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_script(ScriptTarget(path, None, args), ScriptPlan(**plan))


def run_command(*argv: str, env: dict | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    environ = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="120", TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
    return subprocess.run([sys.executable, "-m", "pipediag", "run", *argv], capture_output=True, text=True,
                          env=environ, timeout=timeout, cwd=ROOT)


def assert_windows_ran(saved: dict) -> None:
    """Every window ran in a saved run: synthetic, pipeline and input_only; the tuned window ran or
    was skipped with its reason (fixes.worth_tuning: an in-memory pipeline has nothing to change,
    so a tuned run could not change the fixes)."""
    assert all(saved["modes"][m] is not None for m in ("pipeline", "synthetic", "input_only")), saved["modes"].keys()
    skipped = [n for n in saved["notes"] if n.startswith("tuned mode skipped")]
    assert saved["modes"]["tuned"] is not None or skipped, saved["notes"]
