"""PyTorch's dynamo benchmark harness CSVs read in as a suite of compile times without causes, so a
user can put dynaprof's figures beside the dashboard's, model by model.

The formats, from ``benchmarks/dynamo/common.py`` (pytorch/pytorch 00391a7e1220ab2272e156b0ceb036f74f0b5f94):

* **The performance CSV** (``--performance``; the dashboard's ``*_performance.csv``), one row per model
  run, written by ``speedup_experiment``::

      dev,name,batch_size[,tag],speedup,abs_latency[,baseline,speedup_vs_baseline],compilation_latency,
      compression_ratio,eager_peak_mem,dynamo_peak_mem[,cache_lookup_latency],calls_captured,unique_graphs,
      graph_breaks,unique_graph_breaks,autograd_captures,autograd_compiles,cudagraph_skips

  ``compilation_latency`` is seconds: the compiled warm-up minus the eager warm-up
  (``run_performance_test``). The last columns are ``get_dynamo_stats()``'s counters.
* **The compilation metrics CSV** (the same name with ``_compilation_metrics`` before ``.csv``), one row per
  model run that finished: ``dev,name,batch_size[,tag]`` then one column per ``dynamo_timed`` function
  (``torch._dynamo.utils.compile_times(repr="csv", aggregate=True)``): its seconds summed over the run,
  in the order the functions were first entered, so ``_compile.compile_inner`` (Dynamo's whole compile)
  comes first.

How ``output_csv`` writes them, and what this reader does about it:

* Floats are written ``%.6f``; a row shorter than the header is padded with the string ``"0"``. A
  ``"0"`` in a float column (or in any column of the metrics CSV) is padding, read as absent, never as 0 s.
* A model that failed (load, eager run, warm-up, timeout: ``write_csv_when_exception``) gets a row of
  ``batch_size 0, speedup 0.0, abs_latency 0.0`` and padding, and no metrics row. It is read as a run with
  ``error`` set and no figures. A row that ran but has no ``compilation_latency`` above 0 is a run with an
  error too (the dashboard leaves values at or below 0 out as well).
* The header is replaced only by a longer one, and values are written by position: rows written under
  other columns (another model's ``dynamo_timed`` functions) can sit under the wrong names. Rows padded
  that way are counted in a note.
* ``benchmarks/dynamo/runner.py`` also reads headerless files as ``dev,name,batch_size,speedup,
  compilation_latency,compression_ratio``; so does this reader.

A suite from them: every row of a model (its ``dev`` and ``tag`` too, named ``name@dev@tag`` only where
those vary) in the files, in the order given, is one run: repeats 1..k. A run's compile time is
``measures[TOTAL]``, ``compilation_latency``; a metrics CSV given without its performance CSV gives
``_compile.compile_inner`` instead (a note says so). Every other numeric figure of the row goes to
``SuiteRun.harness``; a metrics file's as ``dynamo_timed:FUNCTION``, paired with the performance CSV's runs
that finished, in order. A file that is not such a CSV is a ``DynaprofError`` of one line.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from dynaprof.errors import DynaprofError
from dynaprof.fmt import plural, stored_s
from dynaprof.model.suite import ORIGIN_HARNESS, SUITE_SCHEMA_VERSION, Suite, SuiteRun
from dynaprof.model.sweep import TOTAL

PERFORMANCE = "performance"
METRICS = "compilation metrics"
#: the side file's name: the performance CSV's with this before ``.csv`` (``output_filename[:-4] + ...``)
METRICS_MARK = "_compilation_metrics"
COMPILATION_LATENCY = "compilation_latency"
#: the first ``dynamo_timed`` function of a compile: Dynamo's whole compile of a frame
COMPILE_INNER = "_compile.compile_inner"
#: a metrics CSV's columns in ``SuiteRun.harness``
TIMED_PREFIX = "dynamo_timed:"
#: what ``benchmarks/dynamo/runner.py`` names the columns of a file without a header
LEGACY_HEADER = ("dev", "name", "batch_size", "speedup", COMPILATION_LATENCY, "compression_ratio")
#: the columns that name a row, not a figure
KEY_COLUMNS = frozenset({"dev", "name", "tag"})
#: the performance CSV's float columns (written ``%.6f``: a bare ``"0"`` there is padding)
FLOAT_COLUMNS = frozenset({"speedup", "abs_latency", "baseline", "speedup_vs_baseline", COMPILATION_LATENCY,
                           "compression_ratio", "eager_peak_mem", "dynamo_peak_mem", "cache_lookup_latency"})
#: the one executor name a harness suite carries (not a real executor: ``--resume`` refuses it)
EXECUTOR = "harness"
FAILED_ROW = ("the harness wrote a failed row (speedup 0, abs_latency 0): the model failed to load or run, "
              "timed out or failed its warm-up")


@dataclass(frozen=True)
class _Row:
    """One row of a CSV: where it is, whose it is, and its cells by column (first of a name wins)."""

    line: int
    dev: str
    name: str
    tag: str
    cells: dict[str, str]

    @property
    def key(self) -> tuple[str, str, str]:
        return self.dev, self.name, self.tag


@dataclass
class _Table:
    path: Path
    kind: str  # PERFORMANCE or METRICS
    rows: list[_Row]
    #: metrics rows the harness padded (shorter than the header, or ending in its ``"0"``)
    padded: int = 0


@dataclass
class _Draft:
    """A run before it has its entry name and repeat."""

    key: tuple[str, str, str]
    error: str | None
    total: float | None = None
    harness: dict[str, float] = field(default_factory=dict)


def read_harness_csvs(paths: list[Path]) -> Suite:
    """The harness's CSVs (performance and ``*_compilation_metrics.csv``, any number, any mix) as one
    suite without causes: ``origin`` harness, no entries, one run per model row. DynaprofError on a
    file that cannot be read as one."""
    given = [Path(p) for p in paths]
    if not given:
        raise DynaprofError("no harness CSV given")
    seen: set[Path] = set()
    for p in given:
        if p.resolve() in seen:
            raise DynaprofError(f"{p}: given twice (its rows would count twice)")
        seen.add(p.resolve())
    tables = [_read_table(p) for p in given]
    drafts, notes = _drafts(tables)
    if not drafts:
        raise DynaprofError(f"{', '.join(str(p) for p in given)}: no model row in "
                            f"{'it' if len(given) == 1 else 'them'}")
    runs = _runs(drafts)
    return Suite(schema_version=SUITE_SCHEMA_VERSION, source=", ".join(str(p) for p in given),
                 origin=ORIGIN_HARNESS, entries=[], repeat=max(r.repeat for r in runs), cold=False,
                 executor=EXECUTOR, workers=0, command=[], start_time="", runs=runs, notes=notes)


def _drafts(tables: list[_Table]) -> tuple[list[_Draft], list[str]]:
    """Every run of every table, in the order given; a metrics table paired with its performance
    table (when both were given) adds its figures to that table's runs instead of runs of its own."""
    partner = _partners(tables)
    paired = {id(m) for m in partner.values()}
    drafts: list[_Draft] = []
    notes: list[str] = []
    if any(t.kind == PERFORMANCE for t in tables):
        notes.append("compile time: the harness's compilation_latency, the compiled warm-up minus the eager "
                     "warm-up, in seconds (benchmarks/dynamo/common.py)")
    for t in tables:
        if t.kind == PERFORMANCE:
            runs = [_performance_draft(r) for r in t.rows]
            metrics = partner.get(id(t))
            if metrics is not None:
                notes += _pair(runs, t, metrics)
            drafts += runs
        elif id(t) not in paired:
            drafts += [_metrics_draft(r) for r in t.rows]
            notes.append(f"{t.path.name}: no performance CSV given beside it: its compile time is the sum of "
                         f"{COMPILE_INNER} (Dynamo's own timer), not compilation_latency")
        if t.kind == METRICS and t.padded:
            notes.append(f"{t.path.name}: {plural(t.padded, 'row')} with fewer dynamo_timed functions than its "
                         "header: the harness writes values by position, so their columns may be misnamed")
    return drafts, notes


