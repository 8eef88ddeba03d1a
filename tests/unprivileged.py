"""Running a child process as the unprivileged user `nobody` (uid 65534), for the output tests
that must hold for a user who is not root."""
import functools
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@functools.cache
def why_not() -> str | None:
    """None when a child can run pipediag as nobody here; else the reason it cannot.

    Needs root (to drop to nobody), setpriv, and an interpreter whose packages nobody may read: a
    virtual environment inside a private folder (`mktemp -d` makes its folder mode 700) is not."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to run a child as an unprivileged user"
    probe = subprocess.run([*NOBODY, sys.executable, "-c", "import numpy, psutil, rich, pipediag"],
                           capture_output=True, text=True, cwd="/", timeout=120,
                           env=dict(os.environ, PYTHONPATH=ROOT, HOME="/tmp"))
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return f"nobody cannot import pipediag with {sys.executable} (its packages are not readable by nobody?): {last}"
    return None


def skip_unless_possible() -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
