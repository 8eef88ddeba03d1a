"""TensorFlow's one import (pipediag.backends.tf): the collector is paused around it and left as
it was found, whether the caller had it on or off."""

import gc

import pytest

from pipediag.backends import tf as backend


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_around_the_import_and_left_as_it_was(enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with backend._collections_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(ImportError), backend._collections_paused():
            raise ImportError("as a missing TensorFlow would")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert gc.isenabled()  # the import itself, at the top of this file, left it on
