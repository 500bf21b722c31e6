"""Several backtests side by side: one row per sweep (a task on a database), as
``python -m rdl.backtest A B ...`` prints it (:mod:`rdl.backtest` reads the runs).

Sweeps whose runs print LightGBM on depth-1 and depth-2 features (node tasks) get the
model, both LightGBMs and the best simple baseline, and the model's lead over each and over
its prior (the baseline it started from, :func:`~rdl.backtest.prior_of`). The others (link
tasks: popularity, past links, a ranker) get the model, the baseline best on val, and each
baseline with the model's lead over it; what a baseline reports that the model does not (a
ranker's candidate recall) gets a column too.
Every number is the monitored metric's mean ± standard error over the sweep's val and test
scores (``split``: ``both``, or only ``val`` or ``test`` ones); a lead counts the weeks
the model won.
"""
from __future__ import annotations

import math
import statistics

from rdl.backtest import AS_TRAINED, WEEKS, entries, markdown, mean_se, prior_of, scores, summary
from rdl.baselines.tree_mean import MEAN
from rdl.baselines.trees import DEPTH1, DEPTH2
from rdl.report import decimals

#: which of a run's two scores the overview averages: val weeks are where the checkpoint,
#: the correction's factor and the depth-2 features were chosen, so ``test`` is the
#: measure that no choice saw
SPLITS = {"both": WEEKS, "val": ("val",), "test": ("test",)}
#: in each run the baseline its model started from (:func:`~rdl.backtest.prior_of`: the
#: one the run names, else the LightGBM better on val)
PRIOR = "its prior"
TREES = (DEPTH1, DEPTH2, MEAN)

Scores = dict[str, dict[tuple[int, str], float]]


def sweep_scores(runs: list[dict], metric: str | None = None) -> Scores:
    """Per model or baseline, ``metric``'s value (default: the monitored one) keyed by
    (run, split), with the prior of each run that has one (:func:`~rdl.backtest.prior_of`)."""
    out: Scores = {}
    for i, r in enumerate(runs):
        m, sign = metric or r["monitor"], 1.0 if r["higher"] else -1.0
        row = entries(r["metrics"])
        for who, res in row.items():
            for s in WEEKS:
                if m in res[s]:
                    out.setdefault(who, {})[(i, s)] = res[s][m]
        if chosen := prior_of(r["metrics"], m, sign > 0):
            res = scores(r["metrics"][chosen])   # by its whole name ("label mean (last 4)")
            for s in WEEKS:
                if m in res[s]:
                    out.setdefault(PRIOR, {})[(i, s)] = res[s][m]
    return out


class Sweep:
    """One sweep's cells: its scores in the chosen splits, with its decimals."""

    def __init__(self, runs: list[dict], split: str, metric: str | None = None):
        self.runs, self.split = runs, split
        self.sign = 1.0 if runs[0]["higher"] else -1.0
        self.all = sweep_scores(runs, metric)
        self.digits = decimals([v for vs in self.all.values() for v in vs.values()],
                               percent=False)
        self.scores = {w: {k: v for k, v in vs.items() if k[1] in SPLITS[split]}
                       for w, vs in self.all.items()}

    def best(self, candidates) -> str | None:
        """The candidate best on its val scores (the test weeks do not choose it)."""
        val = {w: [v for (_, s), v in self.all[w].items() if s == "val"] for w in candidates}
        val = {w: v for w, v in val.items() if v}
        return max(val, key=lambda w: self.sign * statistics.fmean(val[w]), default=None)

    def cell(self, who: str) -> str:
        v = list(self.scores.get(who, {}).values())
        return mean_se(v, self.digits) if v else "-"

    def lead(self, a: str, b: str) -> tuple[str, list[float] | None]:
        """``a``'s lead over ``b`` on the scores both have, and its values."""
        x, y = self.scores.get(a, {}), self.scores.get(b, {})
        d = [self.sign * (x[k] - y[k]) for k in sorted(x.keys() & y.keys())]
        return (summary(d, self.digits), d) if d else ("-", None)

    def verdict(self, other: str) -> str:
        """Whether the model's lead over ``other`` is more than one standard error."""
        d = self.lead("model", other)[1]
        if d is None or len(d) < 2:
            return "-"
        mean, se = statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))
        return "ahead" if mean > se else "behind" if mean < -se else "level"

    def ahead_of_model(self) -> list[str]:
        """Every baseline the model trails by more than one standard error (the runs'
        printed ones: not its prior, which is one of them, nor the model as trained)."""
        return [w for w in self.scores if w not in ("model", AS_TRAINED, PRIOR)
                and self.verdict(w) == "behind"]

    def weeks(self) -> str:
        scored = self.scores["model"]
        distinct = {self.runs[i][s] for i, s in scored}
        return f"{len(scored)} ({len(distinct)} distinct)"


