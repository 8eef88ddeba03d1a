"""Tests marked `alone` run with no other test beside them under pytest-xdist.

README's test command runs two tests at once (`python -m pytest -n 2`). A test marked `alone`
asserts a verdict that rests on rates a second test's load could move across a line: it takes one
file's lock exclusively, and every other test takes the same lock shared, so while it runs no other
test does. The lock is held from a test's set-up to its tear-down (module fixtures that run
diagnoses are inside), and the alone tests run first, back to back, holding it between them. The
controller makes the file and hands its path to the workers in the environment they inherit; without
xdist (or with `-n 0`) nothing is locked. tests/conftest.py registers the hooks.
"""

from __future__ import annotations

import fcntl
import os
import tempfile

import pytest

LOCK_ENV = "PIPEDIAG_TESTS_ALONE_LOCK"
_lock_path = pytest.StashKey[str]()
_lock_fd: int | None = None


def configure(config: pytest.Config) -> None:
    """In the xdist controller (not a worker): make the lock file for the workers."""
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        fd, path = tempfile.mkstemp(prefix="pipediag-tests-", suffix=".lock")
        os.close(fd)
        config.stash[_lock_path] = path
        os.environ[LOCK_ENV] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_lock_path, None)
    if path is not None:
        os.environ.pop(LOCK_ENV, None)
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def _worker_lock_path() -> str | None:
    """The lock file's path in an xdist worker whose controller made one; None elsewhere."""
    return os.environ.get(LOCK_ENV) if "PYTEST_XDIST_WORKER" in os.environ else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """In an xdist worker: an `alone` test holds the lock exclusively, any other test shares it."""
    global _lock_fd
    path = _worker_lock_path()
    if path is None:
        yield
        return
    if _lock_fd is None:
        _lock_fd = os.open(path, os.O_RDWR)
    alone = item.get_closest_marker("alone") is not None
    fcntl.flock(_lock_fd, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)  # a no-op where this worker holds it already
    try:
        yield
    finally:
        # Between two alone tests the lock stays held: released, the other worker would start a test
        # (one of 40 s, some) that the next alone test then waits for.
        if not (alone and nextitem is not None and nextitem.get_closest_marker("alone") is not None):
            fcntl.flock(_lock_fd, fcntl.LOCK_UN)


def alone_first(items: list[pytest.Item]) -> None:
    """In an xdist worker: the alone tests first (a stable sort; every worker collects the same order),
    so they run back to back at the start, where each worker's first tests are being handed out."""
    if _worker_lock_path() is not None:
        items.sort(key=lambda item: item.get_closest_marker("alone") is None)
