"""`pipediag diagnose`'s command line: the batching and depth options (argparse only, nothing runs)."""

import pytest

from pipediag.cli import build_parser
from pipediag.commands.common import scale_command
from pipediag.errors import UsageError


def test_batched_and_unbatched_force_a_reading_and_none_leaves_it_to_the_shapes():
    parse = build_parser().parse_args
    assert parse(["diagnose", "d.py:f"]).batched is None
    assert parse(["diagnose", "d.py:f", "--batched"]).batched is True
    unbatched = parse(["diagnose", "d.py:f", "--unbatched", "--batch-size", "8"])
    assert unbatched.batched is False and "--unbatched" in scale_command(unbatched)


@pytest.mark.parametrize("both", [["--batched", "--unbatched"], ["--quick", "--thorough"]])
def test_opposite_options_together_are_refused(both):
    with pytest.raises(UsageError, match="not allowed with argument"):
        build_parser().parse_args(["diagnose", "d.py:f", *both])


def test_quick_is_off_by_default():
    assert build_parser().parse_args(["diagnose", "--demo", "--quick"]).quick
    assert not build_parser().parse_args(["diagnose", "--demo"]).quick
