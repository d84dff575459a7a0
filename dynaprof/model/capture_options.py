"""What a capture records, declared once: each option's name, type, default and help, and for the
on/off switches a user sets, the flag and the entry points that offer it. ``dynaprof run``'s
arguments (``cli/run_options.py``), ``dynaprof.profile()``'s keywords (``api.py``), the notebook's
flags (``notebook.py``), the pytest options (``pytest_plugin.py``) and the capture child's config
(``capture/child.py``, serialized once as this object) all read it from here; no entry point
writes a default of its own (``tests/unit/test_option_defaults.py``).

A new switch is a field here with ``switch(...)`` metadata, the code that reads it (the capture's
``opts.<name>``), and its test: every entry point named in ``entries`` offers it by itself.

Standard library only: the pytest plugin reads it when pytest loads, before anything of torch.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any

#: py-spy's default rate: it reads the process from outside, each sample a pass over its memory
PYSPY_RATE_HZ = 100.0

#: the entry points that take switches
RUN, API, NOTEBOOK, PYTEST = "run", "api", "notebook", "pytest"
EVERYWHERE = frozenset({RUN, API, NOTEBOOK, PYTEST})


@dataclass(frozen=True)
class Switch:
    """An on/off capture option a user sets: ``name`` is the field (and the ``profile()``
    keyword); ``flag`` the command-line word that turns it away from its default."""

    name: str
    flag: str
    help: str
    default: bool
    entries: frozenset[str]
    #: the command line also takes ``--no-<flag>`` (argparse's BooleanOptionalAction)
    negatable: bool = False

    @property
    def store(self) -> str:
        """The argparse action of its flag: it turns the switch away from its default."""
        return "store_false" if self.default else "store_true"

    @property
    def pytest_flag(self) -> str:
        """``--time-calls`` -> ``--dynaprof-time-calls`` (pytest's options share one namespace)."""
        return "--dynaprof-" + self.flag.removeprefix("--")


def switch(flag: str, help: str, entries: frozenset[str] = EVERYWHERE, negatable: bool = False) -> dict[str, Any]:
    """A field's metadata declaring it a switch: ``flag`` and ``help`` on every entry in ``entries``."""
    return {"switch": (flag, help, entries, negatable)}


@dataclass(frozen=True)
class CaptureOptions:
    """What one capture records, with its defaults."""

    sampler: str = "builtin"  # builtin | none (py-spy runs outside the process)
    #: samples per second of wall time, the builtin sampler's (py-spy's: ``PYSPY_RATE_HZ``)
    rate_hz: float = 1000.0
    #: below ``rate_hz`` where a sample costs more than the sampler's budget (``capture.signal_cost``);
    #: an explicit ``--rate`` fixes it
    adapt_rate: bool = True
    #: seconds one timer signal costs a compile here (``signal_cost.floor_s``; None: not known)
    signal_floor_s: float | None = None
    inline_profile: bool = field(default=False, metadata=switch(
        "--inline-profile", "also enable torch's built-in Dynamo profiler (per-inline trace times; torch 2.13's "
        "profiler crashes compiles that restart after a graph break)", frozenset({RUN})))
    cprofile_dir: str | None = None
    torch_trace_dir: str | None = None
    #: sample the main thread with SIGALRM when it is free (False: always from a thread)
    use_signal: bool = field(default=True, metadata=switch(
        "--thread-sampler", "sample compiles from a thread only, never with SIGALRM on the main thread (for a "
        "script that sets SIGALRM or ITIMER_REAL itself; a lower rate)"))
    #: also time each call of the compiled graphs (two clock reads a call): CompiledFrame.call_time_*
    time_calls: bool = field(default=False, metadata=switch(
        "--time-calls", "also time each call of the compiled code (host wall time per call, median and total; on "
        "CUDA the kernels run asynchronously, so this is launch time)"))
    #: compute AOTAutograd's cache-key components (``capture.cache_keys``): off by default, as
    #: re-pickling the graph costs an Inductor compile 1-3% (docs/performance.md)
    aot_components: bool = field(default=False, metadata=switch(
        "--aot-components", "also compute AOTAutograd's cache-key components, so that its cache misses are "
        "explained (torch computes them only at DEBUG logging; this re-pickles the graph: 1-3%% of an Inductor "
        "compile, docs/caches.md). Off by default: the FX graph cache's components, which torch gives, are kept",
        frozenset({RUN}), negatable=True))
    #: fold every parametrization before compiling (``dynaprof run --counterfactual``'s second run)
    fold_parametrizations: bool = False
    #: keep each graph with parametrizations that Inductor is handed, for the replay that finds the
    #: kernels only the parametrization made (``capture.replay``)
    replay_graphs: bool = field(default=True, metadata=switch(
        "--no-replay", "do not replay the graphs with parametrizations that Inductor compiled (after the script, "
        "in a process of its own, folded, no kernel built) to find the kernels only the parametrization made; "
        "they are then split by node only (docs/causes.md)", frozenset({RUN})))


#: the highest sampling rate any entry point accepts
MAX_RATE_HZ = 20000.0


def default_rate(sampler: str) -> float:
    """The rate a sampler runs at unless told otherwise."""
    return PYSPY_RATE_HZ if sampler == "py-spy" else CaptureOptions.rate_hz


def chosen_rate(rate: float | None, sampler: str) -> tuple[float, bool]:
    """(the rate to sample at, whether it adapts): no rate given is the sampler's default, adapted
    to what a sample costs here; a rate given is fixed. ValueError outside (0, ``MAX_RATE_HZ``]."""
    if rate is None:
        return default_rate(sampler), True
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= MAX_RATE_HZ:
        raise ValueError(f"between 0 and {MAX_RATE_HZ:g} samples per second, got {rate!r}")
    return float(rate), False


def switches(entry: str | None = None) -> tuple[Switch, ...]:
    """Every switch (``entry``: those that entry point offers), in declaration order."""
    out = []
    for f in dataclasses.fields(CaptureOptions):
        declared = f.metadata.get("switch")
        if declared is None:
            continue
        flag, help_text, entries, negatable = declared
        if entry is None or entry in entries:
            out.append(Switch(f.name, flag, help_text, bool(f.default), entries, negatable))
    return tuple(out)


def switch_values(values: dict[str, Any], entry: str) -> dict[str, bool]:
    """The switches of ``entry`` read from ``values`` (parsed arguments' ``vars``), by field name."""
    return {s.name: bool(values[s.name]) for s in switches(entry) if s.name in values}


def switched(values: dict[str, bool], base: CaptureOptions | None = None) -> CaptureOptions:
    """``base`` (the defaults) with the switches in ``values`` set; ValueError naming an unknown one."""
    known = {s.name for s in switches()}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"no capture switch named {', '.join(unknown)} (there are: {', '.join(sorted(known))})")
    given: dict[str, Any] = dict(values)
    return dataclasses.replace(base or CaptureOptions(), **given)


def add_switches(p: argparse.ArgumentParser, entry: str) -> list[argparse.Action]:
    """The switches ``entry`` offers as arguments of ``p`` (dest: the option's name): on for a
    default-off switch, ``--no-...`` off for a default-on one."""
    added = []
    for s in switches(entry):
        action: type[argparse.Action] | str = argparse.BooleanOptionalAction if s.negatable else s.store
        added.append(p.add_argument(s.flag, dest=s.name, action=action, default=s.default, help=s.help))
    return added