def _partners(tables: list[_Table]) -> dict[int, _Table]:
    """id(performance table) -> its metrics table: the one named like it with ``_compilation_metrics``
    (``X_compilation_metrics.csv`` beside ``X.csv``, or renamed as ``X_compilation_metrics_Y.csv`` beside
    ``X_Y.csv``), in the same folder."""
    perf = {(t.path.resolve().parent, t.path.name): t for t in tables if t.kind == PERFORMANCE}
    out: dict[int, _Table] = {}
    for m in tables:
        if m.kind != METRICS or METRICS_MARK not in m.path.name:
            continue
        p = perf.get((m.path.resolve().parent, m.path.name.replace(METRICS_MARK, "", 1)))
        if p is not None and id(p) not in out:
            out[id(p)] = m
    return out


def _pair(runs: list[_Draft], perf: _Table, metrics: _Table) -> list[str]:
    """Give each finished run of ``perf`` the next metrics row of its model, in order (a failed run has
    no metrics row); a note for the rows left over."""
    queue: dict[tuple[str, str, str], list[_Row]] = defaultdict(list)
    for row in metrics.rows:
        queue[row.key].append(row)
    for run in runs:
        if run.error == FAILED_ROW or not queue[run.key]:
            continue
        run.harness.update(_timed(queue[run.key].pop(0)))
    left = sorted((k[1], len(v)) for k, v in queue.items() if v)
    if not left:
        return []
    names = ", ".join(f"{n} ({c})" for n, c in left[:5]) + (", ..." if len(left) > 5 else "")
    return [f"{metrics.path.name}: {plural(sum(c for _, c in left), 'row')} without a finished run in "
            f"{perf.path.name} left out: {names}"]


