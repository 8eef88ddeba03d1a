"""Parse CSV a batch at a time: CsvDataset's row-by-row parsing becomes decode_csv on batches of lines.

`tf.data.experimental.make_csv_dataset` (and a plain `CsvDataset`) parses every row into one
tensor per column before anything else runs: a shuffle, a repeat and the batch then move
hundreds of scalar tensors per row, one row at a time. TensorFlow's "Load CSV data" tutorial
("Performance") reads the lines as strings instead, batches them, and parses each batch with one
`tf.io.decode_csv` call. This module finds that shape in the user's graph and rewrites it:

    CsvDataset(f, defaults, header) ─▶ [shuffle, repeat, take, skip, prefetch] ─▶ batch(n) ─▶ rest
  ⇒ TextLineDataset(f).skip(1 if header) ─▶ [the same stages, on lines] ─▶ batch(n)
        ─▶ map(decode_csv(lines, defaults, field_delim, use_quote_delim, na_value, select_cols)) ─▶ rest

The CsvDataset may be the pipeline's source or sit inside an interleave's function (as
make_csv_dataset builds it: a parallel interleave of one CsvDataset per file). decode_csv takes the
CsvDataset's own record defaults, delimiter, quoting, NA value and selected columns, so each row
parses to the same values (tests/tuner/test_batch_csv.py compares whole pipelines); empty lines and
malformed rows fail in both.

The one difference in meaning: CsvDataset lets a quoted field hold a newline, TextLineDataset
ends a line at every newline. `scan_quoted_newlines` reads the files for a line with an odd number
of quote characters (a quoted field that goes on past the newline; an escaped quote `""` is two)
and the change is refused where one is found. A split field is never parsed silently wrong: both
halves fail in decode_csv (an unterminated quoted field, a quote inside an unquoted one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipediag.backends.tf import tf
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.records.stage import Stage

CSV_OPS = ("CSVDatasetV2", "CSVDataset", "ExperimentalCSVDataset")
# Inputs of the CSV dataset ops, in order; record_defaults (one per column) follow select_cols,
# and CSVDatasetV2 ends with exclude_cols.
_PARAMS = ("filenames", "compression_type", "buffer_size", "header", "field_delim", "use_quote_delim", "na_value",
           "select_cols")
READER_STAGE_OPS = ("InterleaveDataset", "ParallelInterleaveDatasetV2", "ParallelInterleaveDatasetV3",
                    "ParallelInterleaveDatasetV4", "LegacyParallelInterleaveDatasetV2", "FlatMapDataset")
# Stages that only move whole rows (drop, repeat, reorder, hold them): they can move lines instead.
MOVE_OPS = (
    "PrefetchDataset", "OptionsDataset", "ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3",
    "ShuffleAndRepeatDataset", "ShuffleAndRepeatDatasetV2", "RepeatDataset", "TakeDataset", "SkipDataset",
    "ShardDataset", "ModelDataset", "MaxIntraOpParallelismDataset", "PrivateThreadPoolDataset",
)
BATCH_OPS = ("BatchDataset", "BatchDatasetV2", "ParallelBatchDataset")
_FUNCTION_BODY_OPS = {"Const", "Identity", "NoOp"}  # what else an interleave function may hold
_STRING = 7  # DataType enum
_SUFFIX = "_pipediag_batch_csv"
@dataclass(frozen=True, eq=False)
class CsvSite:
    """A CsvDataset whose rows only move until a batch: everything the rewrite needs."""

    reader_node: str  # the main-chain stage that reads the CSV: the CsvDataset, or the interleave running it
    function: str | None  # the interleave's function holding the CsvDataset; None when it is the source
    csv_node: str  # the CsvDataset node (in that function, or in the graph)
    between: tuple[str, ...]  # main-chain nodes between the reader and the batch
    batch_node: str
    header: bool
    compression: str
    buffer_size: int
    field_delim: str
    use_quote_delim: bool
    na_value: str
    select_cols: tuple[int, ...]
    record_defaults: tuple[np.ndarray, ...]  # one per column read: shape [0] (required) or [1] (the default)
    files: tuple[str, ...] | None = None  # for a CsvDataset source: its file names, when constant

    def decode_csv(self, lines):
        """The CsvDataset's parsing, on a batch of lines."""
        return tuple(tf.io.decode_csv(
            lines, record_defaults=[tf.constant(d) for d in self.record_defaults], field_delim=self.field_delim,
            use_quote_delim=self.use_quote_delim, na_value=self.na_value,
            select_cols=list(self.select_cols) or None))

    def snippet_details(self) -> dict:
        """What the fix's snippet shows: the decode_csv arguments that differ from its defaults."""
        kwargs = {}
        if self.field_delim != ",":
            kwargs["field_delim"] = self.field_delim
        if not self.use_quote_delim:
            kwargs["use_quote_delim"] = False
        if self.na_value:
            kwargs["na_value"] = self.na_value
        if self.select_cols:
            kwargs["select_cols"] = list(self.select_cols)
        return {"header": self.header, "decode_kwargs": kwargs, "record_defaults": defaults_code(self.record_defaults)}


