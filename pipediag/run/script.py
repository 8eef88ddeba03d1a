"""`run_script()`: the library entry point of `pipediag run` (the CLI is commands/run.py)."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.records.options import RunOptions
from pipediag.results.diagnose import Diagnosis
from pipediag.run.hooks import Hooks
from pipediag.run.launch import Ending, ScriptTarget, launch
from pipediag.run.result import conclude_script
from pipediag.run.session import Fault, ScriptPlan, Session, StopScript, script_label
from pipediag.samples.environment import collect
from pipediag.samples.gpu import GpuReader
from pipediag.samples.sampler import Sampler
from pipediag.samples.selection import GpuSelection


@dataclass(frozen=True)
class ScriptRun:
    diagnosis: Diagnosis
    ending: Ending
    fault: Fault | None  # why the diagnosis is not complete (None: it is)


def run_script(target: ScriptTarget, plan: ScriptPlan | None = None, options: RunOptions | None = None) -> ScriptRun:
    """Run the script under the hooks, observe its training dataset, run the windows in its own
    loop, and conclude. Prints nothing; the script's own output goes where it goes."""
    from pipediag.api.options import sample_hz

    target.check()
    plan, options = plan or ScriptPlan(), options or RunOptions()
    label = script_label(target.script, target.module)
    clock_ns = options.clock_ns
    started = clock_ns()
    session = Session(plan, options, label)
    sampler = Sampler(gpu_reader=GpuReader(options.nvml_lib, gpus=GpuSelection.choose(options.gpus)),
                      hz=sample_hz(options), clock_ns=clock_ns)
    environment = collect(nvml_lib=options.nvml_lib, container=sampler.container)
    hooks = Hooks(session)
    hooks.install()
    sampler.start()
    session.start(sampler, environment)
    try:
        ending = launch(target, StopScript)
    finally:
        hooks.uninstall()
        session.close()
        log = sampler.stop()
    diagnosis, fault = conclude_script(session, ending, log, (clock_ns() - started) / 1e9, label)
    return ScriptRun(diagnosis, ending, fault)
