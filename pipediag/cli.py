"""The `pipediag` command. Thin: parse arguments, call a command module, turn errors into exit codes.

Exit codes: 0 done, 1 the user's code failed, 2 usage error, 3 `compare --fail-if-slower` failed,
130 interrupted (a partial report is still printed and written). Subcommands live in `pipediag/commands/`, one module each.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

from pipediag._version import __version__
from pipediag.commands import compare, diagnose, env, fix, report, scale, sweep
from pipediag.commands.common import EXIT_INTERRUPTED, EXIT_USAGE, EXIT_USER_CODE
from pipediag.errors import PipediagError, UsageError, UserCodeError

COMMANDS = {"diagnose": diagnose, "compare": compare, "sweep": sweep, "scale": scale, "env": env, "report": report,
            "fix": fix}


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would exit 2 itself; keep our HINT format
        raise UsageError(message, f"see '{self.prog} --help'")


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="pipediag", description="Why is my GPU idle? Diagnose tf.data input pipelines.")
    parser.add_argument("--version", action="version", version=f"pipediag {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_ArgumentParser)
    for module in COMMANDS.values():
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    out = Console()
    err = Console(stderr=True)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        return COMMANDS[args.command].run(args, out, err)
    except UserCodeError as error:
        err.print(error.user_traceback(), markup=False, highlight=False)
        err.print(f"[bold red]error:[/bold red] {error.message}", highlight=False)
        err.print(f"HINT: {error.hint or 'fix the error in your code shown above; pipediag frames are left out'}",
                  markup=False, highlight=False)
        return EXIT_USER_CODE
    except PipediagError as error:
        err.print(f"[bold red]error:[/bold red] {error.message}", highlight=False)
        if error.hint:
            err.print(f"HINT: {error.hint}", markup=False, highlight=False)
        return error.exit_code
    except KeyboardInterrupt:
        err.print("[bold red]interrupted[/bold red] before any mode had finished: nothing to report")
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
