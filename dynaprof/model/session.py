"""The session: everything dynaprof learned about one run, as typed, versioned data.

``session.json`` is the contract between capture and every renderer; it is documented in
``docs/session-format.md``. All times are seconds; ``*_s`` fields that start a span are relative
to the run's start (``RunInfo.start_time``). ``None`` always means *unknown* (the torch version
did not expose it, or capture was cut short), never zero.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

from dynaprof.fmt import stored_s
from dynaprof.model import frame_keys
from dynaprof.model.cache_keys import CacheKeys
from dynaprof.model.code_names import code_name
from dynaprof.model.phases import CATEGORIES as CATEGORIES
from dynaprof.model.phases import CATEGORY_LABELS as CATEGORY_LABELS
from dynaprof.model.phases import GROUP_OF as GROUP_OF
from dynaprof.model.phases import PHASE_GROUPS as PHASE_GROUPS
from dynaprof.model.phases import PHASE_LABELS as PHASE_LABELS
from dynaprof.model.phases import PHASES as PHASES
from dynaprof.model.phases import PhaseGroup as PhaseGroup

#: Bump when a change would make an older dynaprof misread a session.
SCHEMA_VERSION = 3
#: what changed with each schema version (older sessions still load)
SCHEMA_HISTORY = {
    1: "first version",
    2: "samples carry torch's open spans and the FX-node cause; attribution gains causes, matrix, "
    "restart_waste and parametrizations (docs/session-format.md)",
    3: "attribution's keys are the phase groups (PHASE_GROUPS), each the sum of its phases' seconds: "
    "restarts and parametrization left it (see restart_waste and causes), cpp_triton_compile became "
    "kernel_compile and toolchain_setup, inductor_codegen became inductor, user_tracing became dynamo_tracing",
}

@dataclass
class RestartWaste:
    """Sampled seconds in attempts that a restart of analysis threw away."""

    seconds: float = 0.0
    by_cause: dict[str, float] = field(default_factory=dict)


@dataclass
class Axes:
    """The two axes of every sampled second: what the compiler was doing (phase) and on behalf of
    which user code (cause). Stored inside ``attribution`` in session.json."""

    #: cause -> seconds; ``parametrization`` holds everything spent for parametrizations
    causes: dict[str, float] = field(default_factory=dict)
    #: phase (``PHASES``) -> cause -> seconds
    matrix: dict[str, dict[str, float]] = field(default_factory=dict)
    restart_waste: RestartWaste = field(default_factory=RestartWaste)
    #: parametrization ("Linear.weight via Parametrization") -> seconds, the detail of ``causes``
    parametrizations: dict[str, float] = field(default_factory=dict)


#: keys of ``Axes`` nested in a session.json ``attribution`` object
AXES_KEYS = ("causes", "matrix", "restart_waste", "parametrizations")

#: cause keys that are not user code
CAUSE_WHOLE_GRAPH = "whole graph"
CAUSE_UNKNOWN = "unknown (no provenance)"
CAUSE_PARAMETRIZATION = "parametrization"
#: the module whose injected ``@property`` (and its ``get_parametrized``) is parametrization machinery:
#: the one spelling capture's provenance and the analysis's cause rules both match paths against
PARAMETRIZE_FILE = "/torch/nn/utils/parametrize.py"
#: the one-time toolchain setup of a process's first C++ kernel where kernels of several causes
#: were built (any of them would have paid it): not graph work, so not ``whole graph``
CAUSE_TOOLCHAIN = "first C++ kernel's toolchain setup"
#: Python's cyclic garbage collector: a collection's time grows with everything alive, not with the
#: code whose allocation started it, so it is no cause's
CAUSE_COLLECTOR = "the garbage collector"
#: causes that name no user code
UNNAMED_CAUSES = (CAUSE_WHOLE_GRAPH, CAUSE_UNKNOWN, CAUSE_TOOLCHAIN, CAUSE_COLLECTOR)


@dataclass
class FunctionRef:
    """One function as it appears in stacks. ``kind`` says which view it belongs to:
    ``python`` (a real frame of the compiler), ``native`` (a C/C++ frame from py-spy --native),
    ``traced`` (user code Dynamo was symbolically executing), ``property`` (a ``@property``
    getter Dynamo traced, labelled ``Owner.name``) or ``gc`` (``GC_FUNCTION``: the garbage
    collector's time, at the end of the stack whose allocation started it; ``model.journal``)."""

    name: str
    filename: str
    lineno: int
    kind: str = "python"


@dataclass
class Location:
    name: str
    filename: str
    lineno: int


@dataclass
class Span:
    """A timed phase (Dynamo's ``dynamo_timed`` spans, or dynaprof's own)."""

    name: str
    start_s: float
    duration_s: float
    thread: int = 0
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Attempt:
    index: int
    start_s: float | None
    duration_s: float | None
    #: ``timed`` (torch's ``compile_attempt_N`` span) or ``sampled`` (torch did not time attempts:
    #: ``duration_s`` is the sampled seconds of that attempt, ``start_s`` unknown)
    source: str = "timed"


@dataclass
class RestartReason:
    """One restart reason in words (``analysis.findings.reason_words``), where torch raised it, and
    how many restarts it caused; ``count`` is None where torch gives only a set of reasons (2.5+:
    ``restart_reasons`` is a set, so several restarts with one reason show once)."""

    text: str
    count: int | None = None
    filename: str | None = None
    lineno: int | None = None


@dataclass
class GraphBreak:
    reason: str
    filename: str | None = None
    lineno: int | None = None
    #: a site in torch's own code: the nearest frame outside torch that reached it (None: the site
    #: is the user's, or the capture did not see the stack)
    via_filename: str | None = None
    via_lineno: int | None = None


@dataclass
class GuardStats:
    """Guard set size. ``count`` is torch's ``guard_count`` (Python Guard objects); the
    ``tree_*`` fields describe the C++ guard tree; ``code_*`` the printed guard code."""

    count: int | None = None
    shape_env_count: int | None = None
    tree_leaf_count: int | None = None
    tree_manager_count: int | None = None
    tree_depth: int | None = None
    code_text_chars: int | None = None
    code_text_lines: int | None = None
    latency_us: float | None = None
    #: guard lines per user source ("file.py:func"), from the guard code's provenance comments
    sources: dict[str, int] = field(default_factory=dict)


@dataclass
class CacheStats:
    """One cache's lookups during one compile (``dynaprof.model.cache``): torch's hit / miss /
    bypass markers, and the compile time a hit saved when torch logs it (None: unknown)."""

    hits: int = 0
    misses: int = 0
    bypasses: int = 0
    time_saved_s: float | None = None


@dataclass
class PropertyTrace:
    """A ``@property`` Dynamo traced through, measured exactly (not sampled)."""

    label: str  # "Linear.weight"
    owner: str  # class whose attribute was read ("ParametrizedLinear")
    name: str  # attribute name ("weight")
    getter_file: str
    getter_line: int
    parametrized: bool  # injected by torch.nn.utils.parametrize
    count: int  # times traced
    instances: int  # distinct objects
    seconds: float  # inclusive wall time spent tracing it (outermost only)


@dataclass
class CompiledFrame:
    """One Dynamo frame compile: one compile id in one reset generation."""

    key: str  # unique in the session: compile_id, plus "#gen" after a torch._dynamo.reset()
    compile_id: str  # as torch prints it without attempt: "0/0", "1/2", "!0/0/0"
    trace_id: str  # with the final attempt when it restarted: "1/2_1"
    generation: int  # number of torch._dynamo.reset() calls before this compile
    name: str
    filename: str
    lineno: int
    thread: int
    thread_name: str
    start_s: float
    compile_time_s: float | None
    status: str = "ok"  # ok | failed | unfinished
    restarts: int = 0
    restart_reasons: list[str] = field(default_factory=list)  # torch's raw list (a set since 2.5)
    attempts: list[Attempt] = field(default_factory=list)
    graph_breaks: int | None = 0  # None: unknown (an imported torch 2.4 log holds no graph break)
    graph_break_reasons: list[GraphBreak] = field(default_factory=list)
    recompile_reason: str | None = None
    guard_count: int | None = None
    guards: GuardStats = field(default_factory=GuardStats)
    graph_op_count: int | None = None
    graph_node_count: int | None = None
    graph_input_count: int | None = None
    ir_count: int | None = None  # bytecode instructions Dynamo traced, inlined ones included
    #: CPU instructions retired on the compiling thread, where the machine has a hardware counter
    cpu_instructions: int | None = None
    #: the ``call_function`` nodes of the FX graphs AOT autograd handed its backend's compilers in
    #: this window, for any AOT backend (forward or inference, or this backward); None where no AOT
    #: graph was compiled here
    aot_graph_ops: int | None = None
    #: what Inductor made of its graphs in this window: the IR nodes before fusion, the kernels
    #: generated; None where Inductor compiled nothing here or its counters were reset mid-compile
    inductor_ir_nodes: int | None = None
    inductor_kernels: int | None = None
    #: the distinct kernels this compile defined, each name once per graph: what it built or found in
    #: Inductor's kernel code cache (``inductor_kernels`` counts every body its codegen made, variants
    #: too); None where that is not known
    kernels_defined: int | None = None
    #: Python function calls made during this compile, as cProfile counted them (``--cprofile``);
    #: None without it
    python_calls: int | None = None
    inlined_calls: int | None = None
    phases: dict[str, float] = field(default_factory=dict)  # inclusive seconds per span name
    spans: list[Span] = field(default_factory=list)
    fail_type: str | None = None
    fail_reason: str | None = None
    call_site: list[Location] = field(default_factory=list)  # user stack that triggered it
    properties: list[PropertyTrace] = field(default_factory=list)
    attribution: dict[str, float] = field(default_factory=dict)
    cprofile: str | None = None  # .prof path relative to the run folder
    metrics: dict[str, Any] = field(default_factory=dict)  # other scalar CompilationMetrics
    #: cache -> lookups (``fx_graph``, ``aot_autograd``); empty when no marker was seen
    cache: dict[str, CacheStats] = field(default_factory=dict)
    #: the user code line torch blames for a failure (``fail_user_frame_filename`` / ``_lineno``)
    fail_filename: str | None = None
    fail_lineno: int | None = None
    #: the collectives Inductor scheduled in this compile's graph, in order (``inductor_collective_schedule``);
    #: None when the log does not say
    collectives: list[str] | None = None
    axes: Axes | None = None  # the cause x phase view; in session.json inside ``attribution``
    #: ``forward`` (a Dynamo frame compile), ``backward`` (AOT autograd's lazy backward compile, at
    #: the first ``.backward()``) or ``compiled_autograd`` (``torch._dynamo.compiled_autograd``: its
    #: capture of the autograd graph, compile id ``!N``, and Dynamo's compiles of that graph)
    kind: str = "forward"
    #: a backward compile's forward frame (its ``key``); None otherwise
    forward_key: str | None = None
    #: the user callable torch's wrapper frame compiles (``torch.compile(module)`` compiles
    #: ``external_utils.wrap_inline``'s ``inner``): the module's class and its ``forward``'s file:line
    wrapped: Location | None = None
    #: ``restart_reasons`` in words, with where torch raised them and per-restart counts
    restart_details: list[RestartReason] = field(default_factory=list)
    #: inlined calls in attempts that a restart threw away (``inlined_calls`` counts the final one)
    inlined_calls_discarded: int | None = None
    #: seconds of samples beyond ``compile_time_s`` that were scaled away (clock skew, overlapping
    #: threads); 0 when the samples fitted
    sampled_clipped_s: float = 0.0
    #: sampled seconds of waits on compile workers that no kernel's measured build time accounts
    #: for (kept on ``unknown (no provenance)``, never guessed); 0 when every wait was measured
    kernel_wait_unmeasured_s: float = 0.0
    #: Inductor kernels this compile built that fuse a parametrization's nodes into other code's,
    #: and their build seconds (split between the two by ``ingest.kernel_split``); 0 when none
    fused_kernels: int = 0
    fused_kernel_s: float = 0.0
    #: how many times the script ran this entry's compiled code (live capture, counted on its
    #: compiled graph); None: unknown (a TORCH_TRACE log, a frame with no graph, a backward)
    calls: int | None = None
    #: calls of this frame that ran uncompiled because it hit the recompile limit; None: unknown
    #: (torch runs them without any callback: see docs/session-format.md)
    eager_fallback_calls: int | None = None
    #: the limit this frame hit (``recompile_limit``, older torch ``cache_size_limit``), or None
    recompile_limit_hit: str | None = None
    #: with ``--time-calls``: host wall seconds in this entry's compiled graph(s), all calls and the
    #: median call (on CUDA, launch time: kernels run asynchronously); None: not measured
    call_time_total_s: float | None = None
    call_time_median_s: float | None = None


#: frame kinds, in display order
FRAME_KINDS: tuple[str, ...] = ("forward", "backward", "compiled_autograd")
KIND_LABELS: dict[str, str] = {"forward": "forward", "backward": "backward", "compiled_autograd": "compiled autograd"}


def display_name(f: CompiledFrame) -> tuple[str, str, int]:
    """How a frame is shown: (name, filename, lineno): the compiled module's ``forward``, not torch's wrapper;
    a resume function as what it resumes (``model.code_names``); `` [backward]`` after other kinds."""
    name, filename, lineno = code_name(f.name), f.filename, f.lineno
    if f.wrapped is not None:
        name, filename, lineno = f.wrapped.name, f.wrapped.filename, f.wrapped.lineno
    if f.kind != "forward":
        name = f"{name} [{KIND_LABELS.get(f.kind, f.kind)}]"
    return name, filename, lineno


def display_id(f: CompiledFrame) -> str:
    """A compile id as shown everywhere: torch's trace id (``0/0``, ``1/2_1`` after restarts), with `` gen N``
    when ``torch._dynamo.reset()`` made torch reuse that id (``key`` carries ``#N`` exactly then)."""
    return f.trace_id + (f" gen {f.generation}" if f.generation and frame_keys.reused_id(f.key) else "")


def compile_by_kind(frames: list[CompiledFrame]) -> dict[str, float]:
    """Compile seconds per frame kind (outermost compiles only, as ``Session.total_compile_s``);
    kinds with no frame are left out. ``Session.compile_by_kind`` is the same, kept between calls."""
    return _by_kind(outermost_frames(frames))


def _by_kind(outermost: list[CompiledFrame]) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in outermost:
        out[f.kind] = out.get(f.kind, 0.0) + (f.compile_time_s or 0.0)
    return {k: stored_s(out[k]) for k in sorted(out, key=lambda k: (*FRAME_KINDS, k).index(k))}


@dataclass
class Stack:
    """Sampled time with one stack. Indices point into ``Session.functions``, root first."""

    frame: str | None  # CompiledFrame.key the time belongs to
    attempt: int
    thread: int
    compiler: list[int]
    traced: list[int]
    samples: int
    seconds: float
    #: torch's timed spans open at the sample, outermost first (``span`` entries of the function table),
    #: and the cause of the FX node AOT autograd / Inductor worked on (a ``cause:*`` entry, -1: none)
    spans: list[int] = field(default_factory=list)
    cause: int = -1


@dataclass
class Samples:
    source: str  # builtin | py-spy
    requested_hz: float
    achieved_hz: float | None
    count: int
    seconds: float
    errors: int = 0
    stacks: list[Stack] = field(default_factory=list)
    adapted_hz: list[float] = field(default_factory=list)  # [lowest, last] rate used, where the rate adapted
    #: the builtin sampler's cost to the compiling thread: its signal-handler samples, the seconds
    #: they took (timed round each), and one timer signal's cost on this machine (measured once per
    #: boot; None: not known, e.g. with ``--rate``); 0 / None: not recorded (py-spy, a thread sampler,
    #: an older session)
    signal_samples: int = 0
    own_s: float | None = None
    floor_s: float | None = None

    @property
    def cost_s(self) -> float | None:
        """Seconds the sampler took from the compiling thread: each signal's floor and each sample's
        own time; None where either is unknown."""
        if self.own_s is None or self.floor_s is None:
            return None
        return self.own_s + self.signal_samples * self.floor_s


@dataclass
class InlineStack:
    """Torch's built-in Dynamo profiler: self time of one traced function at one call path."""

    frame: str | None
    path: list[int]  # traced functions, root first, into Session.functions
    calls: int
    self_s: float


@dataclass
class ConfigChange:
    """A torch compiler setting that differs from its default at the end of the run (the script
    may change settings): ``module`` is ``dynamo``, ``inductor`` or ``functorch``; ``value`` and
    ``default`` are ``repr`` text, capped (``capture.torch_config.config_changes``)."""

    module: str
    name: str
    value: str
    default: str


@dataclass
class RunInfo:
    """How the run was made and how it ended. ``command`` and ``argv`` are recorded with secrets
    left out (``model.environment.redact_argv``)."""

    command: list[str]
    target: str
    argv: list[str]
    cwd: str
    python_version: str
    torch_version: str | None
    dynaprof_version: str
    platform: str
    hostname: str
    device: str | None
    start_time: str  # ISO 8601, UTC
    wall_s: float | None
    exit_status: int | None
    end_reason: str  # exited | exception | interrupted | signal | lost
    complete: bool
    pid: int | None = None
    rank: int | None = None
    world_size: int | None = None
    #: ``torch.version.git_version``: the commit torch was built from (None: unknown)
    torch_git_version: str | None = None
    #: environment variables that change compilation (``model.environment.COMPILE_ENV_PREFIXES``) at the
    #: start, secret-looking values replaced by ``<redacted>``; None: unknown (an imported log, an
    #: older session)
    env: dict[str, str] | None = None
    #: with ``--repeat N``: which repeat (1-based) the frames, samples and reports are drawn from
    #: (the median by compile time); None: a single run
    repeat: int | None = None
    #: Dynamo / Inductor / functorch settings that differ from their defaults at the end of the run,
    #: sorted by module and name; None: unknown (torch never imported, its config not readable, an
    #: imported log, an older session)
    config: list[ConfigChange] | None = None


@dataclass
class CaptureInfo:
    sampler: str  # builtin | py-spy | none
    requested_hz: float | None = None
    native: bool = False
    cprofile: bool = False
    torch_trace_dir: str | None = None
    source: str = "live"  # live | torch_trace (imported from a TORCH_TRACE log)
    hooks: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class Repeat:
    """One run of ``dynaprof run --repeat N``, each in a fresh process: its measured totals (the
    session keeps the frames and samples of the median one only)."""

    index: int  # 1-based, in the order they ran
    compile_s: float  # ``Session.total_compile_s`` of that run
    wall_s: float | None
    exit_status: int | None
    #: cold compiler caches (a fresh TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR / TMPDIR) or the user's (``--warm``)
    cold: bool
    #: frame key -> compile seconds (None: unknown)
    frames: dict[str, float | None] = field(default_factory=dict)
    #: torch's timed span name -> seconds, summed over that run's frames (``CompiledFrame.phases``)
    phases: dict[str, float] = field(default_factory=dict)
    #: cause -> sampled seconds in that run (``Axes.causes``); empty when it was not sampled
    causes: dict[str, float] = field(default_factory=dict)
    #: when that run started (``RunInfo.start_time``): which side's runs came first when two are
    #: compared; None in sessions from before it was recorded
    start_time: str | None = None


@dataclass
class Counterfactual:
    """``dynaprof run --counterfactual``: the script once more, in its own process with cold
    compiler caches, every parametrization it compiles folded first (``remove_parametrizations(...,
    leave_parametrized=True)``). One run: its compile time is as noisy as any single run's."""

    folded: list[str]  # the tensors folded, ``Owner.tensor via Parametrization`` each
    compile_s: float  # that run's ``Session.total_compile_s``
    kernels: int  # Inductor kernels it defined (each name once per compile)
    exit_status: int | None
    #: this run's fused kernels with no counterpart there, given to the parametrization whole
    extra_kernels: int = 0
    extra_kernel_s: float = 0.0  # their build seconds
    kernels_here: int | None = None  # Inductor kernels this run defined, counted as ``kernels`` is
    #: that run's sampled toolchain setup (Inductor's one-time C++ work; its precompiled header
    #: outlives a process), so the two runs compare without it; None: not sampled
    toolchain_s: float | None = None


@dataclass
class Replay:
    """The Inductor replay (``capture.replay``): the run's graphs with parametrizations lowered
    again with them folded, in a process of its own after the script, building no kernel. Its kernels
    are matched with the run's (``ingest.kernel_match``): a fused kernel of the run with no
    counterpart there exists because of the parametrization and is given to it whole; a kernel only
    the folded graphs define is one the parametrization spared, priced at the mean of the run's own
    kernel builds."""

    graphs: int  # graphs replayed
    kernels: int  # kernels the folded graphs define (each name once per graph)
    #: the run's fused kernels without a counterpart there, and their build seconds
    extra_kernels: int = 0
    extra_kernel_s: float = 0.0
    #: kernels only the folded graphs define, and what they would cost at the run's mean build
    spared_kernels: int = 0
    spared_kernel_s: float = 0.0
    seconds: float = 0.0  # the replay process's wall time (never part of compile time)
    #: "frame key: why" for each graph it could not replay (those frames keep the split by node)
    failed: list[str] = field(default_factory=list)
    pid: int | None = None  # the replay's process (never the profiled one's, ``RunInfo.pid``)


@dataclass
class Session:
    schema_version: int
    run: RunInfo
    capture: CaptureInfo
    frames: list[CompiledFrame] = field(default_factory=list)
    functions: list[FunctionRef] = field(default_factory=list)
    samples: Samples | None = None
    inline_profile: list[InlineStack] | None = None
    attribution: dict[str, float] = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)  # run-level spans (the script itself)
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> path in the run folder
    axes: Axes | None = None  # the cause x phase view; in session.json inside ``attribution``
    #: every run of ``--repeat N`` (``run.repeat`` says which one the rest of the session is); empty
    #: for a single run
    repeats: list[Repeat] = field(default_factory=list)
    #: every cache lookup of every compile, with its key's components (``model.cache_keys``);
    #: empty in sessions older than it and where torch said nothing
    cache_keys: CacheKeys = field(default_factory=CacheKeys)
    #: ``dynaprof run --counterfactual``'s second run; None without one
    counterfactual: Counterfactual | None = None
    #: the Inductor replay of the graphs with parametrizations (``dynaprof run``'s default on
    #: Inductor); None where none ran
    replay: Replay | None = None

    def frame(self, key: str) -> CompiledFrame | None:
        for f in self.frames:
            if f.key == key:
                return f
        return None

    @property
    def graph_breaks(self) -> int | None:
        """Every frame's graph breaks; None when a frame's count is unknown (a sum over what is
        known would read as a count, and an undercount)."""
        counts = [f.graph_breaks for f in self.frames]
        return None if None in counts else sum(c for c in counts if c is not None)

    @property
    def total_compile_s(self) -> float:
        """Compile time of all frames, counting a compile nested in another only once."""
        return self._kept()[1]

    def outermost_frames(self) -> list[CompiledFrame]:
        """``outermost_frames(self.frames)``. A render asks some 20 times (totals, findings, every
        report's header) and each answer sorts the frames, so it is kept with the session until a
        frame is added, removed, reordered or moved in time or thread (``_timing_key``); not a
        dataclass field, so never saved or compared."""
        return list(self._kept()[0])

    def _kept(self) -> tuple[list[CompiledFrame], float]:
        """The kept outermost frames and their total compile time, made again if they moved."""
        key = _timing_key(self.frames)
        memo = self.__dict__.get("_outermost")
        if memo is None or memo[0] != key:
            outer = outermost_frames(self.frames)
            memo = self.__dict__["_outermost"] = (key, outer, sum(f.compile_time_s or 0.0 for f in outer))
        return memo[1], memo[2]

    def compile_by_kind(self) -> dict[str, float]:
        """``compile_by_kind(self.frames)``, from the kept ``outermost_frames()``."""
        return _by_kind(self.outermost_frames())


