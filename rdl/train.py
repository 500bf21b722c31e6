"""Train and evaluate a model on a task: ``python -m rdl.train task=user-churn``.

Composes everything from ``conf/``: the task (``conf/task``, SQL in ``tasks/``), the
database and loaders (``conf/data``), the model (``conf/model``), the optimiser and
schedule, and the Lightning trainer; :func:`rdl.fit` (``rdl/api.py``) runs it. Val and test
metrics, beside trivial baselines, are printed and written to the run folder
(``metrics.json``).
"""
from __future__ import annotations

if __name__ == "__main__":   # python -m rdl.train: before torch is imported (rdl/threads.py)
    from rdl.threads import at_start
    at_start()

import os
import sys

import hydra
from omegaconf import DictConfig

from rdl.api import fit, user_error


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float:
    try:
        results = fit(cfg)   # sets up the process for the run, undone when it ends
    except Exception as e:
        # Bad data or settings: one clear message, no stack trace (HYDRA_FULL_ERROR=1 shows
        # it). Anything else is a bug and keeps its traceback.
        error = user_error(e)
        if error is None or os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    return results["model"]["val"].get(cfg.task.monitor)  # for sweepers


if __name__ == "__main__":
    main()
