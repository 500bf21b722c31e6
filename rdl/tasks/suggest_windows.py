"""The window and split times a suggested task takes (:mod:`rdl.tasks.suggest`): the
shortest window the events' times allow whose val and test splits rest on enough rows
(:func:`fitting_window`, over the backtests the printed command is judged on), and split
times before a gap the last windows fall in (:func:`before_gap`) or a thin tail of few
events (:func:`thin_tail`); test the last whole
window before the data's end, val the one before (:func:`split_dates`)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.tasks.kinds import FEW
from rdl.tasks.window import MEAN_MONTH, calendar_day, last_split, parse_window, shift

#: the windows a suggestion takes (the shortest that fits, at least a week); for events
#: a month or a quarter apart, on one day of the month (:func:`rdl.tasks.window.calendar_day`),
#: calendar months: 30 days would hold two such rows around February, none in some months
WINDOWS = ("1d", "7d", "30d", "91d", "365d")
CALENDAR_WINDOWS = ("1mo", "3mo", "1y")
#: at least this many windows in the data's span, where a shorter window allows
SPAN_WINDOWS = 20
#: the backtests (``backtest=0,1,...``) a suggested window is judged on: their median split
BACKTESTS = 5
#: a run of last windows each holding fewer events than this share of the median
#: window's is a thin tail, in no split (:func:`thin_tail`)
THIN = 0.25
#: what a split's evidence counts, per label (:func:`evidence`'s tuples): the rarer class of
#: ``active``; the rows with events in the window after (a label not 0) of ``count``
COUNTS = {"active": 2, "count": 1}

def window_for(times: np.ndarray) -> str:
    """A window for events at ``times``: at least a week, and at least the usual gap
    between their distinct times (a table of seasons: a year); a shorter one where they
    span fewer than :data:`SPAN_WINDOWS` of it, but never shorter than that gap."""
    return windows_for(times)[0]


def windows_for(times: np.ndarray) -> list[str]:
    """The windows events at ``times`` allow, shortest first: :func:`window_for`'s, then
    each longer one that the events still span :data:`SPAN_WINDOWS` times."""
    times = np.unique(times)
    span = pd.Timedelta(times[-1] - times[0])
    gap = pd.Timedelta(np.median(np.diff(times))) if len(times) > 1 else pd.Timedelta(0)
    if calendar_day(times):   # months apart (28 to 31 days each): whole months
        windows, need = CALENDAR_WINDOWS, round(gap / MEAN_MONTH) * MEAN_MONTH
    else:
        windows, need = WINDOWS, max(gap, parse_window(WINDOWS[1]))
    sizes = [parse_window(w) for w in windows]
    i = next((i for i, w in enumerate(sizes) if w >= need), len(sizes) - 1)
    while i > 0 and span < SPAN_WINDOWS * sizes[i] and sizes[i - 1] >= gap:
        i -= 1   # (not below the gap: yearly rows' 91 days would hold none in three of four)
    longer = [w for w, size in zip(windows[i + 1:], sizes[i + 1:]) if span >= SPAN_WINDOWS * size]
    return [windows[i], *longer]


def evidence(events: pd.DataFrame, window: str, born: pd.Series,
             label: str = "active") -> dict[str, tuple] | None:
    """``{seeds: (rows, active, rarer, quiet)}``, for ``task.seeds`` ``active`` and ``all``, of
    the task with ``window``: a split's seeds (the entities with an event in the window
    before its time; or every one that exists), those with an event in the window after,
    and the rarer of the two classes, which AUROC rests on (:data:`rdl.tasks.kinds.FEW`);
    of the split thinner in what ``label`` counts (:data:`COUNTS`), the median over the
    :data:`BACKTESTS` backtests that fit (a quiet week or two does not decide; the backtest
    of the printed command judges on them). Seeds whose printed val or test split holds
    none of it are left out: the command would not train, or score one class. ``quiet``:
    the backtests' split times whose split holds none of it (every label one value).
    ``events``: ``(entity, time)`` rows; ``born``: each entity's time (NaT: from the
    start). None where no train window fits."""
    times = events["time"]
    dates = split_dates(times.min(), times.max(), window, calendar_day(times))
    if dates is None:
        return None
    first, test = pd.Timestamp(times.min()), pd.Timestamp(dates[1])
    at = lambda k: shift(test, window, -k)   # noqa: E731  (the split time k windows back)
    back = [b for b in range(BACKTESTS) if at(b + 2) >= first]   # a train window each
    found = {"active": [], "all": []}
    for k in range(max(back) + 2):   # the split times, test's back to the earliest val
        t = at(k)
        # a seed at t sees events up to t; its label, those after t up to t + window
        before = set(events["entity"][(times > at(k + 1)) & (times <= t)])
        after = set(events["entity"][(times > t) & (times <= at(k - 1))])
        exist = int((born.isna() | (born <= t)).sum())
        for seeds, n, active in (("active", len(before), len(before & after)),
                                 ("all", exist, len(after))):
            found[seeds].append((n, active, min(active, n - active)))
    out, i = {}, COUNTS[label]
    for seeds, f in found.items():   # each backtest's thinner split, then their median
        if min(f[0][i], f[1][i]) == 0:   # the printed command's test (k 0) and val (k 1)
            continue
        thinner = sorted((min(f[b], f[b + 1], key=lambda x: x[i]) for b in back),
                         key=lambda x: x[i])
        quiet = tuple(str(at(k).date()) for k in range(len(f)) if f[k][i] == 0)
        out[seeds] = (*thinner[(len(thinner) - 1) // 2], quiet)
    return out


def fitting_window(events: pd.DataFrame, born: pd.Series,
                   label: str = "active") -> tuple[str, str, tuple] | None:
    """``(window, seeds, evidence)``: the shortest window of :func:`windows_for` whose
    val and test rest on at least :data:`rdl.tasks.kinds.FEW` rows of what ``label``
    counts (:func:`evidence`), with ``task.seeds=active`` where that is enough, else
    ``all``; where none is, the one of most. None where no window fits."""
    best, i = None, COUNTS[label]
    for window in windows_for(events["time"].to_numpy()):
        found = evidence(events, window, born, label)
        for seeds, rests in (found or {}).items():
            if rests[i] >= FEW:
                return window, seeds, rests
            if best is None or rests[i] > best[2][i]:
                best = (window, seeds, rests)
    return best


def _fit(events: pd.DataFrame, born: pd.Series) -> tuple[tuple | None, bool]:
    """:func:`fitting_window` of ``label=active``, or, where every entity has events in
    the window after or none has at every window (a plot surveyed each month: no active
    task to learn), of the counts; and whether it is the counts'."""
    fit = fitting_window(events, born)
    return (fit, False) if fit is not None else (fitting_window(events, born, "count"), True)


