"""How the verdict's evidence writes shares and percentages."""

from __future__ import annotations


def pct(x: float) -> str:
    """A share (0.25) as a whole percentage ("25%")."""
    return f"{100 * x:.0f}%"


def pct_or_na(value: float | None) -> str:
    """A percentage (25.0) as "25%", or "n/a" when unknown."""
    return "n/a" if value is None else f"{value:.0f}%"
