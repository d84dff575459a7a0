"""Stacks seen from analysis: sampled (or Dynamo-profiled) time as a tree of call paths.

Three views of the same time (``docs/flamegraphs.md``):

* ``compiler``: the real Python stacks of torch.compile (``Stack.compiler``);
* ``traced``: the whole-pipeline user-code view (``analysis.user_view``): Dynamo's tracing on the
  user functions it was symbolically executing (``Stack.traced``), and every other second (AOT
  autograd, Inductor, kernel compile, guards) on the compiled frame's root, then its cause
  (``Linear.weight via Parametrization``, ``[whole graph]``), then its phase; node ``categories``
  hold seconds per *phase* in this view, so the tree adds up to the sampled compile time;
* ``inline``: torch's built-in Dynamo profiler (``Session.inline_profile``), self time per inlined
  call path; the total is the sum of the recorded self times.

Node weights are ``Stack.seconds`` (wall-time weighted samples); sample counts are kept alongside
(in the inline view ``samples`` counts recorded calls instead). Children are kept in a dict keyed
by ``(name, filename, lineno, kind)`` and always iterated in sorted key order, i.e. alphabetically
by function name like Brendan Gregg's FlameGraph, so a stack sits at the same place in every graph
of the same code, which is what makes side-by-side and differential graphs readable.

Everything here is pure and iterative (stacks can be deeper than Python's recursion limit).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from dynaprof import fmt
from dynaprof.analysis.attribution import PARAMETRIZATION_COLOUR
from dynaprof.analysis.causes import is_parametrization
from dynaprof.analysis.derived import Derived
from dynaprof.analysis.interpreter_frames import INLINED_PROPERTY_KIND
from dynaprof.model.session import CATEGORIES, CATEGORY_LABELS, FunctionRef, Session, display_id
from dynaprof.model.session import display_name as frame_display_name

View = Literal["compiler", "traced", "inline"]
VIEWS: tuple[View, ...] = ("compiler", "traced", "inline")

#: (name, filename, lineno, kind): identifies a child under its parent
NodeKey = tuple[str, str, int, str]

ROOT_ALL = "all compiles"
NOT_TRACING = "[not tracing user code]"
#: the colour keys of the compiler and inline views, in legend order: the parametrization cause, then
#: the phase groups (``attribution.stack_categories``)
COLOUR_ORDER: tuple[str, ...] = (PARAMETRIZATION_COLOUR, *CATEGORIES)
NO_COMPILER_STACK = "[no compiler stack]"
NO_INLINE_PATH = "[no inline path]"
SYNTHETIC = "synthetic"



@dataclass(slots=True)
class StackNode:
    """One function at one call path. ``seconds``/``samples`` are inclusive (this node and
    everything called from it); ``self_*`` is what ended exactly here; ``categories`` holds the
    inclusive seconds per attribution category."""

    name: str
    filename: str = ""
    lineno: int = 0
    #: root | python | native | traced | property | synthetic | folded (read back from folded
    #: text) | inlined / inlined property (a user call Dynamo traced, ``analysis.interpreter_frames``)
    kind: str = "root"
    seconds: float = 0.0
    samples: int = 0
    self_seconds: float = 0.0
    self_samples: int = 0
    categories: dict[str, float] = field(default_factory=dict)
    #: the self seconds per category (what ended exactly here), which the compiler view colours by
    self_categories: dict[str, float] = field(default_factory=dict)
    children: dict[NodeKey, StackNode] = field(default_factory=dict)
    _order: list[StackNode] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def key(self) -> NodeKey:
        return (self.name, self.filename, self.lineno, self.kind)

    def child(self, key: NodeKey) -> StackNode:
        """The child with ``key``, created (empty) when missing."""
        node = self.children.get(key)
        if node is None:
            node = StackNode(key[0], key[1], key[2], key[3])
            self.children[key] = node
            self._order = None
        return node

    def sorted_children(self) -> list[StackNode]:
        """Children in sorted key order (cached; add children only through :meth:`child`)."""
        if not self.children:
            return []
        if self._order is None or len(self._order) != len(self.children):
            self._order = [self.children[k] for k in sorted(self.children)]
        return self._order

    def add_path(self, path: Sequence[NodeKey], seconds: float, samples: int, category: str | None = None) -> None:
        """Add time that ended at ``path`` (below this node) to every node on the way."""
        node = self
        node._add(seconds, samples, category)
        for key in path:
            nxt = node.children.get(key)
            if nxt is None:
                nxt = node.child(key)
            nxt.seconds += seconds
            nxt.samples += samples
            if category is not None:
                cats = nxt.categories
                cats[category] = cats.get(category, 0.0) + seconds
            node = nxt
        node.self_seconds += seconds
        node.self_samples += samples
        if category is not None:
            node.self_categories[category] = node.self_categories.get(category, 0.0) + seconds

    def _add(self, seconds: float, samples: int, category: str | None) -> None:
        self.seconds += seconds
        self.samples += samples
        if category is not None:
            self.categories[category] = self.categories.get(category, 0.0) + seconds

    def walk(self) -> Iterator[tuple[int, StackNode]]:
        """Pre-order (depth, node) pairs, children in sorted order."""
        todo: list[tuple[int, StackNode]] = [(0, self)]
        while todo:
            depth, node = todo.pop()
            yield depth, node
            todo.extend((depth + 1, c) for c in reversed(node.sorted_children()))

    def node_count(self) -> int:
        return sum(1 for _ in self.walk())

    def depth(self) -> int:
        """Depth of the deepest node (0 for a lone root)."""
        return max(d for d, _ in self.walk())

    def find(self, *names: str) -> StackNode | None:
        """The node reached by following children with these names (first match by sort order)."""
        node: StackNode | None = self
        for name in names:
            assert node is not None
            node = next((c for c in node.sorted_children() if c.name == name), None)
            if node is None:
                return None
        return node

    def dominant_category(self, order: Sequence[str] = COLOUR_ORDER, own: bool = False) -> str | None:
        """The category holding most of this node's time (ties: earlier in ``order``; the
        user-code view passes ``PHASES``, its nodes hold seconds per phase); ``own``: of its self
        time only (None when it has none)."""
        cats = self.self_categories if own else self.categories
        best: str | None = None
        for cat in order:
            v = cats.get(cat, 0.0)
            if v > 0 and (best is None or v > cats[best]):
                best = cat
        return best

    def self_check(self, tol: float = 1e-9) -> None:
        """Raise AssertionError unless every node's children fit in it (seconds and samples)."""
        for _, node in self.walk():
            kids = node.children.values()
            child_s = sum(c.seconds for c in kids)
            if child_s > node.seconds + tol * max(1.0, abs(node.seconds)):
                raise AssertionError(f"children of {node.name!r} sum to {child_s} s > {node.seconds} s")
            if sum(c.samples for c in kids) > node.samples:
                raise AssertionError(f"children of {node.name!r} have more samples than it")
            if node.seconds < -tol or node.self_seconds < -tol:
                raise AssertionError(f"negative time in {node.name!r}")


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building a big acyclic tree: with hundreds of
    thousands of fresh nodes, collections triggered by allocation are most of the build time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _fkey(f: FunctionRef) -> NodeKey:
    return (f.name, f.filename, f.lineno, f.kind)


