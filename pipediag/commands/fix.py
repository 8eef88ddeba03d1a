"""`pipediag fix RUN.json`: the fixes a diagnosis measured as gains, as a unified diff of the
builder's own source; `--apply` writes it. Then the proof: the patched builder's graph must have
the tuned stages, and `compare` measures it against the original, next to the diagnosis' ratio.

    pipediag diagnose data.py:make_dataset --model train.py:make_model --save run.json
    pipediag fix run.json --model train.py:make_model            # the diff, checked and measured
    pipediag fix run.json --model train.py:make_model --apply    # ... and written to data.py

Exit codes: 0 done, 1 the patched graph lacks a promised stage (nothing is written), 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from dataclasses import replace

from rich.console import Console

from pipediag.commands.common import EXIT_OK, STDOUT, check_writable, options_from_args, write_file
from pipediag.commands.diagnose import add_target_arguments
from pipediag.errors import PipediagError, UsageError


def register(sub) -> None:
    f = sub.add_parser("fix", help="the measured fixes as a diff of your builder's source; --apply writes it",
                       description="Turn the changes a saved diagnosis measured as gains into edits of the "
                       "builder's source (comments and formatting kept), prove them and, with --apply, write them.")
    f.add_argument("run", metavar="RUN.json", help="a diagnosis saved with 'pipediag diagnose --save FILE'")
    f.add_argument("--target", metavar="SPEC", help="the builder to patch (default: the diagnosis' own target)")
    f.add_argument("--apply", action="store_true", help="write the patched source over the builder's file")
    f.add_argument("--diff", metavar="FILE", help="also write the diff to FILE (for 'git apply'); - for standard "
                   "output, everything else then going to standard error")
    f.add_argument("--snapshot-dir", metavar="DIR",
                   help="turn a snapshot() fix into an edit, writing its snapshot under DIR")
    f.add_argument("--all-applied", action="store_true",
                   help="patch every change the tuned mode applied, not only those measured as gains")
    f.add_argument("--no-measure", action="store_true",
                   help="check the patched graph's stages only; skip the comparison with the original")
    add_target_arguments(f, max_seconds=(60.0, "time cap for the proving comparison, in seconds"))


def source_of(spec_text: str) -> tuple[str, str]:
    """(the .py file, the function name) a builder spec names."""
    from pipediag.builder import target as targets

    if spec_text.startswith("tfds:") or "built-in example" in spec_text:
        raise UsageError(f"{spec_text} is not your source code: there is nothing of yours to patch",
                         "apply the fixes of 'pipediag diagnose' by hand, or pass --target file.py:function")
    spec = targets.parse_spec(spec_text)
    if spec.path is not None:
        path = spec.path
    else:
        found = importlib.util.find_spec(spec.module)
        if found is None or not found.origin or not found.origin.endswith(".py"):
            raise UsageError(f"cannot find the source file of {spec.module}", "pass --target path/to/file.py:function")
        path = found.origin
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}", "run from the folder you diagnosed in, or pass --target")
    return path, spec.attr


def _snippets(diagnosis) -> dict:
    from pipediag.fixes import catalog

    snippets = {}
    for change in diagnosis.tuning:
        try:
            snippets[(change.kind, change.stage)] = catalog.code(change.kind, change.stage, **change.details)
        except (KeyError, TypeError, ValueError):
            pass
    snippets.update({(f.kind, f.stage): f.code for f in diagnosis.fixes})
    return snippets


def _snapshot_changes(diagnosis, folder: str | None) -> list:
    from pipediag.records.change import Change

    if not folder:
        return []
    return [Change("snapshot", f.stage, None, f.title, True) for f in diagnosis.fixes if f.kind == "snapshot"]


def _ratio(value, ci) -> str:
    if value is None:
        return "not measured"
    return f"{value:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.analysis.compare import LookPlan
    from pipediag.builder import target as targets
    from pipediag.builder.prepare import prepare_dataset
    from pipediag.modes.compare import ComparePlan
    from pipediag.patch.prove import prove
    from pipediag.patch.source import patch_source
    from pipediag.records.files import write_text
    from pipediag.results.diagnose import read_json
    from pipediag.tuner.selection import require_same_graph, select_gains

    if args.diff and args.diff != STDOUT:
        check_writable(args.diff, "--diff")
    diagnosis = read_json(args.run)
    target = args.target or diagnosis.target
    if args.target is None and diagnosis.settings.get("source") == "pipediag run":
        from pipediag.run.site import patch_target

        target = patch_target(diagnosis.settings.get("dataset_site"))  # or why the script cannot be patched
    selection = select_gains(diagnosis, gains_only=not args.all_applied)
    path, function = source_of(target)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    options = options_from_args(args)
    builder_kwargs = dict(options.builder_kwargs)
    batch_size = options.batch_size or diagnosis.settings.get("batch_size")
    batched = options.batched
    original = targets.load_callable(f"{path}:{function}")
    now = prepare_dataset(original, builder_kwargs, batch_size, batched, 0)
    require_same_graph(diagnosis, now.stages)

    changes = list(selection.gains) + _snapshot_changes(diagnosis, args.snapshot_dir)
    patch = patch_source(source, function, changes, path=os.path.relpath(path), snippets=_snippets(diagnosis),
                         snapshot_path=args.snapshot_dir, stage_labels=[s.label for s in diagnosis.stages])

    def say(text: str) -> None:
        out.print(text, markup=False, highlight=False, soft_wrap=True)

    if not changes:
        say(f"nothing to patch: the diagnosis measured no change as a gain ({len(selection.left_out)} left out)")
    if patch.changed and args.diff != STDOUT:  # with --diff - the diff is standard output's alone
        say(patch.diff().rstrip("\n"))
    for edit in patch.refused:
        say(f"\nnot edited: {edit.description}\n  why: {edit.reason}")
        if edit.snippet:
            say("  by hand:\n" + "\n".join("    " + line for line in edit.snippet.splitlines()))
    for change in selection.left_out:
        if change.reason and change.reason.startswith("measured no gain"):
            say(f"left out: {change.description} ({change.reason})")
    if args.diff and patch.changed:
        write_file(patch.diff(), args.diff)
    if not patch.changed:
        return EXIT_OK

    proof = prove(patch, original, builder_kwargs=builder_kwargs, batch_size=batch_size, batched=batched,
                  measure=False)
    for check in proof.checks:
        say(f"{'ok' if check.ok else 'MISSING'}  {check.kind} {check.stage or ''}: {check.text}")
    if not proof.stages_ok:
        raise PipediagError("the patched builder's graph lacks a stage the patch promised: nothing was written",
                            "apply the fixes by hand (snippets above) and report this case")
    if args.apply:
        write_text(patch.patched, path)
        err.print(f"wrote {path}", style="dim", markup=False, highlight=False)
    if args.no_measure:
        return EXIT_OK
    if not args.quiet:
        err.print(f"[dim]… comparing the patched builder with the original (up to {args.max_seconds:g} s)[/dim]")
    # A and B are built by prove() (the original and the patched builder): the step options are compare's
    compare_kwargs = dict(options=replace(options, builder_kwargs=None, batch_size=None, batched=True),
                          plan=ComparePlan(looks=LookPlan(), max_seconds=args.max_seconds),
                          label_a=f"{path}:{function}", label_b=f"{path}:{function} (patched)")
    measured = prove(patch, original, builder_kwargs=builder_kwargs, batch_size=batch_size, batched=batched,
                     compare_kwargs=compare_kwargs)
    iv = measured.comparison.interval
    said = "no interval" if iv is None else _ratio(iv.ratio, (iv.low, iv.high))
    say(f"measured: patched / original = {said} (fed step, 95% CI, {measured.comparison.verdict.verdict}); "
        f"the diagnosis measured tuned / {selection.baseline} = {_ratio(selection.together_speedup, selection.together_ci)}")
    return EXIT_OK
