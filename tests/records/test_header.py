"""The result header: one definition, the same fields in the same order for every result kind."""

from types import SimpleNamespace

from pipediag._version import __version__
from pipediag.records.header import SCHEMA_VERSION, created_now, file_header, header_fields


def test_header_fields_in_their_order():
    result = SimpleNamespace(created_at="2026-12-01T10:00:00+00:00", status="stalled", elapsed_s=1.5)
    header = file_header("scale", result)
    assert list(header) == ["schema_version", "kind", "pipediag_version", "created_at", "status", "elapsed_s"]
    assert header == {"schema_version": SCHEMA_VERSION, "kind": "scale", "pipediag_version": __version__,
                      "created_at": "2026-12-01T10:00:00+00:00", "status": "stalled", "elapsed_s": 1.5}


def test_header_read_back_with_the_defaults_of_old_files():
    assert header_fields({"status": "complete"}) == {"status": "complete", "elapsed_s": 0.0, "created_at": ""}
    assert header_fields({"status": "interrupted", "elapsed_s": 2.0, "created_at": "x"})["elapsed_s"] == 2.0


def test_created_now_is_utc_to_the_second():
    stamp = created_now()
    assert stamp.endswith("+00:00") and "." not in stamp
