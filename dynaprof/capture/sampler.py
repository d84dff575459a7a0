"""Sampling the compiling thread's stacks, only while Dynamo compiles.

Two mechanisms, chosen per thread:
* main thread: a wall-clock interval timer (``ITIMER_REAL``/SIGALRM). The handler runs on the
  compiling thread itself and reads its frame directly, so no GIL hand-off is needed and the
  rate is close to what was asked. Used only when the script has no SIGALRM handler or alarm of
  its own (we never steal its timer).
* other threads (or when the timer is taken): a sampler thread reading
  ``sys._current_frames()``. It needs the GIL, so its achieved rate is lower; it is reported.

Each sample is weighted by the wall time since the previous sample of that thread, so sampled
seconds add up to compile time whatever rate was achieved.

With ``floor_s`` (the default rate; ``capture.signal_cost``) the rate adapts: at most the asked
one, at most what keeps (the machine's signal floor + the sample's own measured time) x rate within
the sampler's budget. It is decided as each compile starts and again every ``ADAPT_EVERY``
samples; the run's notes say the rate used and why.

While its timer is armed the sampler also times Python's garbage collector (``gc.callbacks``: two
clock reads a collection, nothing else). A collection runs in C, so the next sample would carry
all of it to wherever the code stands when it ends; that part is split off into a stack ending in
``model.journal.GC_FUNCTION``, the collector's phase and cause (``analysis.causes``).

A sample never changes the program (docs/reliability.md, "What a sample may do"): the cyclic
garbage collector is held off while it runs (an allocation could otherwise start a collection that
finalizes unrelated user objects right there), it runs no user or torch code, and it drops every
frame reference before it ends. In the signal handler that is enough: the frames below the
handler cannot return while it runs. A sampler thread reads another thread, which can run when
the GIL changes hands mid-sample; if a frame it holds returned meanwhile, the references are
handed to the compiling thread, which drops them at the end of its compile (counted in the notes).
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from dynaprof.capture.signal_cost import SAMPLER_BUDGET, adapted_rate
from dynaprof.capture.stacks import Aggregate, StackWalker, orphaned_frames
from dynaprof.fmt import plural
from dynaprof.model.journal import GC_FUNCTION, StackItem

#: (thread id) -> (frame key, attempt) of the innermost compile running on that thread
CurrentWindow = Callable[[int], tuple[str | None, int] | None]


#: samples between two decisions of an adapting rate
ADAPT_EVERY = 64
#: what a sample costs before any is measured (the walk of a Dynamo stack on a 2-vCPU VM)
SAMPLE_PRIOR_S = 30e-6


def _no_context(tid: int) -> tuple[tuple[int, ...], int]:
    return (), -1


class Sampler:
    def __init__(
        self,
        walker: StackWalker,
        rate_hz: float,
        current: CurrentWindow,
        emit: Callable[[list[StackItem]], None],
        use_signal: bool = True,
        context: Callable[[int], tuple[tuple[int, ...], int]] | None = None,
        floor_s: float | None = None,
    ) -> None:
        self.walker = walker
        #: (thread id) -> (torch's open span ids, innermost FX-node cause id or -1)
        self.context = context if context is not None else _no_context
        self.interval = 1.0 / rate_hz
        self.rate_hz = rate_hz
        #: the asked rate; with ``floor_s`` (seconds a signal costs here) the rate adapts below it
        self.max_hz = rate_hz
        self.floor_s = floor_s
        self.lowest_hz = rate_hz
        self._self_ns = 0  # time spent in the signal handler's samples, and how many
        self._self_n = 0
        #: the garbage collector's time while the timer is armed, what of it samples took, when the
        #: running collection started (0: none), the function id samples end in for it
        self._gc_ns = 0
        self._gc_taken = 0
        self._gc_t0 = 0
        self._gc_fid = -1
        self._gc_cb = self._on_gc  # one bound method: gc.callbacks removes it by equality
        self.current = current
        self.emit = emit
        self.main_tid = threading.main_thread().ident
        self.use_signal = use_signal and hasattr(signal, "setitimer")
        self._armed = False
        self._in_handler = False
        self._last_ns: dict[int, int] = {}
        self._start_ns: dict[int, int] = {}
        self._signal_agg = Aggregate()
        self._thread_agg = Aggregate()
        self._thread_lock = threading.Lock()
        self._active: set[int] = set()
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.samples = 0
        self.errors = 0
        self.window_seconds = 0.0
        self.notes: list[str] = []
        #: frame lists a sampler thread could not drop safely (see ``_release``), dropped later on
        #: the compiling thread; and how many times that happened
        self._orphans: list[list[FrameType]] = []
        self.orphaned = 0

    # -- window bookkeeping (called on the compiling thread) -------------------------------
    def sample_cost_s(self) -> float:
        """Seconds a sample costs the compiling thread: the signal's floor and the sample's own time."""
        own = self._self_ns / self._self_n / 1e9 if self._self_n >= 16 else SAMPLE_PRIOR_S
        return (self.floor_s or 0.0) + own

    def _adapt(self) -> bool:
        """Set the rate the budget allows now; True when it changed."""
        if self.floor_s is None:
            return False
        hz = adapted_rate(self.max_hz, self.sample_cost_s())
        if abs(hz - self.rate_hz) <= 0.1 * self.rate_hz:
            return False
        self.rate_hz, self.interval = hz, 1.0 / hz
        self.lowest_hz = min(self.lowest_hz, hz)
        return True

    def window_started(self, tid: int) -> None:
        self._adapt()
        now = time.perf_counter_ns()
        self._last_ns[tid] = now
        self._start_ns[tid] = now
        if tid == self.main_tid and self.use_signal and self._arm():
            return
        self._active.add(tid)
        self._ensure_thread()
        self._wake.set()

    def window_ended(self, tid: int) -> None:
        start = self._start_ns.pop(tid, None)
        if start is not None:
            self.window_seconds += (time.perf_counter_ns() - start) / 1e9
        self._last_ns.pop(tid, None)
        self.walker.forget(tid)
        if tid == self.main_tid and self._armed:
            self._disarm()
        self._active.discard(tid)
        self.flush()
        if self._orphans:  # outside the compile, on the compiling thread: the least surprising place
            with self._thread_lock:
                self._orphans = []

    # -- signal timer on the main thread --------------------------------------------------
    def _arm(self) -> bool:
        if self._armed:
            return True
        current = signal.getsignal(signal.SIGALRM)
        blocked = hasattr(signal, "pthread_sigmask") and signal.SIGALRM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        if current not in (signal.SIG_DFL, None) or signal.getitimer(signal.ITIMER_REAL)[0] > 0 or blocked:
            self.use_signal = False
            why = "blocks SIGALRM" if blocked else "uses SIGALRM/alarm()"
            self.notes.append(f"the script {why}; sampling from a thread instead (lower rate)")
            return False
        signal.signal(signal.SIGALRM, self._on_signal)
        signal.siginterrupt(signal.SIGALRM, False)  # restart interrupted system calls
        self._gc_fid = self.walker.table.key_id(GC_FUNCTION)
        self._gc_taken, self._gc_t0 = self._gc_ns, 0
        gc.callbacks.append(self._gc_cb)
        signal.setitimer(signal.ITIMER_REAL, self.interval, self.interval)
        self._armed = True
        return True

    def _disarm(self) -> None:
        self._armed = False
        if self._gc_cb in gc.callbacks:
            gc.callbacks.remove(self._gc_cb)
        ours = signal.getsignal(signal.SIGALRM) == self._on_signal
        if not ours or abs(signal.getitimer(signal.ITIMER_REAL)[1] - self.interval) > 1e-6:
            # the script took SIGALRM or the timer while we sampled: they stay as it set them
            self.use_signal = False
            self.notes.append("the script took SIGALRM or the interval timer during a compile; sampling from a "
                              "thread from then on")
            if ours:
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
            return
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Python runs a handler between any two bytecodes, including inside this handler when
        # the next tick arrives before it returns: never re-enter (the tick is added to the
        # next sample's weight, so no time is lost).
        if self._in_handler:
            return
        tid = self.main_tid
        last = self._last_ns.get(tid) if tid is not None else None
        if last is None or frame is None or tid is None:
            return
        self._in_handler = True
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            now = time.perf_counter_ns()
            self._last_ns[tid] = now
            collected = self._gc_ns - self._gc_taken
            self._gc_taken = self._gc_ns
            if self._gc_t0:  # inside a collection, in a finalizer it runs: its time so far is this sample's
                collected += now - self._gc_t0
                self._gc_t0 = now  # and the rest is the next one's
            self._record(frame, tid, (now - last) / 1e9, self._signal_agg, gc_s=collected / 1e9)
            self._self_ns += time.perf_counter_ns() - now
            self._self_n += 1
            if self.floor_s is not None and self._self_n % ADAPT_EVERY == 0 and self._adapt() and self._armed:
                signal.setitimer(signal.ITIMER_REAL, self.interval, self.interval)
        except Exception as e:  # an exception here would surface inside Dynamo's code
            self._failed(e)
        finally:
            frame = None
            self._in_handler = False
            if collecting:
                gc.enable()

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        """``gc.callbacks``, while the timer is armed: time each collection (two clock reads; it
        runs inside the collector, on whichever thread started it, and the GIL stalls the rest)."""
        if phase == "start":
            self._gc_t0 = time.perf_counter_ns()
        elif self._gc_t0:
            self._gc_ns += time.perf_counter_ns() - self._gc_t0
            self._gc_t0 = 0

    # -- sampler thread for other threads ---------------------------------------------------
    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="dynaprof-sampler", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stopped:
            if not self._active:
                self._wake.wait(0.5)
                self._wake.clear()
                continue
            time.sleep(self.interval)
            self._sample_threads()

    def _sample_threads(self) -> None:
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            # every thread's top frame, then each frame walked: each held exactly once, in ``held``
            frames = sys._current_frames()
            tids = list(frames)
            held: list[FrameType] = list(frames.values())
            frames.clear()
            del frames
            now = time.perf_counter_ns()
            for tid in list(self._active):
                last = self._last_ns.get(tid)
                if last is None or tid not in tids:
                    continue
                self._last_ns[tid] = now
                with self._thread_lock:
                    try:
                        self._record(held[tids.index(tid)], tid, (now - last) / 1e9, self._thread_agg, held)
                    except Exception as e:
                        self._failed(e)
            self._release(held)
        finally:
            if collecting:
                gc.enable()

    def _release(self, held: list[FrameType]) -> None:
        """Drop a sample's frame references, unless one of them is the last reference to a frame
        whose function returned while we held it: dropping that here would run its locals'
        finalizers on this thread. Such a list is kept and dropped by the compiling thread at the
        end of its compile instead."""
        if orphaned_frames(held):
            self.orphaned += 1
            with self._thread_lock:
                self._orphans.append(held)
        else:
            held.clear()  # one C call: nothing in it runs Python code

    # -- shared ----------------------------------------------------------------------------
    def _failed(self, e: Exception) -> None:
        self.errors += 1
        if self.errors == 1:
            self.notes.append(f"sampler: a sample failed and was dropped ({type(e).__name__}: {e})")

    def _record(
        self,
        frame: FrameType,
        tid: int,
        seconds: float,
        agg: Aggregate,
        keep: list[FrameType] | None = None,
        gc_s: float = 0.0,
    ) -> None:
        """One sample of ``seconds``; ``gc_s`` of them were the garbage collector's (a collection
        runs in C, so this sample, the first after it, carries it): they end in ``GC_FUNCTION``."""
        cur = self.current(tid)
        key, fallback_attempt = cur if cur is not None else (None, 0)
        compiler, traced, attempt = self.walker.walk(frame, tid, keep)
        spans, cause = self.context(tid)
        attempt = fallback_attempt if attempt is None else attempt
        if gc_s > 0.0:
            gc_s = min(gc_s, seconds)
            agg.add((key, attempt, tid, (*compiler, self._gc_fid), traced, spans, cause), gc_s, 0)
            seconds -= gc_s
        agg.add((key, attempt, tid, compiler, traced, spans, cause), seconds)
        self.samples += 1

    def flush(self) -> None:
        """Hand aggregated samples to ``emit``; safe against a signal arriving meanwhile."""
        old = self._signal_agg
        self._signal_agg = Aggregate()
        items = list(old.data.items())
        with self._thread_lock:
            items += list(self._thread_agg.data.items())
            self._thread_agg = Aggregate()
        if items:
            self.emit([[k[0], k[1], k[2], list(k[3]), list(k[4]), int(v[0]), v[1], list(k[5]), k[6]] for k, v in items])

    def stop(self) -> None:
        if self._armed:
            self._disarm()
        self._stopped = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self.flush()
        self._orphans = []
        if self.orphaned:
            self.notes.append(
                f"sampler thread: {plural(self.orphaned, 'sample')} held a frame whose function returned meanwhile; "
                "its references were dropped at the end of that compile, not on the sampler thread"
            )
        if self.adapted_hz:
            self.notes.append(self.adapted_note())
        hz = self.achieved_hz
        if hz is not None and self.samples >= 10 and hz < self.rate_hz / 2:
            self.notes.append(
                f"the sampler achieved {hz:,.0f} of the {self.rate_hz:,.0f} samples/s asked (the compiling thread "
                "was busy in C code or the machine was loaded): the pictures are coarser than asked"
            )

    @property
    def adapted_hz(self) -> list[float]:
        """[lowest, current] rate where the default rate adapted below the asked one; else none."""
        return [round(self.lowest_hz, 1), round(self.rate_hz, 1)] if self.lowest_hz < self.max_hz else []

    def adapted_note(self) -> str:
        cost, floor = self.sample_cost_s(), self.floor_s or 0.0
        rate = (f"{self.lowest_hz:,.0f} Hz" if self.lowest_hz == self.rate_hz
                else f"{self.lowest_hz:,.0f}-{self.rate_hz:,.0f} Hz")
        return (
            f"sampled at {rate}, not {self.max_hz:,.0f}: a sample costs a compile ~{cost * 1e6:,.0f} us on this "
            f"machine (the timer signal {floor * 1e6:,.0f} us, measured once per boot; the sample "
            f"{(cost - floor) * 1e6:,.0f} us), so {self.max_hz:,.0f} Hz would cost {cost * self.max_hz:.0%} of compile "
            f"time, over the sampler's {SAMPLER_BUDGET:.0%} budget (--rate fixes the rate)"
        )

    @property
    def own_s(self) -> float:
        """Seconds the signal handler's samples took on the compiling thread (its own measured time;
        the signal's cost around it is ``floor_s`` a sample, measured once per boot)."""
        return self._self_ns / 1e9

    @property
    def signal_samples(self) -> int:
        """Samples taken in the signal handler (those ``own_s`` times; a sampler thread's are not)."""
        return self._self_n

    @property
    def achieved_hz(self) -> float | None:
        return self.samples / self.window_seconds if self.window_seconds > 0 else None