def _synthetic(name: str) -> NodeKey:
    return (name, "", 0, SYNTHETIC)


def root_label(session: Session, frame: str | None) -> StackNode:
    """An empty root node: "all compiles", or the compiled frame's trace id and name."""
    if frame is None:
        return StackNode(ROOT_ALL)
    f = session.frame(frame)
    if f is None:
        return StackNode(f"compile {frame}")
    name, filename, lineno = frame_display_name(f)  # the model's class, not torch's wrapper
    return StackNode(f"{display_id(f)} {name}", filename, lineno, "root")


def build_tree(
    session: Session,
    view: View = "compiler",
    frame: str | None = None,
    *,
    categories: Sequence[str] | None = None,
    derived: Derived | None = None,
    user_calls: bool = False,
) -> StackNode:
    """The stack tree of one view, for the whole run or one ``CompiledFrame.key``; ``user_calls``: the
    compiler view as the user calls Dynamo traced (``analysis.interpreter_frames``), as the pictures draw it.
    ``categories`` / ``derived``: what the caller already worked out for this session (building
    several trees of a big session then classifies its stacks only once)."""
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; expected one of {', '.join(VIEWS)}")
    with paused_gc():
        return _build_tree(session, view, frame, categories, derived or Derived(session), user_calls)


def _build_tree(
    session: Session, view: View, frame: str | None, categories: Sequence[str] | None, derived: Derived,
    user_calls: bool = False,
) -> StackNode:
    root = root_label(session, frame)
    funcs = session.functions
    keys = [_fkey(f) for f in funcs]
    if view == "inline":
        for ist in session.inline_profile or []:
            if frame is not None and ist.frame != frame:
                continue
            cat = inline_category([funcs[i] for i in ist.path])
            path = [keys[i] for i in ist.path] or [_synthetic(NO_INLINE_PATH)]
            root.add_path(path, ist.self_s, ist.calls, cat)
        return root
    if session.samples is None:
        return root
    stacks = session.samples.stacks
    indices = range(len(stacks)) if frame is None else derived.by_frame.get(frame, [])
    if view == "traced":  # the whole-pipeline user-code view; node "categories" hold phases
        uv = derived.user_view
        for i in indices:
            st = stacks[i]
            root.add_path([uv.keys[j] for j in uv.paths[i]], st.seconds, st.samples, uv.phases[i])
        return root
    cats = derived.categories if categories is None else categories
    if view == "compiler" and user_calls:
        fs = derived.user_calls
        for i in indices:
            st, cat = stacks[i], cats[i]
            path = [fs.keys[j] for j in fs.paths[i]] or [_synthetic(NO_COMPILER_STACK)]
            root.add_path(path, st.seconds, st.samples, cat)
        return root
    for i in indices:
        st, cat = stacks[i], cats[i]
        ids = st.compiler if view == "compiler" else st.traced
        path = [keys[i] for i in ids] or [_synthetic(name) for name in empty_stack_names(view, cat)]
        root.add_path(path, st.seconds, st.samples, cat)
    return root


