"""`pipediag run [options] SCRIPT [args...]` / `pipediag run [options] -m MODULE [args...]`:
diagnose a training script as it is (pipediag/run/)."""

from __future__ import annotations

import argparse
import os

from rich.console import Console

from pipediag.commands.common import (
    EXIT_OK,
    EXIT_USER_CODE,
    add_output_arguments,
    check_outputs,
    exit_code_for,
    positive_float,
    positive_int,
    print_and_write,
)
from pipediag.commands.diagnose import add_gpus_argument, check_gpus_argument
from pipediag.errors import UsageError, UserCodeError

WEIGHTS_WARNING = ("The synthetic window trains your model on one real batch repeated, and the tuned window on "
                   "pipediag's rewrite of your pipeline, for a few seconds each: this changes the weights. With "
                   "--then stop (the default) the script ends after the diagnosis; with --then continue training "
                   "goes on from those weights with your real pipeline, where it was.")

DESCRIPTION = ("Run your training script unmodified (as `python SCRIPT ARGS` or `python -m MODULE ARGS`), time its "
               "real steps on its tf.data pipeline (a Python loop over a Dataset, a tf.distribute distributed "
               "dataset, or Keras 3 model.fit), then swap what the loop receives for a measured window each: "
               "one real batch repeated (synthetic), the pipeline alone while the loop waits (input_only), and "
               "pipediag's tuned rewrite of your pipeline (tuned). The report is diagnose's. " + WEIGHTS_WARNING)


def register(sub) -> None:
    r = sub.add_parser("run", help="diagnose your training script as it is (its own loop, model and step)",
                       description=DESCRIPTION, epilog="Multi-worker training (TF_CONFIG set) is out of scope.")
    r.add_argument("-m", dest="module", action="store_true",
                   help="the first argument is a module to run as `python -m` does, not a script")
    r.add_argument("--observe-steps", type=positive_int, metavar="N",
                   help="timed steps of the real loop before the windows (default: until the step rate is stable, "
                   "at most --window-seconds)")
    r.add_argument("--window-seconds", type=positive_float, default=10.0,
                   help="time cap of each window, and of the observation (default: 10)")
    r.add_argument("--then", choices=["stop", "continue"], default="stop",
                   help="after the diagnosis: stop the script (default), or give the loop its real iterator back "
                   "and let training go on (the weights changed in the windows; see above)")
    r.add_argument("--first-batch-timeout", type=positive_float, default=300.0, metavar="SECONDS",
                   help="stop the script when it has taken no batch of a tf.data dataset by then (default: 300)")
    r.add_argument("--no-tuned", action="store_true", help="leave out the tuned window (and its ablation)")
    r.add_argument("--no-anatomy", action="store_true", help="leave out the per-stage anatomy")
    r.add_argument("--ram-budget-mb", type=positive_int, help="most memory a cache may take (default: half of free)")
    r.add_argument("--sample-hz", type=positive_float, default=10.0, help="CPU/GPU sampling rate (default: 10)")
    r.add_argument("--stall-timeout", type=positive_float, metavar="SECONDS",
                   help="a window step or batch that takes longer ends the windows as stalled")
    r.add_argument("--quiet", action="store_true", help="no progress lines, the report only")
    add_gpus_argument(r)
    add_output_arguments(r, save_alias=True)
    r.add_argument("script", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS...]",
                   help="the script and its own arguments (with -m: the module and its arguments)")
    # argparse keeps a parser's option strings in this mapping (no public accessor): the long ones
    # are what misplaced_options looks for after the script
    r.set_defaults(run_options=tuple(o for o in r._option_string_actions if o.startswith("--")))


def misplaced_options(script_args: tuple[str, ...], own: tuple[str, ...]) -> list[str]:
    """pipediag run's own long options that follow the script, and so reach the script as its
    arguments (`pipediag run train.py --json run.json` gives train.py `--json run.json`)."""
    found = []
    for token in script_args:
        name = token.split("=", 1)[0]
        if name in own and name not in found:
            found.append(name)
    return found


