"""The CSV files a CsvDataset reads, scanned for quoted fields that span lines (which reading lines would split)."""

from __future__ import annotations

import time

from pipediag.backends.tf import tf
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.tuner.batch_csv import CsvSite, as_text, ref_node
from pipediag.tuner.rules import QuoteScan

SCAN_SECONDS = 5.0  # reading the files for quoted newlines stops after this long (and says so)
SCAN_CHUNK_BYTES = 8 << 20
MAX_FILE_NAMES = 100_000


def file_names(graph: PipelineGraph, site: CsvSite, limit_s: float = SCAN_SECONDS) -> list[str] | None:
    """The files the CsvDataset reads: its constant names, or the names the interleave's input
    yields (read within limit_s, at most MAX_FILE_NAMES, each once). None when they cannot be read."""
    if site.files is not None:
        return list(site.files)
    source = ref_node(graph.data_inputs(site.reader_node)[0])
    try:
        names = graph.cut(source)
        if not isinstance(names.element_spec, tf.TensorSpec) or names.element_spec.dtype != tf.string:
            return None
        seen: dict[str, None] = {}
        start = time.monotonic()
        for name in names.take(MAX_FILE_NAMES):
            seen.setdefault(as_text(name.numpy()), None)
            if time.monotonic() - start > limit_s:
                break
        return list(seen)
    except (GraphError, tf.errors.OpError, ValueError, TypeError):
        return None


def scan_quoted_newlines(files: list[str] | None, use_quote_delim: bool, limit_s: float = SCAN_SECONDS,
                         clock=time.monotonic) -> QuoteScan:
    """Read the files for a quoted field that holds a newline: a line (up to a newline) with an
    odd number of quote characters opens a quoted field that goes on past it (an escaped quote
    inside a quoted field is two). Stops after limit_s and says how far it got."""
    if not use_quote_delim:
        return QuoteScan(files_total=len(files or ()), files_checked=0, bytes_checked=0, quotes_special=False)
    if files is None:
        return QuoteScan(files_total=None, files_checked=0, bytes_checked=0)
    start = clock()
    checked = total_bytes = 0
    for path in files:
        line, odd = 1, 0
        with tf.io.gfile.GFile(path, "rb") as f:
            while True:
                chunk = f.read(SCAN_CHUNK_BYTES)
                if not chunk:
                    break
                total_bytes += len(chunk)
                if not odd and b'"' not in chunk:
                    line += chunk.count(b"\n")
                else:
                    pieces = chunk.split(b"\n")
                    for i, piece in enumerate(pieces):
                        odd ^= piece.count(b'"') & 1
                        if i < len(pieces) - 1:
                            if odd:
                                return QuoteScan(len(files), checked, total_bytes, spanning=(path, line))
                            line += 1
                if clock() - start > limit_s:
                    return QuoteScan(len(files), checked, total_bytes, seconds=clock() - start)
        checked += 1
    return QuoteScan(len(files), checked, total_bytes, seconds=clock() - start)