#: the inline view's colours: Dynamo's inline profile times inlined calls, every one Dynamo tracing;
#: the calls under a parametrization's @property are told apart (key -> legend label)
INLINE_CATEGORIES: dict[str, str] = {
    PARAMETRIZATION_COLOUR: "parametrization @property calls",
    "dynamo_tracing": "other inlined calls",
}


def inline_category(path: Sequence[FunctionRef]) -> str:
    """The inline view's colour key of one inlined call path (``INLINE_CATEGORIES``)."""
    return PARAMETRIZATION_COLOUR if any(is_parametrization(f) for f in path) else "dynamo_tracing"


def empty_stack_names(view: View, category: str) -> tuple[str, ...]:
    """The synthetic frames that stand for a sample without a stack in ``view``: the compiler
    view's ``[no compiler stack]``; the traced view's ``[not tracing user code]`` then the
    sample's category (``[Guard building]``). Every output that draws stacks uses these."""
    if view == "compiler":
        return (NO_COMPILER_STACK,)
    return (NOT_TRACING, f"[{CATEGORY_LABELS.get(category, category)}]")


def stacks_by_frame(session: Session, derived: Derived | None = None) -> dict[str, list[int]]:
    """Indices of ``session.samples.stacks`` per frame key (``Derived.by_frame``)."""
    return (derived or Derived(session)).by_frame


def frames_with_samples(session: Session, limit: int | None = None, derived: Derived | None = None) -> list[str]:
    """Keys of frames that have sampled time, in session order; with ``limit``, only the
    ``limit`` frames with the most sampled time (still in session order). ``derived``: the
    render's, whose stacks per frame are then not worked out again."""
    if session.samples is None:
        return []
    d = derived or Derived(session)
    seconds = d.frame_seconds
    keys = list(d.sampled_frames)
    if limit is not None and len(keys) > limit:
        keep = set(sorted(keys, key=lambda k: -seconds[k])[:limit])
        keys = [k for k in keys if k in keep]
    return keys