class LineProgress:
    """Progress as one line per phase on stderr: a live bar would fight the script's own output."""

    def __init__(self, err: Console):
        self.err = err
        self._modes: set[str] = set()

    def phase(self, text: str) -> None:
        if not text.endswith(" mode"):
            self.err.print(f"pipediag run: {text}", style="dim", markup=False, highlight=False)

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        if name not in self._modes:
            self._modes.add(name)
            self.err.print(f"pipediag run: {name} window (up to {cap_s:g} s)", style="dim", markup=False,
                           highlight=False)


def target_from_args(args: argparse.Namespace):
    from pipediag.run.launch import ScriptTarget

    if not args.script:
        raise UsageError("give a SCRIPT (or -m MODULE) to run", "pipediag run train.py --epochs 3")
    first, rest = args.script[0], tuple(args.script[1:])
    return ScriptTarget(None, first, rest) if args.module else ScriptTarget(first, None, rest)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.records.options import RunOptions
    from pipediag.records.run import StopRule
    from pipediag.results.diagnose import MODE_NAMES

    if os.environ.get("TF_CONFIG"):
        raise UsageError("TF_CONFIG is set: multi-worker training is out of scope for pipediag run",
                         "run one worker's script alone without TF_CONFIG (the pipeline and step are the same), or "
                         "diagnose the pipeline with 'pipediag diagnose file.py:make_dataset'")
    target = target_from_args(args)
    target.check()
    misplaced = misplaced_options(target.args, getattr(args, "run_options", ()))
    if misplaced:  # not an error: the script may take an option of the same name
        err.print(f"pipediag run: {', '.join(misplaced)} after the script reach{'es' if len(misplaced) == 1 else ''} "
                  f"the script as its own argument{'s' if len(misplaced) > 1 else ''}, not pipediag; pipediag's "
                  "options go before the script: pipediag run [OPTIONS] SCRIPT [ARGS...]", style="yellow",
                  markup=False, highlight=False)
    check_outputs(args)
    check_gpus_argument(args)
    from pipediag.run.session import ScriptPlan  # imports TensorFlow: after the checks a user can act on without it

    modes = tuple(m for m in MODE_NAMES if not (args.no_tuned and m == "tuned"))
    plan = ScriptPlan(then=args.then, observe_steps=args.observe_steps,
                      rule=StopRule(max_seconds=args.window_seconds, min_seconds=min(2.0, args.window_seconds / 2)),
                      first_batch_timeout_s=args.first_batch_timeout, modes=modes, anatomy=not args.no_anatomy,
                      ram_budget_bytes=args.ram_budget_mb * 2**20 if args.ram_budget_mb else None)
    options = RunOptions(sample_hz=args.sample_hz, stall_timeout_s=args.stall_timeout, gpus=args.gpus,
                         progress=None if args.quiet else LineProgress(err))
    import pipediag.backends.tf  # noqa: F401  (TensorFlow imported through pipediag: its start-up lines filtered)
    from pipediag.report.terminal.diagnose import render_diagnosis
    from pipediag.run.script import run_script

    result = run_script(target, plan, options)
    diagnosis = result.diagnosis
    print_and_write(diagnosis, render_diagnosis(diagnosis), args, out, err, name_files=not args.quiet)
    if result.ending.error is not None:  # the script raised: its traceback, pipediag's frames left out
        raise UserCodeError("script", result.ending.error,
                            "the report above has what was measured before it; fix the error shown")
    if result.fault is not None:
        err.print(f"[bold red]error:[/bold red] {result.fault.message}", highlight=False)
        err.print(f"HINT: {result.fault.hint}", markup=False, highlight=False)
        return result.fault.exit_code
    code = exit_code_for(diagnosis.status)
    if code == EXIT_OK and isinstance(result.ending.code, int) and result.ending.code:
        return EXIT_USER_CODE
    return code
