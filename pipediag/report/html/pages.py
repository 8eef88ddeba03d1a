"""Which HTML page a result gets: a diagnosis, a comparison, a sweep, a scale result or a baseline profile.

The one place that knows every kind, so the CLI (`--html` on any command, `pipediag report FILE
--html`) writes a page without caring which result it holds.
"""

from __future__ import annotations

from typing import Any


def render_page(result: Any) -> str:
    """The self-contained HTML page of any pipediag result."""
    from pipediag.results.baseline import BaselineProfile
    from pipediag.results.compare import Comparison
    from pipediag.results.diagnose import Diagnosis
    from pipediag.results.scale import ScaleResult
    from pipediag.results.sweep import Sweep

    if isinstance(result, Diagnosis):
        from pipediag.report.html.diagnose import render_html

        return render_html(result)
    if isinstance(result, Comparison):
        from pipediag.report.html.compare import render_comparison_html

        return render_comparison_html(result)
    if isinstance(result, Sweep):
        from pipediag.report.html.sweep import render_sweep_html

        return render_sweep_html(result)
    if isinstance(result, ScaleResult):
        from pipediag.report.html.scale import render_scale_html

        return render_scale_html(result)
    if isinstance(result, BaselineProfile):
        from pipediag.report.html.baseline import render_baseline_html

        return render_baseline_html(result)
    raise TypeError(f"no HTML page for a {type(result).__name__}")