def tree_rows(sweeps: dict[str, list[dict]], split: str) -> list[list[str]]:
    """The node tasks' table: the model, both LightGBMs, the best simple baseline; the
    model's lead over each and over its prior, and that of the model as trained over
    the depth-2 LightGBM (where every run scaled its correction on val); last, every
    printed baseline the model trails by more than a standard error ("behind")."""
    rows = [["sweep", "metric", "weeks", "model", DEPTH2, DEPTH1, "best simple",
             f"model over {DEPTH2}", f"{AS_TRAINED} over {DEPTH2}", f"model over {DEPTH1}",
             f"model over {PRIOR}", f"{DEPTH2} over {DEPTH1}", "model over best simple",
             "model vs depth 2", "behind"]]
    for name, runs in sweeps.items():
        sw = Sweep(runs, split)
        if len(sw.all.get(AS_TRAINED, {})) != len(sw.all["model"]):  # not in every run
            sw.scores.pop(AS_TRAINED, None)
        best = sw.best([w for w in sw.all if w not in ("model", AS_TRAINED, PRIOR, *TREES)])
        rows.append([name, runs[0]["monitor"], sw.weeks(), sw.cell("model"), sw.cell(DEPTH2),
                     sw.cell(DEPTH1), "-" if best is None else f"{best}: {sw.cell(best)}",
                     sw.lead("model", DEPTH2)[0], sw.lead(AS_TRAINED, DEPTH2)[0],
                     sw.lead("model", DEPTH1)[0], sw.lead("model", PRIOR)[0],
                     sw.lead(DEPTH2, DEPTH1)[0],
                     "-" if best is None else sw.lead("model", best)[0], sw.verdict(DEPTH2),
                     ", ".join(sw.ahead_of_model()) or "none"])
    return rows


def baseline_rows(sweeps: dict[str, list[dict]], split: str) -> list[list[str]]:
    """The other sweeps' table (link tasks): the model, the baseline best on val and
    whether the model is ahead of it by more than a standard error; then every baseline
    of any of these sweeps and the model's lead over it; then what a baseline reports that
    the model does not, as ``<baseline>: <metric>``."""
    found = {name: Sweep(runs, split) for name, runs in sweeps.items()}
    names = list(dict.fromkeys(w for sw in found.values() for w in sw.all
                               if w not in ("model", AS_TRAINED, PRIOR)))
    extra = {}   # (baseline, metric) -> per sweep its Sweep of that metric
    for name, runs in sweeps.items():
        model = {m for r in runs for s in WEEKS for m in entries(r["metrics"])["model"][s]}
        for r in runs:
            for w, res in entries(r["metrics"]).items():
                for m in res["val"].keys() | res["test"].keys():
                    if w in names and m not in model:
                        extra.setdefault((w, m), {})[name] = None
    for (w, m), per in extra.items():
        for name in per:
            per[name] = Sweep(sweeps[name], split, m)
    rows = [["sweep", "metric", "weeks", "model", "best baseline on val",
             "model over best baseline", "model vs best baseline",
             *(c for w in names for c in (w, f"model over {w}")),
             *(f"{w}: {m}" for w, m in extra)]]
    for name, sw in found.items():
        best = sw.best([w for w in names if w in sw.all])
        rows.append([name, sweeps[name][0]["monitor"], sw.weeks(), sw.cell("model"),
                     "-" if best is None else f"{best}: {sw.cell(best)}",
                     "-" if best is None else sw.lead("model", best)[0],
                     "-" if best is None else sw.verdict(best),
                     *(c for w in names for c in (sw.cell(w), sw.lead("model", w)[0])),
                     *(per[name].cell(w) if name in per else "-"
                       for (w, _), per in extra.items())])
    return rows


def overview(sweeps: dict[str, list[dict]], split: str = "both") -> str:
    """One row per sweep, in two tables: sweeps with the depth-1/2 LightGBMs
    (:func:`tree_rows`), then the others (:func:`baseline_rows`)."""
    trees = {n: runs for n, runs in sweeps.items()
             if any(w in entries(r["metrics"]) for r in runs for w in TREES)}
    others = {n: runs for n, runs in sweeps.items() if n not in trees}
    over = {"both": "val and test scores", "val": "val scores only",
            "test": "test scores only"}[split]
    lines = [f"# Backtests of several sweeps: mean ± standard error over each sweep's {over};",
             "# leads positive where the first is better (weeks won / weeks)"]
    if trees:
        lines += ["", *markdown(tree_rows(trees, split))]
    if others:
        lines += ["", "Sweeps without LightGBM on depth-1/2 features (link tasks): the model, "
                  "the baseline best on val, each baseline and the model's lead over it", "",
                  *markdown(baseline_rows(others, split))]
    return "\n".join(lines) + "\n"
