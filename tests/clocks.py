"""A scripted monotonic clock for the runner, compare and warm-up tests: no sleeping, no noise."""


class FakeClock:
    """Nanoseconds, as time.monotonic_ns gives them; the code under test calls it, the test advances it."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns

    def advance(self, ms: float) -> None:
        self.ns += int(ms * 1e6)
