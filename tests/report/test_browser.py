"""The HTML report in a real browser: Debian's chromium, headless, driven by chromedriver (selenium).

It loads the file from disk, checks what a person would see (the verdict, the charts drawn with
a real size, the modes table), that the page ran no script and logged no error (a blocked fetch
or a Content-Security-Policy violation is logged as one), and keeps a screenshot under
tmp/artifacts/. Without chromium the test skips and says why — except under CI, which must have it
(.ci/run installs it).
"""

import os
import shutil
import tempfile
from dataclasses import replace

import pytest

from pipediag.records.readings import CpuReading, GpuDevice, GpuReading, Sample, SampleLog
from pipediag.records.verdict import Verdict
from pipediag.report.html.diagnose import render_html
from tests.summaries import GiB, diagnosis

# .ci/run's second pass (a venv with pipediag's own dependencies only, no test extra) leaves these
# out with `-m "not tf and not browser"`: the first pass, in the full venv, runs them.
pytestmark = pytest.mark.browser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARTIFACTS = os.path.join(ROOT, "tmp", "artifacts")
EVIL = "<script>alert(1)</script>"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1200,1000")


def _unavailable() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "no chromium on PATH (apt-get install -y chromium chromium-driver)"
    if not shutil.which("chromedriver"):
        return "no chromedriver on PATH (apt-get install -y chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser():
    reason = _unavailable()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the HTML report in chromium: {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    profile = tempfile.mkdtemp(prefix="pipediag-chromium-")
    for flag in FLAGS + (f"--user-data-dir={profile}",):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: selenium never tries to download one.
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def errors(driver):
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def report_with_gpu():
    d = diagnosis(verdict=Verdict("input", "high", "input-bound: the step waits", ("the step waited 70% of the time",)))
    stages = d.stages[:1] + (replace(d.stages[1], function=EVIL),) + d.stages[2:]
    samples = tuple(
        Sample(t * 10**8, CpuReading(40.0 + t, (50.0, 30.0 + t), 80.0, 0.0, GiB, 12 * GiB, 24 * GiB),
               (GpuReading(0, None if t == 4 else 10.0 * t, GiB, 80 * GiB, 300.0, 1980.0),))
        for t in range(11)
    )
    return replace(d, target=EVIL, stages=stages,
                   samples=SampleLog(0.1, samples, gpu_devices=(GpuDevice(0, "NVIDIA H200", 80 * GiB),)))


def test_the_log_check_catches_console_errors(browser, tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><title>x</title><script>console.error('deliberate')</script>")
    browser.get(page.as_uri())
    assert any("deliberate" in e["message"] for e in errors(browser))


def test_report_in_chromium(browser, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(report_with_gpu()), encoding="utf-8")
    browser.get(page.as_uri())
    assert browser.title.startswith("pipediag: input")
    verdict = browser.find_element("id", "verdict").text
    assert "INPUT" in verdict and "the step waited 70% of the time" in verdict
    assert EVIL in browser.find_element("tag name", "h1").text  # shown as text, not run
    assert EVIL in browser.find_element("id", "stages").text
    sizes = browser.execute_script(
        "return [...document.querySelectorAll('figure.chart svg')].map(s => {"
        "const r = s.getBoundingClientRect(); return [s.closest('figure').id, r.width, r.height,"
        " s.querySelectorAll('path').length]; })"
    )
    assert [s[0] for s in sizes] == ["chart-throughput", "chart-utilization"]
    assert all(w > 300 and h > 150 and paths > 10 for _, w, h, paths in sizes), sizes
    assert browser.execute_script("return document.scripts.length") == 0
    rows = browser.find_elements("css selector", "#modes tbody tr")
    assert [r.text.split()[0] for r in rows] == ["synthetic", "pipeline", "input_only", "tuned"]
    assert not browser.find_elements("id", "gpu-missing")  # this run had GPU readings
    assert errors(browser) == []

    os.makedirs(ARTIFACTS, exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1200, min(height + 100, 8000))
    shot = os.path.join(ARTIFACTS, "html-report.png")
    assert browser.save_screenshot(shot) and os.path.getsize(shot) > 10_000


@pytest.mark.parametrize("kind", ["comparison", "sweep", "scale"])
def test_other_pages_in_chromium(browser, tmp_path, kind):
    from pipediag.report.html.pages import render_page
    from tests.comparisons import comparison
    from tests.report.test_scale import result as scale_result
    from tests.report.test_sweep import a_sweep

    result, chart, verdict = {
        "comparison": (lambda: replace(comparison(), b=replace(comparison().b, label=EVIL)), "chart-rounds", "FASTER"),
        "sweep": (a_sweep, "chart-sweep", "Knee: batch size 256"),
        "scale": (scale_result, "chart-scale", "WORTH IT"),
    }[kind]
    page = tmp_path / f"{kind}.html"
    page.write_text(render_page(result()), encoding="utf-8")
    browser.get(page.as_uri())
    assert verdict in browser.find_element("id", "verdict").text
    if kind == "comparison":
        assert EVIL in browser.find_element("tag name", "h1").text  # shown as text, not run
    sizes = browser.execute_script(
        "return [...document.querySelectorAll('figure.chart svg')].map(s => {"
        "const r = s.getBoundingClientRect(); return [s.closest('figure').id, r.width, r.height]; })"
    )
    assert [s[0] for s in sizes] == [chart] and sizes[0][1] > 300 and sizes[0][2] > 150, sizes
    assert browser.execute_script("return document.scripts.length") == 0
    assert errors(browser) == []
