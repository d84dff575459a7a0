"""Helpers several test modules share (test modules do not import each other)."""

from __future__ import annotations

import os
import re
import tempfile
import types
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from dynaprof.analysis import pstats_tools as pt
from dynaprof.model import GraphBreak, PropertyTrace, Session, Stack
from dynaprof.render.html_toolkit import CSP
from tests.factories import SP, FunctionTable, frame, make_session

#: the tests folder (its ``data/`` and ``golden/``) and the repository root, wherever a test lives
TESTS_DIR = Path(__file__).resolve().parent
ROOT_DIR = TESTS_DIR.parent


def torch_release() -> tuple[int, int]:
    """(major, minor) of the installed torch, without importing it; (0, 0) where it is missing."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        parts = re.findall(r"\d+", version("torch"))
    except PackageNotFoundError:
        return (0, 0)
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 else (0, 0)


def torch_version_text() -> str:
    """The installed torch's version as pip names it ("2.4.1+cu121"), without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "none"


def requires_torch(release: str, reason: str) -> pytest.MarkDecorator:
    """Skip a test on a torch older than ``release`` ("2.5"), saying the installed version and
    what the test needs that older torches lack (``reason``). ``release`` is the first torch known
    to have it; where no release between was checked, the one after the oldest that lacks it."""
    need = tuple(int(p) for p in release.split("."))
    return pytest.mark.skipif(torch_release() < need,
                              reason=f"torch {torch_version_text()} < {release}: {reason}")  # fmt: skip


def recompile_limit_name() -> str:
    """The recompile limit's name on this torch (2.4: ``cache_size_limit``, later an alias of it)."""
    import torch._dynamo.config as dc

    return "recompile_limit" if hasattr(dc, "recompile_limit") else "cache_size_limit"


#: made-up secrets a run must never write (the how-made tests, unit and e2e)
GH_TOKEN = "ghp_" + "Zx8Qw2Lm5Np7Rt4Vb1Kc9Hd3"
RANDOM_SECRET = "q7Xk2LmP9vRt4ZbW8nYc3HsJ6dFg"

#: torch 2.4 has no chromium instant events, no AOTAutograd cache, no PGO, and its FX graph
#: cache is off unless TORCHINDUCTOR_FX_GRAPH_CACHE=1 (``capture.cache_keys.TraceLookups``)
OLD_CACHES = torch_release() < (2, 5)

# -- processes ------------------------------------------------------------------------------------


def default_sigint() -> None:
    """``preexec_fn`` for a process a test interrupts with SIGINT. A test runner started as a
    background job of a non-interactive shell (``bash -c 'pytest &'``, some CI agents) inherits
    SIGINT ignored, and so would the process and, through it, the profiled script: Ctrl-C would do
    nothing there, as it would under plain ``python``. The test is about Ctrl-C, so it restores it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c_once(args: list[str], cwd: Path, started: Path) -> str:
    """Run ``python -m dynaprof ARGS``, press Ctrl-C once ``started`` exists (a later run's log: the
    first one is done), and return its stderr; it must exit 130, as Python does on Ctrl-C."""
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": str(ROOT_DIR)}
    proc = subprocess.Popen([sys.executable, "-m", "dynaprof", *args], cwd=cwd, env=env, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_sigint)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not started.exists():
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    return err


@contextmanager
def playwright() -> Iterator[Any]:
    """``sync_playwright()`` whose driver gets a short ``TMPDIR``: it makes Chromium's profile
    folder there, and Chromium's singleton socket inside it must fit a Unix socket path (107
    bytes); under a long temporary path (a CI's, or this suite's 150-character check) Chromium
    aborts with "Socket path too long"."""
    from playwright.sync_api import sync_playwright

    short = "/tmp" if os.path.isdir("/tmp") and os.access("/tmp", os.W_OK) else None
    old = os.environ.get("TMPDIR")
    with tempfile.TemporaryDirectory(prefix="pw-", dir=short) as d:
        os.environ["TMPDIR"] = d
        try:
            with sync_playwright() as p:
                restore_env("TMPDIR", old)  # the driver has started: the tests' own files go where they went
                yield p
        finally:
            restore_env("TMPDIR", old)


def sin_loop(steps: int) -> str:
    """Script text: ``f``, compiled on eager, ``steps`` sin-and-adds that Dynamo traces one by one
    (the length of its compile, without a model)."""
    return f"""@torch.compile(backend="eager")
