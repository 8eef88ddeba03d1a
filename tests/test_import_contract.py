"""The import contract of README's Layout ([tool.importlinter] in pyproject.toml): imports point down
the layers, no cycles between sibling modules, and the pure floors never import TensorFlow or NVML.
Imports inside functions count too."""

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e '.[test]')")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_import_contract_is_kept():
    lint = shutil.which("lint-imports") or os.path.join(os.path.dirname(sys.executable), "lint-imports")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([lint, "--no-cache", "--config", os.path.join(ROOT, "pyproject.toml")], cwd=ROOT,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