def thin_tail(events: pd.DataFrame, window: str) -> tuple[pd.DataFrame, list[str]]:
    """``(events, note)``: the events without their thin tail, the run of last windows
    (counted back from the last event) each holding fewer than :data:`THIN` of the median
    window's events, where the rows of most events ended and a few go on (TPC-DS's store
    returns for half a year after its sales end, at a tenth of their rate; a table
    exported later than the others): val and test there would judge a model on those few
    alone. A tail of more than a quarter of the windows is the data's own trend, kept."""
    times = events["time"].to_numpy()
    if not len(times):
        return events, []
    size = parse_window(window).to_timedelta64()
    back = ((times.max() - times) // size).astype(np.int64)   # 0: the last window
    counts = np.bincount(back)
    if len(counts) < 8:
        return events, []
    usual = np.median(counts[:-1])   # (the first window, maybe partial, left out)
    thin = int(np.argmax(counts >= THIN * usual))   # the last windows below it
    if thin == 0 or thin > len(counts) // 4:
        return events, []
    end = _step(times, times.max() - thin * size, size)
    kept, spans = events[times < end], (times.max() - end) / size   # (windows it spans)
    if len(kept) == len(events) or spans < 1:
        return events, []
    start = pd.Timestamp(times[times >= end].min())
    rate = (len(events) - len(kept)) / spans / usual
    return kept, [f"# {len(events) - len(kept):,} rows from {start} on (the last "
                  f"{spans:.0f} x {window}) hold {rate:.0%} of the events a window usually "
                  "does, where most events' rows end (a table exported later, returns "
                  "after the sales): in no split's windows"]


def _step(times: np.ndarray, edge, size) -> pd.Timestamp:
    """The day within a window of ``edge`` where the events' daily counts step down: the
    split of the days from two windows before it to the last into a busy part and a thin
    one, each counted as its mean, that leaves the least squared error (a day's noise, a
    busy day in the tail, moves it less than a threshold would)."""
    recent = pd.DatetimeIndex(times[times >= edge - 2 * size]).floor("D")
    daily = pd.Series(1, index=recent).groupby(level=0).sum()
    days = pd.date_range(daily.index.min(), daily.index.max(), freq="D")
    x = daily.reindex(days, fill_value=0).to_numpy(dtype=np.float64)
    c1, c2 = np.concatenate([[0], np.cumsum(x)]), np.concatenate([[0], np.cumsum(x * x)])
    k, n = np.arange(1, len(x)), len(x)
    cost = c2[k] - c1[k] ** 2 / k + (c2[n] - c2[k]) - (c1[n] - c1[k]) ** 2 / (n - k)
    near = (days[k] > edge - size) & (days[k] <= edge + size)
    if not near.any():
        return pd.Timestamp(edge)
    return days[k[near][np.argmin(cost[near])]]


def before_gap(events: pd.DataFrame, born: pd.Series, tries: int = 10):
    """``(events, fit, counts, note)``: the events and their :func:`_fit`, or, where their
    last windows hold too few rows (a stray row months after the rest, a last partial
    load), the events up to a gap of over a week after which the fit rests on enough
    (:data:`rdl.tasks.kinds.FEW`), the latest of ``tries`` that keeps half of them; the
    note says what no split's window reaches."""
    fit, counts = _fit(events, born)
    def enough(fit, counts):
        return fit is not None and fit[2][COUNTS["count" if counts else "active"]] >= FEW
    if enough(fit, counts):
        return events, fit, counts, []
    times = np.unique(events["time"].to_numpy())
    for i in np.flatnonzero(np.diff(times) > np.timedelta64(7, "D"))[::-1][:tries]:
        kept = events[events["time"] <= times[i]]
        if 2 * len(kept) < len(events):
            break
        f, c = _fit(kept, born)
        if enough(f, c):
            after = pd.Timestamp(times[i + 1])
            return kept, f, c, [f"# {len(events) - len(kept):,} rows from {after} on, after "
                                f"{(after - pd.Timestamp(times[i])).days} days without any, "
                                "are in no split's windows: the windows up to them hold too "
                                "few rows to train and judge on"]
    return events, fit, counts, []


def split_dates(first, last, window: str, day: int | None = None) -> tuple[str, str] | None:
    """``(val, test)`` for events from ``first`` to ``last``: test's window the last whole
    one by the last day (a calendar window's, from ``day`` of a month); None where no train
    window fits before val's."""
    test = last_split(last, window, day or 1)
    val = shift(test, window, -1)
    return None if shift(val, window, -1) < pd.Timestamp(first) else \
        (str(val.date()), str(test.date()))
