"""One module per `pipediag` subcommand (listed in `cli.COMMANDS`), each with `register(subparsers)` and `run(args,
out, err)`; `common` holds what they share.
"""
