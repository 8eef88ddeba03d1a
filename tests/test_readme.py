"""README's commands are the ones CI runs."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme_commands():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    return re.findall(r"^    (pip install .+)$", text, flags=re.M)


def test_readme_has_the_two_commands():
    install_run, install_test = readme_commands()[:2]
    assert install_run.endswith("pipediag diagnose --demo")
    assert install_test.endswith("python -m pytest -n 2")


def test_ci_runs_readmes_test_command():
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = f.read()
    assert readme_commands()[1] in ci.splitlines()
