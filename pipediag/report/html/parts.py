"""What every HTML page shares: the page shell (a Content-Security-Policy, the style, the footer),
`escape()` for every string that reaches a page, number and interval formats, and the parts the
pages are built of (facts, tables, notes, the banner of a partial run, the machine)."""

from __future__ import annotations

import html

from pipediag.report.common import num as fmt_num  # the pages use it from here
from pipediag.report.terminal.env import limits_rows

__all__ = [
    "captioned_table", "environment_facts", "escape", "facts_list", "fmt_interval", "fmt_num", "notes_list", "page",
    "page_head", "partial_banner", "result_row", "run_facts", "stages_table", "table_head",
]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a202c;max-width:60rem;
margin:0 auto;padding:1rem 1.5rem 3rem;background:#fff}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.2rem;margin:2rem 0 .5rem;border-bottom:1px solid #e2e8f0}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f7fafc;border:1px solid #e2e8f0;padding:.6rem .8rem;overflow-x:auto;white-space:pre-wrap}
table{border-collapse:collapse;margin:.5rem 0}th,td{padding:.25rem .6rem;border-bottom:1px solid #edf2f7;
text-align:right}th:first-child,td:first-child,.left{text-align:left}th{background:#f7fafc}
.facts{color:#4a5568}.facts dt{font-weight:600;float:left;clear:left;width:8rem}.facts dd{margin-left:8.5rem}
.banner{background:#fff5f5;border:2px solid #c53030;color:#742a2a;padding:.6rem 1rem;font-weight:600}
.verdict{border-left:6px solid;padding:.4rem 1rem;background:#f7fafc}
.bottleneck{font-size:1.4rem;font-weight:700;letter-spacing:.05em}
.muted{color:#718096}.note{color:#744210}.measured{color:#2f855a;font-weight:700}
figure{margin:1rem 0}figcaption{color:#4a5568;font-size:.9em}
.fix{margin:1rem 0}.fix h3{font-size:1rem;margin:.2rem 0}
tr.slow td{background:#fff5f5}code.slow,tr.slow code{color:#9b2c2c;font-weight:700}
.faster{color:#2f855a}.slower{color:#c53030}.unclear{color:#b7791f}
"""


def escape(value: object) -> str:
    """Every user-supplied string goes through this on its way into the page."""
    return html.escape(str(value), quote=True)


def table_head(names: tuple[str, ...], left: tuple[str, ...] = ()) -> str:
    """A `<thead>` row; the columns named in `left` are left-aligned (text), the others right (numbers)."""
    cells = "".join(f'<th class="left">{escape(n)}</th>' if n in left else f"<th>{escape(n)}</th>" for n in names)
    return f"<thead><tr>{cells}</tr></thead>"


def stages_table(stages, table_id: str = "stages") -> str:
    """The pipeline's stages as the user wrote them (shared by every page that shows a pipeline)."""
    head = ('<tr><th>#</th><th class="left">stage</th><th class="left">op</th><th>parallelism</th><th>random</th>'
            "<th>Python</th></tr>")
    rows = []
    for s in stages:
        par = "" if s.parallelism is None else ("AUTOTUNE" if s.parallelism == -1 else str(s.parallelism))
        rows.append(f'<tr><td>{s.index}</td><td class="left"><code>{escape(s.label)}</code></td><td class="left">{escape(s.op)}</td>'
                    f"<td>{escape(par)}</td><td>{'yes' if s.is_random else ''}</td>"
                    f"<td>{'py_function' if s.has_py_function else ''}</td></tr>")
    return f'<table id="{escape(table_id)}"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def fmt_interval(ci: tuple[float, float] | None, fmt: str = "{:.1f}") -> str:
    return "—" if ci is None or None in ci else f"{fmt.format(ci[0])} – {fmt.format(ci[1])}"


def run_facts(step, element, stages) -> list[tuple[str, str]]:
    """The step, the batch (with its size) and the pipeline's stages, as facts: the header every
    page of a run that fed a step starts with."""
    facts = []
    if step:
        facts.append(("step", step.description))
    if element:
        size = f"  ({element.batch_bytes / 2**20:.2f} MiB)" if element.batch_bytes else ""
        facts.append(("batch", f"{element.structure}{size}"))
    if stages:
        facts.append(("pipeline", " → ".join(s.label for s in stages)))
    return facts


def environment_facts(env, element_id: str = "environment") -> str:
    """The machine a result was measured on, as a definition list (shared by every page)."""
    gpus = ", ".join(f"{g.index}: {g.name}" for g in env.gpus) or f"none ({env.gpu_unavailable_reason or 'not found'})"
    facts = [
        ("Python", f"{env.python_version} on {env.platform}"),
        ("CPUs", f"{env.cpu_logical} logical" + (f", {env.cpu_physical} physical" if env.cpu_physical else "")),
        ("memory", f"{env.memory_total_bytes / 2**30:.1f} GiB"),
        *(limits_rows(env.container) if env.container is not None else []),
        ("TensorFlow", "not loaded" if env.tensorflow_version is None else
         f"{env.tensorflow_version} ({'CUDA' if env.tensorflow_cuda_build else 'CPU'} build), devices: "
         + (", ".join(env.tensorflow_devices) or "none")),
        ("GPUs", gpus + (f", driver {env.nvml_driver}" if env.nvml_driver else "")),
    ]
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return f'<dl class="facts" id="{escape(element_id)}">{rows}</dl>'


def notes_list(notes: list[str]) -> str | None:
    """Warnings and notes as a list, or None when there are none."""
    if not notes:
        return None
    items = "".join(f'<li class="note">{escape(n)}</li>' for n in notes)
    return f'<h2>Notes</h2><ul id="notes">{items}</ul>'


def partial_banner(status: str) -> str:
    """Loud, at the top of a page whose run did not finish."""
    if status == "complete":
        return ""
    return (f'<p class="banner" id="partial">{escape(status.upper())}: partial report — it shows what was measured '
            "before the run stopped; what did not finish is missing.</p>")


def facts_list(facts: list[tuple[str, str]], element_id: str = "facts") -> str:
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return f'<dl class="facts" id="{escape(element_id)}">{rows}</dl>'


def page_head(heading: str, status: str, facts: list[tuple[str, str]], elapsed_s: float, created_at: str) -> str:
    """The top of a result's page: its heading (HTML), the banner when the run did not finish, and
    its facts, the last one how long the run took and when it was made."""
    return heading + partial_banner(status) + facts_list([*facts, ("took", f"{elapsed_s:.1f} s, {created_at}")])


def captioned_table(heading: str, table_id: str, names: tuple[str, ...], rows: list[str], notes: list[str],
                    left: tuple[str, ...] = ()) -> str:
    """A section of one table (`names` for its head, rows already rendered) and, under it, a muted
    line for each note that explains its columns or its gaps."""
    caption = "".join(f'<p class="muted">{escape(n)}</p>' for n in notes)
    return (f'<h2>{heading}</h2><table id="{table_id}">{table_head(names, left=left)}'
            f'<tbody>{"".join(rows)}</tbody></table>{caption}')


def result_row(cells: list[str], result: str, cls: str = "") -> str:
    """A table row: the numbers right-aligned, then the result in words, left-aligned."""
    return (f"<tr{cls}>" + "".join(f"<td>{escape(c)}</td>" for c in cells)
            + f'<td class="left">{escape(result)}</td></tr>')


def page(title: str, sections: list[str | None]) -> str:
    """The page shell: the sections that rendered, under one escaped title. Every result makes
    its page with it (report.html.diagnose, compare, sweep, scale, baseline; report.html.pages
    picks one), from its own sections and the parts here."""
    from pipediag._version import __version__

    body = "\n".join(part for part in sections if part)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n"
        f'<footer class="muted"><p>pipediag {escape(__version__)}. This file is self-contained: it loads nothing from '
        "the network.</p></footer>\n</body></html>\n"
    )
