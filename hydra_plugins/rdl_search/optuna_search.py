"""rdl's Optuna search: Hydra's Optuna sweeper (``hydra-optuna-sweeper``, the ``optuna``
extra) with what a search that stops and starts again needs, and the line it ends with.

``hparams_search=<task>-optuna`` selects it (``rdl/conf/hparams_search``). Beside the
plugin's own behaviour:

- ``n_trials`` is the study's: a search run again on the same study (the same
  ``hydra.sweeper.storage`` and ``study_name``) runs only the trials still to go;
- a trial's run folder is named after its Optuna trial number, so the folders of a
  restarted search (in the same ``hydra.sweep.dir``) follow the first run's instead of
  overwriting them;
- the sampler of a restarted search is seeded with ``seed + trials already in the study``:
  seeded as the first run was, it would propose that run's settings again;
- it ends with one line naming the best trial, its value, its settings, its folder and the
  command that trains it (``python -m rdl.train ...``).

Hydra loads sweepers from the ``hydra_plugins`` package only, hence this file's place.
"""
from __future__ import annotations

import logging
import shlex
from typing import Any

from omegaconf import DictConfig

try:
    from hydra_plugins.hydra_optuna_sweeper.optuna_sweeper import OptunaSweeper
except ImportError:  # the optuna extra is not installed: no plugin here (Hydra scans this)
    OptunaSweeper = None

log = logging.getLogger(__name__)

#: the study attribute holding each trial's run folder, ``DIR_ATTR + str(trial number)``
DIR_ATTR = "rdl_dir_"


def train_command(task_overrides: list[str], params: dict[str, Any]) -> str:
    """``python -m rdl.train`` with the search's own overrides, each searched setting set to
    ``params``' value (the search config stays: outside ``-m`` it only picks the task)."""
    keys = {k.lstrip("+~") for k in params}
    kept = [o for o in task_overrides if o.split("=", 1)[0].lstrip("+~") not in keys]
    return " ".join(["python -m rdl.train", *map(shlex.quote, kept),
                     *(shlex.quote(f"{k}={v}") for k, v in params.items())])


def best_line(study, monitor: str, task_overrides: list[str]) -> str:
    """The line a search ends with: the best trial, its value, settings, folder, command."""
    best = study.best_trial
    finished = sum(t.state.is_finished() for t in study.get_trials(deepcopy=False))
    settings = " ".join(f"{k}={v}" for k, v in best.params.items())
    where = study.user_attrs.get(f"{DIR_ATTR}{best.number}", "(folder not recorded)")
    return (f"best trial {best.number} of {finished} (study {study.study_name}): "
            f"{monitor}={best.value} with {settings} in {where}; train it: "
            f"{train_command(task_overrides, best.params)}")


if OptunaSweeper is not None:
    class RdlOptunaSweeper(OptunaSweeper):
        """Hydra's Optuna sweeper, resumable as the module says, ending with the best
        trial's line."""

        def setup(self, *, hydra_context, task_function, config: DictConfig) -> None:
            super().setup(hydra_context=hydra_context, task_function=task_function,
                          config=config)
            self.config = config

        def sweep(self, arguments: list[str]) -> None:
            import optuna
            from hydra.utils import instantiate
            from optuna.storages import InMemoryStorage

            impl = self.sweeper
            # An in-memory study is held here, so that it can be read after the sweep.
            if impl.storage is None:
                impl.storage = InMemoryStorage()
            if impl.study_name is None:
                impl.study_name = "rdl"
            study = optuna.create_study(study_name=impl.study_name, storage=impl.storage,
                                        directions=impl._get_directions(),
                                        load_if_exists=True)
            before = study.get_trials(deepcopy=False)
            done = sum(t.state.is_finished() for t in before)
            impl.n_trials = max(0, impl.n_trials - done)
            impl.job_idx = len(before)  # run folders named after trial numbers
            sampler = self.config.hydra.sweeper.sampler
            if before and sampler.get("seed") is not None and not sampler.get("_partial_"):
                impl.sampler = instantiate(sampler, seed=sampler.seed + len(before))
            if before:
                log.info("study %s: %d trials finished, %d to go", impl.study_name, done,
                         impl.n_trials)

            dirs: dict[int, str] = {}
            launch = impl.launcher.launch

            def launch_and_record(job_overrides, initial_job_idx):
                returns = launch(job_overrides, initial_job_idx=initial_job_idx)
                for i, ret in enumerate(returns):
                    if ret.hydra_cfg is not None:
                        dirs[initial_job_idx + i] = ret.hydra_cfg.hydra.runtime.output_dir
                return returns

            impl.launcher.launch = launch_and_record
            if impl.n_trials > 0:
                impl.sweep(arguments)
            study = optuna.load_study(study_name=impl.study_name, storage=impl.storage)
            for number, path in dirs.items():
                study.set_user_attr(f"{DIR_ATTR}{number}", str(path))
            task = self.config.get("task") or {}
            monitor = f"val/{task.get('monitor')}" if task.get("monitor") else "value"
            line = best_line(study, monitor, list(self.config.hydra.overrides.task))
            print(line, flush=True)