_TIMING = tuple(operator.attrgetter(name) for name in ("thread", "start_s", "compile_time_s"))


def _timing_key(frames: list[CompiledFrame]) -> tuple[tuple[object, ...], ...]:
    """All ``outermost_frames`` reads of ``frames``: which frames in which order (their ids; the kept
    answer holds the outermost alive, and the others' places and timings must match too) and each
    one's thread, start and compile time (one tuple per field: no tuple per frame). Building it
    costs a quarter of the sort it saves."""
    return (tuple(map(id, frames)), *(tuple(map(get, frames)) for get in _TIMING))


def outermost_frames(frames: list[CompiledFrame]) -> list[CompiledFrame]:
    """Frames not running inside another compile on the same thread (a backend may compile
    recursively); their times add up without double counting."""
    out: list[CompiledFrame] = []
    by_thread: dict[int, list[CompiledFrame]] = {}
    for f in frames:
        by_thread.setdefault(f.thread, []).append(f)
    for group in by_thread.values():
        group.sort(key=lambda f: (f.start_s, -(f.compile_time_s or 0.0)))
        outer_end = float("-inf")
        for f in group:
            end = f.start_s + (f.compile_time_s or 0.0)
            if f.start_s >= outer_end or end > outer_end:
                out.append(f)
                outer_end = end
    return out
