"""The hand-over of a ready batch in the terminal, the HTML page and the JSON round trip."""

from dataclasses import replace

from rich.console import Console

from pipediag.analysis.handover import Handover
from pipediag.report.html.diagnose import render_html
from pipediag.report.terminal.diagnose import modes_table
from pipediag.results.diagnose import Diagnosis
from tests.summaries import diagnosis

HANDOVER = Handover(batches=1500, ms_mean=0.081, ms_mean_ci=(0.075, 0.087), fetch_ms_mean=0.061,
                    fetch_ms_mean_ci=(0.057, 0.065), transfer_ms_mean=0.020, batch_format="numpy",
                    transfer_text="jax.device_put to cuda:0, waited for")


def test_the_hand_over_round_trips_through_json():
    d = replace(diagnosis(), handover=HANDOVER)
    again = Diagnosis.from_dict(d.to_dict())
    assert again.handover == HANDOVER
    assert d.to_dict()["handover"]["ms_mean_ci"] == (0.075, 0.087)
    assert Diagnosis.from_dict(diagnosis().to_dict()).handover is None


def test_the_terminal_and_the_html_show_it_with_its_interval():
    d = replace(diagnosis(), handover=HANDOVER)
    console = Console(width=200, record=True)
    console.print(modes_table(d))
    text = " ".join(console.export_text().split())  # the caption wraps at the table's width
    assert ("hand-over of a ready batch: 0.081 ms (95% 0.075–0.087) — get_next and conversion to numpy 0.061 ms "
            "+ device copy 0.020 ms (1500 timed)") in text
    page = render_html(d)
    assert '<p id="handover">hand-over of a ready batch: 0.081 ms' in page


def test_without_a_device_copy_it_says_why():
    d = replace(diagnosis(), handover=replace(HANDOVER, transfer_ms_mean=None, transfer_text="JAX runs on the CPU here"))
    console = Console(width=200, record=True)
    console.print(modes_table(d))
    assert "; no device copy: JAX runs on the CPU here (1500 timed)" in " ".join(console.export_text().split())
