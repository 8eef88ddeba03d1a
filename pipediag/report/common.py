"""What the reports of every result share: a number or a dash, a peak-memory cell, and the top
lines of a terminal report (the title with its partial tag, the step, batch and pipeline).

Plain strings and rich Text only; the pages and renderers of each result build on these.
"""

from __future__ import annotations

from rich.text import Text

from pipediag.analysis.ablation import unsettled


def num(value: float | None, fmt: str = "{:.1f}", missing: str = "—") -> str:
    """`value` formatted, or `missing` when it is unknown (None is never shown as 0)."""
    return missing if value is None else fmt.format(value)


WITHHELD = "faster, not taken as a gain"
UNSETTLED = "not settled: the control runs drifted apart"


def effect_text(d, change_key: str, effect: str) -> str:
    """A tuned-mode change's ablation effect as the reports say it: a "gain" that the fixes did not
    take (a speedup withheld as drift, or beside a verdict no input change can help: the change
    is in `d.tried`, the notes say why) is not called a gain; a "none" that the control runs'
    drift leaves open (analysis.ablation.unsettled, offered as a fix not measured) is not called none."""
    tried = any(c.key == change_key for c in d.tried)
    if effect == "gain" and tried:
        return WITHHELD
    ablation = getattr(d, "ablation", None)
    if effect == "none" and not tried and ablation is not None and any(
            u.change == change_key for u in unsettled(ablation)):
        return UNSETTLED
    return effect


def time_text(result) -> str:
    """A diagnosis's wall time, with where it went when its phases were recorded (schema 2)."""
    from pipediag.records.phases import phases_text

    phases = getattr(result, "phases", ())
    return phases_text(phases, result.elapsed_s, getattr(result, "startup_s", None))


def unmeasured_fixes_text(result) -> str | None:
    """Why the Fixes panel holds no measured fix by design (--quick), or None."""
    if result.settings.get("quick"):
        return ("Fixes not measured (--quick: the verdict and the slow stage only). Run the same command without "
                "--quick to measure them.")
    return None


def peak_gib(peak) -> str:
    """A peak device memory in GiB; ≤ when it is the process's peak so far (an upper bound), — unknown."""
    if peak is None:
        return "—"
    return f"{peak.bytes / 2**30:.2f}" + ("≤" if peak.scope == "process" else "")


def title(text: Text, tool: str, target: str | None, status: str, tag: str = "partial report") -> Text:
    """`pipediag <tool> <target>`, and a loud tag when the run did not finish."""
    if target is None:
        text.append(tool, style="bold")
    else:
        text.append(tool + " ", style="bold")
        text.append(target, style="cyan")
    if status != "complete":
        text.append(f"  [{status.upper()}: {tag}]", style="bold red")
    return text


def run_lines(text: Text, step, element, stages, timing: bool = False) -> Text:
    """The step, the batch (its structure and size) and the pipeline's stages, one line each where
    known; `timing` adds how the step was timed (the diagnosis shows it)."""
    if step:
        text.append("step: ", style="dim")
        text.append(step.description + "\n")
        if timing and step.framework and step.sync:
            text.append("timing: ", style="dim")
            text.append(f"{step.framework} step; {step.sync}\n")
    if element:
        text.append("batch: ", style="dim")
        text.append(f"{element.structure}")
        if element.batch_bytes:
            text.append(f"  ({element.batch_bytes / 2**20:.2f} MiB)")
        text.append("\n")
    if stages:
        text.append("pipeline: ", style="dim")
        text.append(" → ".join(s.label for s in stages) + "\n")
    return text