def defaults_code(defaults) -> str:
    """The record defaults as Python, run-length encoded: `[tf.constant([], tf.string)] * 2 + [0.0] * 3`."""
    runs: list[list] = []
    for d in defaults:
        d = np.asarray(d)
        dtype = tf.as_dtype(d.dtype if d.dtype != object else np.bytes_).name
        if d.size == 0:
            text = f"tf.constant([], tf.{dtype})"
        else:
            value = d.reshape(-1)[0]
            text = repr(value.decode() if isinstance(value, bytes) else value.item())
            if dtype not in ("string", "float32", "int32"):
                text = f"tf.constant([{text}], tf.{dtype})"
        if runs and runs[-1][0] == text:
            runs[-1][1] += 1
        else:
            runs.append([text, 1])
    if len(runs) > 6:
        return "column_defaults"
    return " + ".join(f"[{t}] * {n}" if n > 1 else f"[{t}]" for t, n in runs)


def ref_node(ref: str) -> str:
    return ref.lstrip("^").split(":")[0]


def as_text(value) -> str:
    value = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
    return value.decode() if isinstance(value, bytes) else str(value)


class _Inputs:
    """The values of a CsvDataset's inputs: Consts of the graph, or of the interleave function
    and the arguments it captured from the graph."""

    def __init__(self, graph: PipelineGraph, reader_node: str, function=None):
        self.graph, self.function = graph, function
        self.captured: list[str] = []
        self.components = 0
        if function is not None:
            data = graph.data_inputs(reader_node)
            spec = graph.flat_spec(ref_node(data[0]))
            self.components = len(spec) if isinstance(spec, tuple) else 1
            self.captured = data[1:]

    def value(self, ref: str):
        if self.function is None:
            return self.graph.const_value(ref)
        name = ref_node(ref)
        node = next((n for n in self.function.node_def if n.name == name), None)
        if node is not None:
            if node.op != "Const":
                return None
            try:
                return tf.make_ndarray(node.attr["value"].tensor)
            except (TypeError, ValueError):
                return None
        args = [a.name for a in self.function.signature.input_arg]
        if name not in args or args.index(name) < self.components:
            return None
        i = args.index(name) - self.components
        return self.graph.const_value(self.captured[i]) if i < len(self.captured) else None


def _csv_in_function(graph: PipelineGraph, stage: Stage):
    """(function, its CsvDataset node) when the stage runs one, or a reason; None: no CSV here."""
    for name in graph.node_functions(stage.node):
        function = graph.functions.get(name)
        if function is None:
            continue
        csv = [n for n in function.node_def if n.op in CSV_OPS]
        if not csv:
            continue
        if len(csv) > 1:
            return f"{stage.label} reads CSV with more than one CsvDataset"
        others = sorted({n.op for n in function.node_def} - _FUNCTION_BODY_OPS - set(CSV_OPS))
        if others:
            return (f"{stage.label} does more than read the CSV in its function ({', '.join(others)}): "
                    "its rows must stay whole until the batch")
        if len(function.ret) != 1 or _identity_base(function, next(iter(function.ret.values()))) != csv[0].name:
            return f"{stage.label}'s function does not return the CsvDataset it builds"
        return function, csv[0]
    return None


