"""The Cache section with kernel code cache lookups: the per-run count of kernels on disk (beside
the graphs' "served from cache" line, which is unchanged), each kernel in report.html's lookup
list, and compare's kernels that hit in BASE and missed in NEW; user text escaped everywhere."""

from __future__ import annotations

from dynaprof.analysis.compare import compare_sessions
from dynaprof.model.cache_keys import (
    KERNEL_IN_WORKER,
    KERNEL_LOADED,
    KERNEL_ON_DISK,
    ComponentTable,
    KeyComponent,
    ParsedLookup,
    lookup_from_info,
)
from dynaprof.model.session import Session
from dynaprof.render.base import RenderContext
from dynaprof.render.cache_section import compare_lines, run_lines, view
from dynaprof.render.compare_report import render_compare
from dynaprof.render.markdown import summary_markdown
from dynaprof.render.report_html import report_html
from dynaprof.render.terminal import summary_text
from tests.factories import frame, make_session
from tests.helpers import unwrap

EVIL = "<img src=x onerror=alert(1)>"


def _session(kernels: list[tuple[str, str, str, str, float | None]], fx: str | None = "miss") -> Session:
    """One frame: an FX graph lookup (``fx``), then kernel lookups (name, outcome, reason, key, build s)."""
    s = make_session([frame("0/0")])
    table = ComponentTable(s.cache_keys)
    if fx is not None:
        lk = lookup_from_info("fx_graph", {"cache_state": fx, "key": "fxkey", "components": []})
        assert lk is not None
        table.add("0/0", lk)
    for name, outcome, reason, key, built in kernels:
        comps = [KeyComponent("kernel_source", "h-" + key), KeyComponent("compile_command[ISA flags]", "i1", "-mavx2")]
        table.add("0/0", ParsedLookup("cpp_kernel", outcome, reason, key, None, comps, [], name, built))
    return s


COLD = [("cpp_fused_add_0", "miss", KERNEL_IN_WORKER, "ka", 0.5), ("cpp_fused_mul_1", "miss", KERNEL_IN_WORKER, "kb",
                                                                      0.25)]  # fmt: skip
WARM = [("cpp_fused_add_0", "hit", KERNEL_ON_DISK, "ka", None), ("cpp_fused_mul_1", "hit", KERNEL_LOADED, "kb", None)]


def test_a_run_counts_its_kernels_on_disk_beside_the_graphs_line() -> None:
    cold, warm = _session(COLD), _session(WARM)
    assert run_lines(cold)[:2] == ["served from cache: 0 of 1 graph",
                                   "C++ kernel code cache: 0 of 2 kernels on disk, 2 built in 0.75 s"]  # fmt: skip
    assert run_lines(warm)[:2] == [
        "served from cache: 0 of 1 graph",  # the graphs' wording: kernels are not graphs
        "C++ kernel code cache: 1 of 2 kernels on disk, 1 already loaded by this process; time saved not measured",
    ]
    only_kernels = _session(WARM[:1], fx=None)  # no graph lookup (the FX graph cache off): no graphs line
    assert run_lines(only_kernels) == ["C++ kernel code cache: 1 of 1 kernel on disk; time saved not measured"]
    md = unwrap(summary_markdown(warm))
    assert "C++ kernel code cache: 1 of 2 kernels on disk" in md and "served from cache: 0 of 1 graph" in md
    assert "cache: C++ kernel code cache: 1 of 2 kernels on disk" in unwrap(summary_text(warm))


def test_report_html_lists_each_kernel_lookup_escaped() -> None:
    s = _session([*COLD, (EVIL, "hit", KERNEL_ON_DISK, "kc", None)])
    section = view(s)
    assert section is not None
    kernel_rows = [r for r in section.rows if r[1] == "C++ kernel code cache"]
    assert [(r[2], r[3]) for r in kernel_rows] == [
        ("miss", "cpp_fused_add_0: built in a compile worker in 500 ms"),
        ("miss", "cpp_fused_mul_1: built in a compile worker in 250 ms"),
        ("hit", f"{EVIL}: on disk; time saved not measured"),
    ]
    html = report_html(RenderContext(s))
    assert "cpp_fused_mul_1: built in a compile worker" in html and "<img" not in html and "&lt;img" in html
    assert "<img" not in summary_markdown(s)


def test_compare_says_which_kernels_hit_in_base_and_missed_in_new() -> None:
    warm = _session(WARM)
    changed = _session([("cpp_fused_add_0", "miss", KERNEL_IN_WORKER, "kz", 0.5), WARM[1]])
    lines = compare_lines(warm, changed)
    assert "0/0: C++ kernel code cache (cpp_fused_add_0) missed (BASE's 0/0 hit): the kernel's source changed" in lines
    assert not any("cpp_fused_mul_1" in line for line in lines)  # it hit on both sides
    back = compare_lines(_session(COLD), warm)  # BASE built both, NEW found them: what that saved
    assert "2 kernels were built in BASE and on disk in NEW: BASE built them in 0.75 s" in back
    evil = _session([(EVIL, "miss", KERNEL_IN_WORKER, "kz", None), WARM[1]])
    files = render_compare(compare_sessions(warm, evil), warm, evil, names=("warm", "changed"))
    for name in ("compare.md", "compare.html"):
        text = str(files[name])
        assert "<img" not in text and "&lt;img" in text, name  # the kernel's name, escaped
        assert "C++ kernel code cache (" in text and "missed (BASE" in text, name


def test_the_graphs_lookups_are_listed_before_any_kernel_s() -> None:
    s = _session(COLD)
    table = ComponentTable(s.cache_keys)
    lk = lookup_from_info("fx_graph", {"cache_state": "hit", "key": "fx2", "components": []})
    assert lk is not None
    table.add("0/1", lk)  # a later compile's graph lookup, after 0/0's kernels
    section = view(s, limit=2)
    assert section is not None and section.more == 2
    assert [(r[0], r[1]) for r in section.rows] == [("0/0", "FX graph cache"), ("0/1", "FX graph cache")]
