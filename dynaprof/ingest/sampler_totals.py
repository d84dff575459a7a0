"""The builtin sampler's totals record, and the session's ``Samples`` made from it and the stacks."""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaprof.fmt import stored_s
from dynaprof.ingest.journal_values import non_negative, rates_pair
from dynaprof.ingest.torch_metrics import opt_int, opt_num, opt_str
from dynaprof.model.journal import Sampler
from dynaprof.model.session import Samples, Stack


@dataclass
class SamplerTotals:
    source: str | None = None
    seconds: float | None = None
    requested_hz: float | None = None
    errors: int = 0
    adapted_hz: list[float] = field(default_factory=list)
    signal_samples: int = 0
    own_s: float | None = None
    floor_s: float | None = None


def sampler_totals(r: Sampler) -> SamplerTotals:
    """A ``sampler`` record's values, each checked (a malformed one reads as unknown)."""
    return SamplerTotals(
        opt_str(r.get("source")), opt_num(r.get("seconds")), opt_num(r.get("requested_hz")),
        max(0, opt_int(r.get("errors")) or 0), rates_pair(r.get("adapted_hz")),
        max(0, opt_int(r.get("signal_samples")) or 0), non_negative(r.get("own_s")), non_negative(r.get("floor_s")),
    )  # fmt: skip


def samples_of(totals: SamplerTotals | None, sampler: str, requested_hz: float | None, stacks: list[Stack]) -> Samples:
    """The session's samples: the stacks, and the totals where the journal had them (the launcher's
    sampler and rate first: it knows what was asked)."""
    t = totals or SamplerTotals()
    count = sum(s.samples for s in stacks)
    window = t.seconds or 0.0
    achieved = round(count / window, 1) if window > 0 else None
    return Samples(t.source or sampler, requested_hz or t.requested_hz or 0.0, achieved, count,
                   stored_s(sum(s.seconds for s in stacks)), t.errors, stacks, t.adapted_hz,
                   t.signal_samples, t.own_s, t.floor_s)  # fmt: skip