def _identity_base(function, ref: str) -> str:
    name = ref_node(ref)
    nodes = {n.name: n for n in function.node_def}
    while name in nodes and nodes[name].op == "Identity":
        name = ref_node(nodes[name].input[0])
    return name


def find(graph: PipelineGraph, stages: list[Stage]) -> list[tuple[Stage, Stage | None, CsvSite | str]]:
    """Every stage that parses CSV (a CsvDataset, or an interleave running one), with the batch
    that follows it and the site to rewrite, or why it cannot be rewritten."""
    out: list[tuple[Stage, Stage | None, CsvSite | str]] = []
    for s in stages:
        if s.op in CSV_OPS:
            function, csv = None, graph.nodes[s.node]
        elif s.op in READER_STAGE_OPS:
            found = _csv_in_function(graph, s)
            if found is None:
                continue
            if isinstance(found, str):
                out.append((s, None, found))
                continue
            function, csv = found
        else:
            continue
        batch, rest = _batch_after(stages, s)
        if isinstance(rest, str):
            out.append((s, batch, rest))
            continue
        site = _site(graph, s, function, csv, batch, rest)
        out.append((s, batch, site))
    return out


def _batch_after(stages: list[Stage], reader: Stage) -> tuple[Stage | None, list[Stage] | str]:
    """(the batch after the reader, the stages between) or why the rows do not reach a batch whole."""
    between = []
    for t in stages[reader.index + 1:]:
        if t.op in BATCH_OPS:
            return t, between
        if t.kind == "cache":
            return None, (f"{t.label} comes before the batch: it would hold unparsed lines, and the parsing "
                          "it saves would then run every epoch")
        if t.kind == "batch":
            return t, f"{t.label} is not a plain batch ({t.op}): decode_csv cannot follow it"
        if t.op not in MOVE_OPS:
            return None, (f"{t.label} comes between the CSV reading and the batch and does more than move rows "
                          "(it may look at a row's fields): the rows must stay whole lines until the batch")
        between.append(t)
    return None, "no batch follows the CSV reading: there is no batch of lines to parse at once"


def _site(graph: PipelineGraph, reader: Stage, function, csv, batch: Stage, between: list[Stage]) -> CsvSite | str:
    inputs = _Inputs(graph, reader.node, function)
    refs = [i for i in csv.input if not i.startswith("^")]
    columns = len(csv.attr["output_types"].list.type)
    params = dict(zip(_PARAMS, refs))
    values = {k: inputs.value(params[k]) for k in _PARAMS[1:]}
    missing = [k for k, v in values.items() if v is None]
    if missing:
        return f"its CsvDataset's {', '.join(missing)} is not a constant pipediag can read"
    compression = as_text(values["compression_type"])
    if compression:
        return (f"its files are compressed ({compression}): pipediag reads them as plain text to check for quoted "
                "fields that span lines, so it leaves compressed CSV alone")
    defaults = [inputs.value(r) for r in refs[len(_PARAMS):len(_PARAMS) + columns]]
    if len(defaults) != columns or any(d is None for d in defaults):
        return "its CsvDataset's record_defaults are not constants pipediag can read"
    if csv.op == "CSVDatasetV2" and len(refs) > len(_PARAMS) + columns:
        exclude = inputs.value(refs[len(_PARAMS) + columns])
        if exclude is None or np.asarray(exclude).size:
            return ("its CsvDataset drops columns with exclude_cols, which decode_csv has no equivalent of "
                    "(select_cols would need the number of columns)")
    if any(list(s.dim) for s in csv.attr["output_shapes"].list.shape):
        return "its CsvDataset's rows are not scalars"
    files = None
    if function is None:
        names = graph.const_value(params["filenames"])
        if names is None:
            return "its CsvDataset's file names are not constants pipediag can read"
        files = tuple(as_text(n) for n in np.asarray(names).reshape(-1))
    return CsvSite(
        reader_node=reader.node,
        function=None if function is None else function.signature.name,
        csv_node=csv.name,
        between=tuple(t.node for t in between),
        batch_node=batch.node,
        header=bool(values["header"]),
        compression=compression,
        buffer_size=int(values["buffer_size"]),
        field_delim=as_text(values["field_delim"]),
        use_quote_delim=bool(values["use_quote_delim"]),
        na_value=as_text(values["na_value"]),
        select_cols=tuple(int(c) for c in np.asarray(values["select_cols"]).reshape(-1)),
        record_defaults=tuple(np.asarray(d) for d in defaults),
        files=files,
    )


