"""`python -m pipediag`: the same as the `pipediag` command, without installing it."""

import sys

from pipediag.cli import main

sys.exit(main())
