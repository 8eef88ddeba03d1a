"""One module per `pipediag` subcommand. Each has `register(subparsers)` and `run(args, out, err)`.

The CLI lists them in `COMMANDS`; a new subcommand is a new module plus one line there.
"""