def f(x):
    for _ in range({steps}):
        x = torch.sin(x) + x
    return x
"""


def restore_env(name: str, old: str | None) -> None:
    """Put environment variable ``name`` back as it was (``old``: None where it was unset)."""
    if old is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = old


# -- terminal text --------------------------------------------------------------------------------


def unwrap(text: str) -> str:
    """dynaprof's terminal text with its line wrapping undone: every run of whitespace that holds a
    newline becomes one space. The summary wraps prose to the terminal's width (``COLUMNS``, at most
    120) with a hanging indent, so a phrase can break anywhere a space is; tests look for phrases in
    this form, whatever the width or the length of the paths in the text."""
    return _WRAP_BREAK.sub(" ", text)


_WRAP_BREAK = re.compile(r"[ \t]*\n\s*")


# -- Markdown -------------------------------------------------------------------------------------

CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR = re.compile(r"^\| ?:?-{3,}:?( \| ?:?-{3,}:?)* ?\|$")


def tables(text: str) -> list[list[str]]:
    """Every GFM table in ``text`` as its lines (runs of lines starting with '|')."""
    out: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def cells(line: str) -> list[str]:
    assert line.startswith("|") and line.endswith("|"), line
    return CELL_SPLIT.split(line[1:-1])


def assert_tables_well_formed(text: str, count: int | None = None, *, at_least: int = 1) -> int:
    """Every GFM table in ``text`` has a header, a separator and rows of the header's width; there
    are exactly ``count`` tables (when given) and at least ``at_least``. Returns how many."""
    found = tables(text)
    assert len(found) >= at_least, f"{len(found)} tables, expected at least {at_least}"
    if count is not None:
        assert len(found) == count, f"{len(found)} tables, expected {count}"
    for t in found:
        assert len(t) >= 2, t
        width = len(cells(t[0]))
        assert _SEPARATOR.match(t[1].replace(" ", "").replace("|", " | ").strip()) or _SEPARATOR.match(t[1]), t[1]
        assert len(cells(t[1])) == width
        for row in t[2:]:
            assert len(cells(row)) == width, (t[0], row)
    return len(found)


def big_session(n: int = 5000) -> Session:
    """``n`` frames with long names, restart reasons, graph breaks, properties and samples."""
    t = FunctionTable()
    root = t("_compile", SP + "torch/_dynamo/convert_frame.py", 1)
    frames, stacks = [], []
    for i in range(n):
        key = f"{i}/0"
        name = f"forward_{i}_" + "x" * 150
        frames.append(frame(
            key, name=name, filename=f"/work/models/very/deep/module_{i}.py", lineno=i + 1, start_s=float(i),
            compile_time_s=0.001 * (i % 97 + 1), restarts=i % 3, restart_reasons=[f"reason {i % 50} " + "y" * 300],
            graph_breaks=i % 2, graph_break_reasons=[GraphBreak(f"break {i % 40} " + "z" * 300, f"/w/m{i}.py", i)],
            properties=[PropertyTrace(f"Mod{i}.weight", f"Mod{i}", "weight", SP + "torch/nn/utils/parametrize.py",
                                      419, True, 2, 1, 0.001)],
        ))
        fn = t(f"user_fn_{i}", f"/work/models/module_{i}.py", i, "traced")
        stacks.append(Stack(key, 0, 1, [root], [fn], 1, 0.001))
    return make_session(frames, stacks, t.functions)


# -- HTML -----------------------------------------------------------------------------------------

#: user text that would run script or break out of an attribute if it reached HTML unescaped
HOSTILE_HTML = '<img src=x onerror=alert(1)></script><script>alert(2)</script>"\'&amp;'
URL_ATTRS = {"src", "href", "xlink:href", "action", "formaction", "data", "poster", "background", "srcset"}


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for k, v in attrs:
            self.attrs.append((tag, k, v or ""))
            if k in URL_ATTRS:
                self.urls.append((tag, k, v or ""))
        if tag == "script":
            self._script = dict(attrs)

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))
            self._script = None

    def handle_endtag(self, tag: str) -> None:
        self._script = None


def parse(text: str) -> Collector:
    c = Collector()
    c.feed(text)
    c.close()
    return c


#: a relative path without a scheme, host or leading slash (``flames/0_0-traced.svg``)
RELATIVE_FILE = re.compile(r"^(?![a-zA-Z][\w+.-]*:)(?!/)[\w.~-][\w./~-]*$")


def assert_self_contained(text: str) -> None:
    c = parse(text)
    for tag, attr, url in c.urls:
        if tag == "a" and attr == "href" and RELATIVE_FILE.match(url):
            continue  # a link to a file beside the report (a navigation the user chooses, not a fetch)
        assert url.startswith(("#", "data:")), f"<{tag} {attr}={url!r}> would fetch"
    assert not any(tag in ("link", "iframe", "object", "embed", "img") for tag in c.tags)
    assert "@import" not in text
    for m in re.finditer(r"url\(\s*['\"]?([^)'\"]*)", text):
        assert m.group(1).startswith(("#", "data:")), m.group(0)
    assert ("meta", "content", CSP) in c.attrs  # the browser itself refuses any fetch


# -- headless Chromium ----------------------------------------------------------------------------

CHROMIUM = os.environ.get("DYNAPROF_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]

# -- cProfile tables ------------------------------------------------------------------------------

CF = "/venv/lib/python3.11/site-packages/torch/_dynamo/convert_frame.py"
SC = "/venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py"
MOD = "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"


def edge(calls: int, ct: float) -> tuple[int, int, float, float]:
    return (calls, calls, ct / 10, ct)


def dynamo_like(k: int = 8) -> pt.PStatsTable:
    """wrapper -> _compile -> run -> step -> {h0..h(k-1)}; every handler calls every other
    handler and inline_call_, which calls run again: one big strongly connected component."""
    t: dict[pt.FuncKey, list[Any]] = {}

    def add(key: pt.FuncKey, ct: float, callers: dict[pt.FuncKey, tuple[Any, ...]], calls: int = 1) -> None:
        t[key] = [calls, calls, ct / 10, ct, callers]

    wrap, comp, run, step, inl = (
        (MOD, 1774, "_wrapped_call_impl"),
        (CF, 1633, "_compile"),
        (SC, 1943, "run"),
        (SC, 1556, "step"),
        (SC, 5953, "inline_call_"),
    )
    handlers = [(SC, 2000 + i, f"h{i}") for i in range(k)]
    add(wrap, 2.0, {})
    add(comp, 2.0, {wrap: edge(1, 2.0)})
    add(run, 1.9, {comp: edge(1, 1.9), inl: edge(40, 1.5)}, 41)
    add(step, 1.9, {run: edge(500, 1.9)}, 500)
    for i, h in enumerate(handlers):
        callers = {step: edge(50, 0.8 - 0.05 * i)}
        callers.update({o: edge(5, 0.3) for o in handlers if o != h})
        add(h, 0.8 - 0.05 * i, callers, 100)
    add(inl, 1.5, {h: edge(5, 1.2 - 0.1 * i) for i, h in enumerate(handlers)}, 40)
    return {key: tuple(v) for key, v in t.items()}


# -- a capture journal: what `dynaprof report RUN` rebuilds from after a crash ----------------------

TID = 140000000000001
JOURNAL: list[dict[str, Any]] = [
    {"t": "start", "pid": 7, "argv": ["tiny.py"], "cwd": "/w", "python": "3.11.7", "platform": "Linux",
     "hostname": "vm", "epoch_ns": 1796071728446078952, "dynaprof": "0.1.0", "target": "tiny.py",
     "kind": "script", "rank": None, "world_size": None, "tid": TID},
    {"t": "torch", "version": "2.13.0+cpu"},
    {"t": "hooks", "items": ["compile_windows", "phases", "metrics", "reset", "graph_breaks"]},
    {"t": "compile_start", "key": "0/0", "cid": "0/0", "gen": 0, "tid": TID, "thread_name": "MainThread",
     "ts": 2.9, "name": "f", "file": "/w/tiny.py", "line": 2, "call_site": [["<module>", "/w/tiny.py", 6]]},
    {"t": "span", "name": "entire_frame_compile", "ph": "B", "tid": TID, "ts": 2.91, "key": "0/0"},
    {"t": "span", "name": "compile_attempt_0", "ph": "B", "tid": TID, "ts": 2.92, "key": "0/0"},
    {"t": "span", "name": "compile_attempt_0", "ph": "E", "tid": TID, "ts": 2.95, "key": "0/0"},
    {"t": "span", "name": "compile_attempt_1", "ph": "B", "tid": TID, "ts": 2.95, "key": "0/0"},
    {"t": "span", "name": "bytecode_tracing", "ph": "B", "tid": TID, "ts": 2.96, "key": "0/0"},
    {"t": "span", "name": "bytecode_tracing", "ph": "E", "tid": TID, "ts": 3.0, "key": "0/0",
     "args": {"get_fake_value_time_s": 0.0015}},
    {"t": "span", "name": "compile_attempt_1", "ph": "E", "tid": TID, "ts": 3.05, "key": "0/0"},
    {"t": "span", "name": "entire_frame_compile", "ph": "E", "tid": TID, "ts": 3.09, "key": "0/0"},
    {"t": "metrics", "key": "0/0", "tid": TID,
     "m": {"compile_id": "0/0", "guard_count": 11, "graph_op_count": 1, "entire_frame_compile_time_s": 0.186,
           "restart_reasons": ["graph_break"], "fail_type": None, "recompile_reason": None}},
    {"t": "compile_end", "key": "0/0", "ts": 3.1, "duration": 0.189, "attempt": 1, "exc": None,
     "exc_type": None, "graph_breaks": 1, "graph_break_reasons": [{"reason": "graph_break()", "count": 1}],
     "graph_break_sites": [{"reason": "graph_break()", "file": "/w/tiny.py", "line": 4}], "inlines": 0,
     "props": [{"label": "Linear.weight", "owner": "L", "name": "weight", "getter_file": "p.py", "getter_line": 1,
                "parametrized": True, "count": 2, "instances": 2, "seconds": 0.01}]},
    {"t": "fn", "items": [[0, "_compile", "/t/convert_frame.py", 1633, "python"],
                          [1, "InstructionTranslatorBase.run", "/t/symbolic_convert.py", 1943, "python"],
                          [2, "f", "/w/tiny.py", 2, "traced"]]},
    {"t": "stacks", "items": [["0/0", 0, TID, [0, 1], [2], 20, 0.02], ["0/0", 1, TID, [0], [], 10, 0.01]]},
    {"t": "compile_start", "key": "1/0", "cid": "1/0", "gen": 0, "tid": TID, "thread_name": "MainThread",
     "ts": 3.2, "name": "torch_dynamo_resume_in_f_at_4", "file": "/w/tiny.py", "line": 4, "call_site": []},
    {"t": "stacks", "items": [["1/0", 0, TID, [0, 1], [2], 3, 0.003]]},
    {"t": "sampler", "source": "builtin", "requested_hz": 1000, "samples": 33, "seconds": 0.05, "notes": []},
    {"t": "guards", "key": "0/0", "tree_leaf_count": 6, "tree_depth": 6, "code_text_chars": 3091,
     "sources": {"tiny.py:f": 9}},
    {"t": "unfinished", "key": "1/0"},
    {"t": "device", "device": "cpu"},
    {"t": "end", "exit_status": 0, "reason": "exited", "ts": 3.3},
]  # fmt: skip


def journal_with_one_sample(functions: list[list[Any]], record: dict[str, Any]) -> tuple[Session, dict[str, float]]:
    """``JOURNAL`` with ``functions`` (ids 10, 11, 12: the last the sample's cause), ``record`` and one
    30 ms sample under cause 12, assembled: the session and the seconds each cause ends with, none of
    them a kernel's or a wait's own (each is split to its owners)."""
    from dynaprof.ingest.assemble import ParentFacts, assemble
    from dynaprof.model.journal import KERNEL_CAUSE, KERNEL_WAIT_CAUSE

    records = [*JOURNAL[:-1], {"t": "fn", "items": functions}, record,
               {"t": "stacks", "items": [["0/0", 1, TID, [0], [], 30, 0.03, [], 12]]}, JOURNAL[-1]]
    s = assemble(records, ParentFacts(["tiny.py"], 0))
    assert s.samples is not None
    assert all(s.functions[st.cause].kind not in (KERNEL_CAUSE, KERNEL_WAIT_CAUSE) for st in s.samples.stacks
               if st.cause >= 0)
    return s, {s.functions[st.cause].name: st.seconds for st in s.samples.stacks if st.cause >= 0}


# -- journal records against their types -----------------------------------------------------------


def _conforms(value: Any, hint: Any, where: str) -> list[str]:
    """Where ``value`` is not of the type ``hint`` (JSON's: a float may be written as an integer)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return []
    if hint is type(None):
        return [] if value is None else [f"{where}: {value!r} is not None"]
    if origin in (typing.Union, types.UnionType):
        for h in args:
            if not _conforms(value, h, where):
                return []
        return [f"{where}: {str(value)[:80]!r} is none of {hint}"]
    if origin is typing.Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {args}"]
    if typing.is_typeddict(hint):
        return typeddict_problems(value, hint, where)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {str(value)[:80]!r} is not a list"]
        return [p for i, v in enumerate(value) for p in _conforms(v, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {str(value)[:80]!r} is not an object"]
        return [p for k, v in value.items()
                for p in (*_conforms(k, args[0], where), *_conforms(v, args[1], f"{where}.{k}"))]  # fmt: skip
    if hint is float:
        ok = type(value) in (int, float)
    elif hint is int:
        ok = type(value) is int
    else:
        ok = type(value) is hint
    return [] if ok else [f"{where}: {str(value)[:80]!r} is not {hint.__name__}"]


def typeddict_problems(value: Any, td: Any, where: str) -> list[str]:
    """Where a JSON object is not of the TypedDict ``td`` (journal records against their types)."""
    if not isinstance(value, dict):
        return [f"{where}: not an object"]
    keys = set(value)
    problems = [f"{where}: key {k!r} is not in {td.__name__}" for k in sorted(keys - td.__required_keys__
                                                                            - td.__optional_keys__)]
    problems += [f"{where}: required key {k!r} missing" for k in sorted(td.__required_keys__ - keys)]
    hints = typing.get_type_hints(td)
    for k in sorted(keys & set(hints)):
        problems += _conforms(value[k], hints[k], f"{where}.{k}")
    return problems



def read_table(lines: list[str], first: str, wrap: int = 0) -> list[list[str]]:
    """A ``fmt.table`` read back from its header line (the one whose first word is ``first``): each
    row's cells, with column ``wrap``'s continuation lines (text only in that column, below the
    row's first line) joined to it without spaces (compare names with their spaces removed). Stops
    at a blank line."""
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == [first])
    names = re.split(r"\s{2,}", lines[at].strip())
    start = lines[at].index(names[wrap])
    end = lines[at].index(names[wrap + 1], start + len(names[wrap])) if wrap + 1 < len(names) else len(lines[at])
    out = [names]
    for line in lines[at + 1:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        if len(out) > 1 and len(cells) == 1 and not line[:start].strip() and len(line.rstrip()) <= end:
            out[-1][wrap] += cells[0]
            continue
        out.append(cells)
    return out
