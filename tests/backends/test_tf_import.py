"""TensorFlow's one import (pipediag.backends.tf): the collector is paused around it and left as
it was found, whether the caller had it on or off; the objects it made are frozen only where the
command's own process asks for it."""

import gc
import os
import subprocess
import sys

import pytest

from pipediag.backends import tf as backend


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_around_the_import_and_left_as_it_was(enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with backend._collections_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(ImportError), backend._collections_paused():
            raise ImportError("as a missing TensorFlow would")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert gc.isenabled()  # the import itself, at the top of this file, left it on


@pytest.mark.slow
def test_the_objects_the_import_made_are_frozen_only_when_the_process_asks():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import gc, sys; from pipediag import backends; backends.freeze_imported_objects = sys.argv[1] == 'ask'; "
            "import pipediag.backends.tf; print(gc.get_freeze_count(), gc.isenabled())")
    counts = {}
    for ask in ("ask", "leave"):
        done = subprocess.run([sys.executable, "-c", code, ask], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=root), cwd=root)
        assert done.returncode == 0, done.stderr[-2000:]
        frozen, enabled = done.stdout.split()
        counts[ask] = int(frozen)
        assert enabled == "True"
    assert counts["leave"] == 0 and counts["ask"] > 100_000  # TensorFlow's import makes hundreds of thousands