def _runs(drafts: list[_Draft]) -> list[SuiteRun]:
    """Name each draft's model and number its repeats 1..k in the order read."""
    devs = {d.key[0] for d in drafts}
    tags = {d.key[2] for d in drafts}
    repeats: Counter[str] = Counter()
    runs = []
    for d in drafts:
        dev, name, tag = d.key
        entry = "@".join([name] + ([dev] if len(devs) > 1 else []) + ([tag] if len(tags) > 1 else []))
        repeats[entry] += 1
        ok = d.error is None and d.total is not None
        runs.append(SuiteRun(entry, repeats[entry], "", 0 if ok else None, d.error,
                             measures={TOTAL: stored_s(d.total)} if ok and d.total is not None else {},
                             harness=dict(sorted(d.harness.items()))))
    return sorted(runs, key=lambda r: (r.entry, r.repeat))


def _number(cell: str | None, padding: bool) -> float | None:
    """A cell's finite number; None when empty, not a number, or (``padding``) the harness's ``"0"``."""
    if cell is None:
        return None
    text = cell.strip()
    if not text or (padding and text == "0"):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _performance_draft(row: _Row) -> _Draft:
    cells = row.cells
    speedup = _number(cells.get("speedup"), True)
    latency = _number(cells.get("abs_latency"), True)
    if "speedup" in cells and not (speedup or 0.0) > 0 and not (latency or 0.0) > 0:
        return _Draft(row.key, FAILED_ROW)
    figures = {c: v for c, text in cells.items() if c not in KEY_COLUMNS and c != COMPILATION_LATENCY
               and (v := _number(text, c in FLOAT_COLUMNS)) is not None}
    total = _number(cells.get(COMPILATION_LATENCY), True)
    if total is None:
        return _Draft(row.key, "the row has no compilation_latency", None, figures)
    if total <= 0:
        return _Draft(row.key, f"compilation_latency {total:g} s is no compile time (the dashboard counts only "
                               "values above 0)", None, figures)
    return _Draft(row.key, None, total, figures)


