"""What several subcommands share: argument types, the rich progress display, exit codes."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

EXIT_OK, EXIT_USER_CODE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_SLOWER = 3  # compare --fail-if-slower: B is slower than A by more than the limit, with confidence


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


class RichProgress:
    """The library's Progress callback drawn as one bar per mode (on stderr, so stdout stays clean)."""

    def __init__(self, console: Console):
        self.bars = Progress(
            TextColumn("{task.description:<11}"), BarColumn(), TextColumn("{task.fields[steps]:>6} steps"),
            TimeElapsedColumn(), console=console, transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RichProgress:
        self.bars.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._finish_all()
        self.bars.__exit__(*exc)

    def _finish_all(self) -> None:
        for task in self.tasks.values():
            self.bars.update(task, completed=self.bars.tasks[task].total)

    def phase(self, text: str) -> None:
        if not text.endswith(" mode"):
            self.bars.console.print(f"[dim]… {text}[/dim]")

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        if name not in self.tasks:
            self._finish_all()
            self.tasks[name] = self.bars.add_task(name, total=cap_s, steps=0)
        self.bars.update(self.tasks[name], completed=min(elapsed_s, cap_s), steps=steps)
