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
    from pipediag.records.run import StopRule

    return StopRule(max_seconds=3.0, min_seconds=0.5, min_steps=10, warmup_steps=3)


def _nvml_gpu_reason():
    """None when NVML sees a GPU; else why `gpu` tests are skipped."""
    from pipediag.backends import nvml

    session = nvml.open_session()
    if isinstance(session, nvml.NotAvailable):
        return session.reason
    session.close()
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _nvml_gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU with NVML: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_global_tf_seed_leaks():
    """A test that sets TensorFlow's global seed (to compare two pipelines' random crops) must not
    hand it to the next: with a global seed, two element-wise runs of a random map draw the same
    numbers, and the per-element check then refuses what it should accept (an order-dependent
    failure seen when test_decode_crop_across.py ran before test_tuning.py)."""
    yield
    tf = sys.modules.get("tensorflow")
    if tf is not None and hasattr(tf, "random"):
        tf.random.set_seed(None)