# -- the rewrite ------------------------------------------------------------------------


def _strings(node, batch_dim: int | None = None) -> None:
    """The stage's output is one string per element now (a line), or a batch of them."""
    type_key = "output_types" if "output_types" in node.attr else "Toutput_types"
    del node.attr[type_key].list.type[:]
    node.attr[type_key].list.type.append(_STRING)
    shapes = node.attr["output_shapes"].list
    del shapes.shape[:]
    shape = shapes.shape.add()
    if batch_dim is not None:
        shape.dim.add().size = batch_dim


def _lines_function(graph: PipelineGraph, site: CsvSite) -> str:
    """A copy of the interleave's function that reads lines (TextLineDataset, skipping the
    header line) where it built the CsvDataset; returns its name."""
    original = graph.functions[site.function]
    function = type(original)()
    function.CopyFrom(original)
    function.signature.name = site.function + _SUFFIX
    csv = next(n for n in function.node_def if n.name == site.csv_node)
    refs = [i for i in csv.input if not i.startswith("^")]
    controls = [i for i in csv.input if i.startswith("^")]
    csv.op = "TextLineDataset"
    del csv.input[:]
    csv.input.extend(refs[:3] + controls)  # filenames, compression_type, buffer_size
    for key in list(csv.attr):
        del csv.attr[key]
    if site.header:
        count = function.node_def.add()
        count.name = "pipediag_header_lines"
        count.op = "Const"
        count.attr["dtype"].type = tf.int64.as_datatype_enum
        count.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(1, dtype=tf.int64))
        skip = function.node_def.add()
        skip.name = "pipediag_skip_header"
        skip.op = "SkipDataset"
        skip.input.extend([f"{csv.name}:handle:0", "pipediag_header_lines:output:0"])
        skip.attr["output_types"].list.type.append(_STRING)
        skip.attr["output_shapes"].list.shape.add()
        for node in function.node_def:
            if node is skip:
                continue
            for i, ref in enumerate(node.input):
                if ref == f"{csv.name}:handle:0":
                    node.input[i] = "pipediag_skip_header:handle:0"
    graph.add_function(function)
    return function.signature.name


def _lines_source(site: CsvSite):
    files = list(site.files or ())

    def lines(_unused):
        def read(f):
            ds = tf.data.TextLineDataset(f, compression_type=site.compression, buffer_size=site.buffer_size)
            return ds.skip(1) if site.header else ds
        if len(files) == 1:
            return read(files[0])
        # CsvDataset skips the header of every file: one TextLineDataset per file, in order
        return tf.data.Dataset.from_tensor_slices(files).flat_map(read)

    return lines


def rewrite(graph: PipelineGraph, site: CsvSite) -> None:
    """Lines instead of parsed rows up to the batch, then decode_csv on each batch. Raises
    GraphError (the graph may then be half edited: the caller keeps a copy)."""
    batch = graph.nodes[site.batch_node]
    shapes = batch.attr["output_shapes"].list.shape
    dim = shapes[0].dim[0].size if shapes and len(shapes[0].dim) else -1
    if site.function is None:
        if site.files is None:
            raise GraphError("the CsvDataset's file names are not constants")
        graph.splice_over(site.reader_node, _lines_source(site), "lines", keep_upstream=False)
    else:
        new = _lines_function(graph, site)
        node = graph.nodes[site.reader_node]
        for key in node.attr:
            if node.attr[key].HasField("func") and node.attr[key].func.name == site.function:
                node.attr[key].func.name = new
        _strings(node)
    for name in site.between:
        _strings(graph.nodes[name])
    _strings(graph.nodes[site.batch_node], dim)

    def decode_csv(lines):  # the stage's label: map(decode_csv)
        return site.decode_csv(lines)

    def decode(ds):
        return ds.map(decode_csv, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    graph.splice_over(site.batch_node, decode, "decode_csv")