# ---------------------------------------------------------------------------------------------
# names


def clean_text(text: str) -> str:
    """One line of text: newlines and tabs become spaces."""
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")


def short_filename(path: str) -> str:
    """A path without its site-packages (or stdlib) prefix: ``torch/_dynamo/guards.py``."""
    return fmt.package_path(path, stdlib=True)


def display_name(node: StackNode | FunctionRef) -> str:
    """The function as shown in graphs: ``Linear.weight (property)``, newlines as spaces."""
    name = clean_text(node.name)
    if node.kind in ("property", INLINED_PROPERTY_KIND):
        return f"{name} (property)"
    if node.kind == "native":
        return f"{name} [native]"
    return name


def location(node: StackNode | FunctionRef, short: bool = True) -> str:
    """``file:line`` (empty for synthetic nodes)."""
    if not node.filename:
        return ""
    fn = clean_text(short_filename(node.filename) if short else node.filename)
    return f"{fn}:{node.lineno}" if node.lineno else fn


def folded_label(node: StackNode) -> str:
    """A frame in folded-stack text: ``name (short/file.py:12)``, with ``;`` replaced by ``,``."""
    return _folded_label(node.name, node.filename, node.lineno, node.kind)


@lru_cache(maxsize=65536)
def _folded_label(name: str, filename: str, lineno: int, kind: str) -> str:
    node = StackNode(name, filename, lineno, kind)
    loc = location(node) if kind != "folded" else ""
    label = f"{display_name(node)} ({loc})" if loc else display_name(node)
    return label.replace(";", ",")


# ---------------------------------------------------------------------------------------------
# folded stacks


def folded_lines(root: StackNode, unit: Literal["us", "samples"] = "us", include_root: bool = False) -> list[str]:
    """Brendan Gregg's folded format, one ``a;b;c <value>`` line per path with self time.
    ``unit="us"``: value is self time in integer microseconds; ``"samples"``: self samples.
    Lines whose value rounds to 0 are left out. The root's name is the first frame only with
    ``include_root`` (or when time ended at the root itself)."""
    out: list[str] = []
    path: list[str] = []
    # iterative DFS with exit markers: the path list is shared, not copied per node
    todo: list[StackNode | None] = [root]
    while todo:
        node = todo.pop()
        if node is None:
            path.pop()
            continue
        pushed = node is not root or include_root
        if pushed:
            path.append(folded_label(node))
            todo.append(None)
        value = round(node.self_seconds * 1e6) if unit == "us" else node.self_samples
        if value > 0:
            out.append(f"{';'.join(path) if path else folded_label(root)} {value}")
        todo.extend(reversed(node.sorted_children()))
    return out


def parse_folded(text: str) -> list[tuple[list[str], float]]:
    """Parse folded-stack text into (frames, value) pairs; blank and ``#`` lines are skipped."""
    out: list[tuple[list[str], float]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        stack, _, value = line.rpartition(" ")
        try:
            v = float(value)
        except ValueError:
            raise ValueError(f"line {n}: no numeric value at the end: {raw[:80]!r}") from None
        if not stack:
            raise ValueError(f"line {n}: no stack before the value")
        out.append((stack.split(";"), v))
    return out


def tree_from_folded(text: str, unit: Literal["us", "samples"] = "us", root_name: str = ROOT_ALL) -> StackNode:
    """Rebuild a tree from folded text (names only; ``kind="folded"``). With ``unit="us"`` the
    values become seconds; with ``"samples"`` they become sample counts."""
    root = StackNode(root_name)
    with paused_gc():
        for frames, value in parse_folded(text):
            path = [(f, "", 0, "folded") for f in frames]
            if unit == "us":
                root.add_path(path, value / 1e6, 0)
            else:
                root.add_path(path, 0.0, int(value))
    return root