def _timed(row: _Row) -> dict[str, float]:
    """A metrics row's figures: ``dynamo_timed:FUNCTION`` -> seconds (padding left out)."""
    out = {}
    for c, text in row.cells.items():
        if c in KEY_COLUMNS:
            continue
        v = _number(text, True)
        if v is not None:
            out[c if c == "batch_size" else TIMED_PREFIX + c] = v
    return out


def _metrics_draft(row: _Row) -> _Draft:
    figures = _timed(row)
    total = figures.get(TIMED_PREFIX + COMPILE_INNER)
    if total is None or total <= 0:
        return _Draft(row.key, f"no {COMPILE_INNER} time in the row: nothing compiled", None, figures)
    return _Draft(row.key, None, total, figures)


def _read_table(path: Path) -> _Table:
    """One CSV: its kind (from its header, else its name), header and rows; DynaprofError otherwise."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DynaprofError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DynaprofError(f"{path}: a folder, not a harness CSV") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DynaprofError(f"{path}: cannot read it: {e}") from None
    if "\0" in text:
        raise DynaprofError(f"{path}: not a valid CSV: it holds NUL bytes (a file cut short or overwritten?)")
    try:
        lines = [(n, cells) for n, cells in enumerate(csv.reader(io.StringIO(text, newline=""), strict=True), 1)
                 if any(c.strip() for c in cells)]
    except csv.Error as e:
        raise DynaprofError(f"{path}: not a valid CSV: {e}") from None
    if not lines:
        raise DynaprofError(f"{path}: empty, not a harness CSV")
    header, kind, named = _header(path, lines[0][1])
    body = lines[1:] if named else lines
    if len(set(header) & {"dev", "name"}) < 2:
        raise DynaprofError(f"{path}: not a harness CSV: its header has no dev and name columns")
    table = _Table(path, kind, [])
    for n, cells in body:
        if len(cells) > len(header):
            raise DynaprofError(f"{path}:{n}: {len(cells)} cells under a header of {len(header)}: not a harness CSV")
        if kind == METRICS and (len(cells) < len(header) or cells[-1].strip() == "0"):
            table.padded += 1
        table.rows.append(_row(path, n, header, cells))
    return table


def _header(path: Path, first: list[str]) -> tuple[list[str], str, bool]:
    """The header (the first line, or runner.py's names for a file without one), the file's kind, and
    whether the first line is the header."""
    cols = [c.strip() for c in first]
    if "dev" not in cols:
        if len(cols) == len(LEGACY_HEADER) and all(_number(c, False) is not None for c in cols[2:]):
            return list(LEGACY_HEADER), PERFORMANCE, False
        raise DynaprofError(f"{path}: not a harness CSV: no header naming dev, name, batch_size")
    if "speedup" in cols or COMPILATION_LATENCY in cols:
        return cols, PERFORMANCE, True
    if "accuracy" in cols:
        raise DynaprofError(f"{path}: an --accuracy CSV, without compile times: give the --performance CSV "
                            "or its _compilation_metrics.csv")
    if COMPILE_INNER in cols or METRICS_MARK in path.name:
        return cols, METRICS, True
    raise DynaprofError(f"{path}: not a harness performance or compilation metrics CSV (no speedup, "
                        f"{COMPILATION_LATENCY} or {COMPILE_INNER} column)")


def _row(path: Path, line: int, header: list[str], cells: list[str]) -> _Row:
    by: dict[str, str] = {}
    for col, cell in zip(header, cells, strict=False):  # a short row: the rest absent
        by.setdefault(col, cell.strip())
    name = by.get("name", "")
    if not name:
        raise DynaprofError(f"{path}:{line}: a row without a model name")
    return _Row(line, by.get("dev", ""), name, by.get("tag", ""), by)
