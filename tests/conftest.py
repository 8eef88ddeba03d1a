import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "pipelines.py")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture
def fixture_spec():
    """`tests/fixtures/pipelines.py:NAME` for CLI tests."""

    def spec(name: str) -> str:
        return f"{FIXTURES}:{name}"

    return spec


@pytest.fixture(scope="session")
def quick_rule():
    from pipediag.modes.runner import StopRule

    return StopRule(max_seconds=3.0, min_seconds=0.5, min_steps=10, warmup_steps=3)
