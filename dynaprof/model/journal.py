"""The capture journal seen from the model: its records, one ``TypedDict`` per record type (key ``t``).

The writers (``dynaprof.capture``: ``core``, ``child``, ``recorder`` and ``hooks``, ``cprofile``)
build their records as these types and the reader (``dynaprof.ingest.assemble``) reads them through the same
types, so ``mypy --strict`` checks every key on both sides. The rule is: what is written is read
(``tests/e2e/test_journal_schema.py`` checks it on a real capture), or it is not written.

These types describe what this version writes. Readers also accept older journals: a key they
do not know is ignored, a key that is missing reads as unknown (``None``, or the field's default),
and every value is checked before use (a malformed record is skipped with a warning). Writers
never validate records: the ``stacks`` records are written often, and a ``TypedDict`` costs
nothing at runtime.

``JOURNAL_SCHEMA`` is written in the ``start`` record. Raise it when a record changes shape (a key
is added, removed or changes meaning). Journals without it are schema 1. The cache records
(``key_part``, ``cache_lookup``) are declared with the other cache facts in ``model.cache_keys``, whose
``LOOKUP_FACTS`` raise the schema for a new fact of a lookup.

All ``ts`` are seconds since the capture started. Function ids (``fn``, ``stacks``, ``inline``) are
the capture's function table's, valid within one journal.
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict cannot see
# ``NotRequired`` in a string annotation, and tests read ``__required_keys__``.

import math
import re
import sys
from itertools import islice
from typing import Any, Literal, TypeAlias

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover - Python 3.10 (typing_extensions comes with torch)
    from typing_extensions import NotRequired, TypedDict

# the cache records are declared with the rest of the cache facts (``model.cache_keys``)
from dynaprof.model.cache_keys import LOOKUP_SCHEMA
from dynaprof.model.cache_keys import CacheLookupRecord as CacheLookupRecord
from dynaprof.model.cache_keys import KeyPart as KeyPart

#: the capture journal's name in a run folder (written by ``capture``, read by ``pipeline``)
JOURNAL_FILE = "journal.jsonl"

#: version of the record shapes; journals written before it existed are 1
JOURNAL_SCHEMA = 12  # 4: key_part and cache_lookup records; 5: work records; 6: kernel records;
#: 7: aot_graph records, work records without fx_ops (the ops after AOT autograd, for every AOT backend);
#: 8: cache_lookup records of the kernel code caches, with their ``kernel``; kernel records' ``users``,
#: folded records (``dynaprof run --counterfactual``); 9: the sampler record's ``adapted_hz``; 10: its
#: ``own_s``, ``signal_samples`` and ``floor_s`` (what the sampler cost the compiling thread); 11:
#: replay_graph records (the graphs with parametrizations Inductor was handed, ``capture.replay``); 12:
#: a graph break site's ``via_file`` and ``via_line``. A new
#: fact of a cache lookup raises it from ``model.cache_keys.LOOKUP_FACTS`` (its ``since``): ``LOOKUP_SCHEMA``
JOURNAL_SCHEMA = max(JOURNAL_SCHEMA, LOOKUP_SCHEMA)

#: a value kept verbatim (span arguments, ``CompiledFrame.metrics`` entries): see ``is_scalar``
Scalar: TypeAlias = bool | int | float | str
#: a CompilationMetrics value as the journal carries it (lists: ``METRICS_LISTS`` only)
MetricValue: TypeAlias = bool | int | float | str | list[str]

#: the span of one DDP bucket's subgraph compile, ``ddp_bucket submod_N``: written by live capture
#: (``capture.hooks.ddp.install_ddp_buckets``) and made from a log's split records by the importer
DDP_BUCKET_SPAN = "ddp_bucket"

#: the function-table kind of the cause a wait on compile workers is sampled under; its samples are
#: split between the causes of the kernels it waited for by a ``kernel_wait`` record
KERNEL_WAIT_CAUSE = "cause:kernel_wait"

#: the function-table kind of the cause one Inductor kernel's build is sampled under (in process,
#: and its share of a wait); a ``kernel`` record says whose the kernel is, and the assembler gives
#: its samples to that cause, or splits them between the parametrization and the code it is fused with
KERNEL_CAUSE = "cause:kernel"
#: the function-table kind of a parametrized module's call that Dynamo traces as one piece, pushed
#: on the traced stack for its duration (torch 2.4, which traces no parametrization ``@property``:
#: it inlines ``Module._call_impl`` for each parametrized class and deep-copies the module into
#: fake tensors; ``capture.hooks.parametrized_calls``); named by the user's class, file and line 0
PARAMETRIZED_CALL = "parametrized_call"
#: the function a sampled stack ends in for the time the garbage collector ran since the sample
#: before (the sampler times each collection; the analysis reads its ``kind``): (name, file, line, kind)
GC_FUNCTION = ("garbage collection", "", 0, "gc")

#: CompilationMetrics fields that are never written to the journal and never kept in a session
#: (from either importer): configuration blobs, stack traces, graph shapes, cache keys, provenance
METRICS_DROP = re.compile(r"(_config|stack_trace|^graph_node_shapes$|_keys$|^inductor_provenance$)")
#: the list-valued CompilationMetrics fields a session reads; the journal carries no other lists
METRICS_LISTS = frozenset({"restart_reasons"})
#: the longest string kept as a span argument or a ``CompiledFrame.metrics`` entry
MAX_SCALAR_TEXT = 300
#: the most arguments kept per span
MAX_SPAN_ARGS = 20


def is_scalar(v: Any) -> bool:
    """A value kept as it is: a boolean, an integer, a finite float, or a short string."""
    t = type(v)
    if t is bool or t is int:
        return True
    if t is float:
        return math.isfinite(v)
    return t is str and len(v) <= MAX_SCALAR_TEXT


def span_args(name: str, *args: Any) -> dict[str, Scalar]:
    """The arguments kept for a span, from its events' arguments (later ones win): scalars only,
    no ``compile_id`` (the span's frame says it), at most ``MAX_SPAN_ARGS``; none for ``dynamo``,
    whose end event repeats the whole compilation metrics. The writer applies it to an end event
    (torch's end event carries its begin event's metadata too); both importers apply it again."""
    if name == "dynamo":
        return {}
    merged: dict[str, Any] = {}
    for a in args:
        if isinstance(a, dict):
            merged.update(a)
    kept = ((str(k), v) for k, v in merged.items() if k != "compile_id" and is_scalar(v))
    return dict(islice(kept, MAX_SPAN_ARGS))


# -- the records ----------------------------------------------------------------------------------

#: ``[name, file, line]``
LocationItem = list[Any]
#: what a compile window compiles: a Dynamo frame, AOT autograd's lazy backward, or compiled
#: autograd's capture of the autograd graph (and Dynamo's compiles of that graph)
FrameKind = Literal["forward", "backward", "compiled_autograd"]
#: ``[id, name, filename, firstlineno, kind]``: one function-table entry (kind: python, traced,
#: property, span, cause, ...)
FnItem = list[Any]
#: ``[frame key | None, attempt, thread id, [compiler ids], [traced ids], samples, seconds,
#: [open span ids], cause id | -1]``: samples of one stack (older journals: the first seven)
StackItem = list[Any]
#: ``[[traced ids, root first], calls, self seconds]``: torch's Dynamo profiler, per call path
InlineItem = list[Any]


class Start(TypedDict):
    """The first record. ``tid``: the thread the script (or the profiled block) runs on; ``argv``
    with secrets left out; ``env``: the variables that change compilation
    (``model.environment.compile_env``; schema 3)."""

    t: Literal["start"]
    schema: int
    pid: int
    argv: list[str]
    cwd: str
    python: str
    platform: str
    hostname: str
    epoch_ns: int
    dynaprof: str
    target: str
    rank: int | None
    world_size: int | None
    tid: int | None
    env: NotRequired[dict[str, str]]


class Torch(TypedDict):
    """torch's version; ``git``: ``torch.version.git_version`` where torch has it (schema 3)."""

    t: Literal["torch"]
    version: str
    git: NotRequired[str]


class Config(TypedDict):
    """The compiler settings that differ from their defaults, at the end of the capture:
    ``changes`` ``[module, name, value repr, default repr]``; ``error``: why some or all could not
    be read (schema 3)."""

    t: Literal["config"]
    changes: list[list[str]]
    error: NotRequired[str]


class Hooks(TypedDict):
    """The names of the torch hooks that were installed."""

    t: Literal["hooks"]
    items: list[str]


#: the hook (an item of ``Hooks``) that follows FX nodes and writes a ``kernel`` record per kernel
#: built: without it, how many kernels a compile built is unknown
PROVENANCE_HOOK = "provenance"


class Warn(TypedDict):
    """A capture warning, shown in the session's ``capture.warnings``."""

    t: Literal["warn"]
    msg: str


class Fn(TypedDict):
    """New function-table entries, written before the first record that uses their ids."""

    t: Literal["fn"]
    items: list[FnItem]


class CompileStart(TypedDict):
    """A compile window opened: a Dynamo frame compile, a lazy backward compile, or compiled
    autograd's capture. ``wrapped``: the user callable behind torch's wrapper frame
    (``torch.compile(module)``); ``fwd``: a backward's forward frame key."""

    t: Literal["compile_start"]
    key: str
    cid: str
    gen: int
    tid: int
    thread_name: str
    ts: float
    name: str
    file: str
    line: int
    call_site: list[LocationItem]
    kind: FrameKind
    wrapped: NotRequired[LocationItem]
    fwd: NotRequired[str]


class GraphBreakSite(TypedDict):
    reason: str
    file: str | None
    line: int | None
    #: where the site is in torch's own code: the nearest frame outside torch on the break's stack
    #: (the user code or library that reached it; schema 12)
    via_file: NotRequired[str]
    via_line: NotRequired[int]


class GraphBreakReason(TypedDict):
    reason: str


class Prop(TypedDict):
    """One traced ``@property``: exact time (outermost calls) and count."""

    label: str
    owner: str
    name: str
    getter_file: str
    getter_line: int
    parametrized: bool
    count: int
    instances: int
    seconds: float


class CompileEnd(TypedDict):
    """A compile window closed. ``duration``: dynaprof's own measure of it; ``graph_breaks``:
    None when torch's counters were not reachable; ``graph_break_reasons`` (from torch's
    counters) only when no break site was seen; ``inlines``/``inlines_final``: inlined calls in
    all attempts / in the final one, None without the hook; ``recompile_reasons``: every cache
    entry's guard failures (None: not seen)."""

    t: Literal["compile_end"]
    key: str
    duration: float
    attempt: int
    exc: str | None
    graph_breaks: int | None
    graph_break_reasons: NotRequired[list[GraphBreakReason]]
    graph_break_sites: list[GraphBreakSite]
    inlines: int | None
    inlines_final: int | None
    recompile_reasons: list[str] | None
    props: list[Prop]
    #: CPU instructions retired on the compiling thread in the window, where a hardware counter exists
    instructions: NotRequired[int]


class SpanEvent(TypedDict):
    """One of Dynamo's ``dynamo_timed`` events: ``ph`` B (begin), E (end) or i (instant: the cache
    markers, see ``dynaprof.model.cache``). ``args``: an E's ``span_args``; an i's
    ``time_saved_ns`` (a cache hit's), the one argument of it that is read."""

    t: Literal["span"]
    name: str
    ph: str
    tid: int
    ts: float
    key: str | None
    args: NotRequired[dict[str, Scalar]]


class Metrics(TypedDict):
    """Torch's CompilationMetrics of one compile (``m``: every field but ``METRICS_DROP``'s, None
    values and lists other than ``METRICS_LISTS`` left out; never runtime metrics). ``attempt``:
    the compile's attempt where torch says. A backward compile's metrics with no window open for
    them (``key`` None: no phase events) say whose they are: ``kind`` "backward", ``fwd`` (the
    forward frame key), ``tid`` and ``ts``, and become a frame of their own."""

    t: Literal["metrics"]
    key: str | None
    m: dict[str, MetricValue]
    attempt: NotRequired[int]
    kind: NotRequired[Literal["backward"]]
    fwd: NotRequired[str]
    tid: NotRequired[int]
    ts: NotRequired[float]


class GuardSizes(TypedDict, total=False):
    """Sizes of a compiled frame's guards (``error``: why they could not be measured)."""

    tree_leaf_count: int
    tree_manager_count: int
    tree_depth: int
    code_text_chars: int
    code_text_lines: int
    sources: dict[str, int]
    error: str


class Guards(GuardSizes):
    """Guard sizes of one compile; the tree is measured as the compile ends, the printed code at
    the end of the run (two records for one key, each with some of the sizes)."""

    t: Literal["guards"]
    key: str


class Inline(TypedDict):
    """Torch's Dynamo profiler's timings of one compile (``--inline-profile``)."""

    t: Literal["inline"]
    key: str | None
    items: list[InlineItem]


class KernelWait(TypedDict):
    """A wait on compile workers (``AsyncCompile._wait_futures``) ended: its samples carry the
    ``cause`` id (a ``KERNEL_WAIT_CAUSE`` entry); ``shares`` are ``[cause id, build seconds]`` of the
    kernels it waited for, as their workers measured them; ``unmeasured`` kernels had no measure."""

    t: Literal["kernel_wait"]
    key: str
    cause: int
    seconds: float
    unmeasured: int
    shares: list[list[Any]]


class Kernel(TypedDict):
    """An Inductor kernel this compile defined and built: its samples carry the ``cause`` id (a
    ``KERNEL_CAUSE`` entry). ``nodes`` is the number of distinct FX nodes it was made from,
    ``param_nodes`` how many of them a parametrization added; ``param`` is the cause id of those
    nodes and ``rest`` of the others (-1: none, or only nodes without provenance)."""

    t: Literal["kernel"]
    key: str
    cause: int
    name: str
    nodes: int
    param_nodes: int
    param: int
    rest: int
    #: the distinct causes of its nodes that are neither a parametrization's nor unknown (schema 8):
    #: what a counterfactual run's kernels are matched by
    users: NotRequired[list[int]]


class Folded(TypedDict):
    """Parametrizations the counterfactual run (``dynaprof run --counterfactual``) folded into
    plain tensors before a compile: ``Owner.tensor via Parametrization`` each."""

    t: Literal["folded"]
    tensors: list[str]


class Work(TypedDict):
    """One graph Inductor compiled in a window (``compile_fx._compile_fx_inner``): what Inductor made
    of it (``ir_nodes`` before fusion, ``kernels`` generated; None where torch's counters were reset
    mid-compile, as its cpp-wrapper second pass and its subprocess compile do). Schema 5 and 6 journals
    also carry ``fx_ops``, the ``call_function`` nodes of the graph (read as an ``AotGraph``'s ops);
    schema 7 counts them for every AOT backend in ``aot_graph`` records instead."""

    t: Literal["work"]
    key: str
    fx_ops: NotRequired[int | None]
    ir_nodes: int | None
    kernels: int | None


class AotGraph(TypedDict):
    """One graph AOT autograd handed its backend's compiler in a window (the forward or inference
    graph at the frame's compile, the backward at its lazy compile or, with symbolic sizes saved for
    it, at the forward's): its ``call_function`` nodes (``ops``; None where it had no graph)."""

    t: Literal["aot_graph"]
    key: str
    ops: int | None


class TensorMeta(TypedDict):
    """A tensor without its values: what the replay makes an uninitialised stand-in from."""

    shape: list[int]
    stride: list[int]
    dtype: str
    device: str
    grad: bool


class GraphNode(TypedDict):
    """One FX node of a ``replay_graph``: its op, its target's importable name and its arguments
    (a node as ``{"node": name}``, see ``capture.replay_graph``), its provenance (an index into the
    record's ``traces``; ``modules``: ``nn_module_stack`` entries as [key, path, class]), and its
    tensor's meta (an input's; a constant input's ``value``)."""

    name: str
    op: str
    target: NotRequired[str]
    args: NotRequired[Any]
    kwargs: NotRequired[Any]
    tensor: NotRequired[TensorMeta]
    value: NotRequired[Any]
    trace: NotRequired[int]
    modules: NotRequired[list[list[str]]]


class ReplayGraph(TypedDict):
    """A graph with parametrizations that Dynamo handed Inductor in window ``key``, as data (no
    value of any tensor): the replay (``capture.replay``) folds the parametrizations and lowers it
    again, building no kernel, to find the kernels only the parametrization made."""

    t: Literal["replay_graph"]
    key: str
    grad: bool
    traces: list[str]
    nodes: list[GraphNode]
    #: the JSON-safe config patches ``compile_fx`` was given (``mode=``, ``options=``)
    config: NotRequired[dict[str, Any]]
    #: it had symbolic sizes, kept at their hints: the replay lowers it at the run's sizes
    dynamic: NotRequired[bool]
    #: the modules that registered its custom ops (``torch.library.custom_op``): the replay
    #: imports them so the ops exist there
    imports: NotRequired[list[str]]


class ReplaySkipped(TypedDict):
    """A graph with parametrizations that the replay cannot rebuild, and why."""

    t: Literal["replay_skipped"]
    key: str
    reason: str


class Stacks(TypedDict):
    """Aggregated samples (written at the end of each compile window)."""

    t: Literal["stacks"]
    items: list[StackItem]


class Sampler(TypedDict):
    """The builtin sampler's totals: ``seconds`` inside compile windows, ``errors`` (failed samples);
    ``adapted_hz``: the lowest and the last rate used, where the default rate adapted below
    ``requested_hz`` (schema 9); ``own_s``: the seconds its ``signal_samples`` signal-handler samples
    took, timed round each; ``floor_s``: what one timer signal costs a compile on this machine,
    measured once per boot, where known (schema 10)."""

    t: Literal["sampler"]
    source: str
    requested_hz: float
    seconds: float
    errors: int
    notes: list[str]
    adapted_hz: NotRequired[list[float]]
    own_s: NotRequired[float]
    signal_samples: NotRequired[int]
    floor_s: NotRequired[float]


class CProfile(TypedDict):
    """``--cprofile``: the per-compile profile files by frame key, and the merged one."""

    t: Literal["cprofile"]
    files: dict[str, str]
    merged: str | None


class Unfinished(TypedDict):
    """A compile still running when the capture ended."""

    t: Literal["unfinished"]
    key: str


class Calls(TypedDict):
    """How many times each compiled entry's code ran (schema 3), counted on its compiled graph:
    frame key -> calls. A frame with no graph is absent (its calls are unknown)."""

    t: Literal["calls"]
    counts: dict[str, int]
    #: with --time-calls: frame key -> [total, median] host seconds of a call of its graph(s)
    #: (median: null for an entry of several graphs)
    seconds: NotRequired[dict[str, list[float | None]]]


class Device(TypedDict):
    t: Literal["device"]
    device: str | None


class End(TypedDict):
    """The last record (missing when the process died without dynaprof's cleanup)."""

    t: Literal["end"]
    exit_status: int | None
    reason: str
    ts: float


JournalRecord: TypeAlias = (
    Start | Torch | Config | Hooks | Warn | Fn | CompileStart | CompileEnd | SpanEvent | Metrics | Guards | Inline
    | KernelWait | Stacks | Sampler | CProfile | Unfinished | Calls | Device | End | KeyPart | CacheLookupRecord
    | Work | Kernel | AotGraph | Folded | ReplayGraph | ReplaySkipped
)

#: record type (``t``) -> its TypedDict
RECORD_TYPES: dict[str, type] = {
    "start": Start, "torch": Torch, "config": Config, "hooks": Hooks, "warn": Warn, "fn": Fn,
    "compile_start": CompileStart, "compile_end": CompileEnd, "span": SpanEvent, "metrics": Metrics,
    "guards": Guards, "inline": Inline, "kernel_wait": KernelWait, "stacks": Stacks, "sampler": Sampler,
    "cprofile": CProfile, "unfinished": Unfinished, "calls": Calls, "device": Device, "end": End,
    "key_part": KeyPart, "cache_lookup": CacheLookupRecord, "work": Work,
    "kernel": Kernel, "aot_graph": AotGraph, "folded": Folded,
    "replay_graph": ReplayGraph, "replay_skipped": ReplaySkipped,
}  # fmt: skip
