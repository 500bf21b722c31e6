"""rdl's checkpoints: each carries the composed config it was trained with (under
:data:`CONFIG_KEY` in Lightning's hyper-parameters), so that ``rdl.predict`` and a resumed
``rdl.train`` need nothing else."""
from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from rdl.safe_load import UntrustedFile, load

#: the key of the composed config in a checkpoint's hyper-parameters
CONFIG_KEY = "rdl_config"


def checked_resume(cfg: DictConfig) -> str | None:
    """``cfg.ckpt_path`` if it names a checkpoint of this task, before any heavy work."""
    path = cfg.get("ckpt_path")
    if path is None:
        return None
    saved = load_config(path, trust=bool(cfg.get("trust_checkpoint")))
    if saved["task"]["name"] != cfg.task.name:
        raise ValueError(f"ckpt_path {path}: a checkpoint of task {saved['task']['name']!r}, "
                         f"not of {cfg.task.name!r}")
    return str(path)


def load_config(path, trust: bool = False) -> dict:
    """The config a checkpoint was trained with (written by :func:`train`); a clear error
    if ``path`` is no file, no checkpoint, or not one of rdl's."""
    return read_checkpoint(path, trust)[0]


def read_checkpoint(path, trust: bool = False) -> tuple[dict, dict]:
    """``(config, checkpoint)`` of an rdl checkpoint, with :func:`load_config`'s errors. Read
    with torch's weights-only unpickler (:func:`rdl.safe_load.load`) unless ``trust``: a
    checkpoint holding other objects is refused (:class:`~rdl.safe_load.UntrustedFile`)
    and nothing of it runs."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"ckpt_path {path}: no such file")
    try:
        ckpt = load(p, "ckpt_path", trust)
    except UntrustedFile:
        raise
    except Exception as e:  # a truncated or foreign file: torch's own message says why
        raise ValueError(f"ckpt_path {path}: not a readable checkpoint ({e})") from None
    config = (ckpt.get("hyper_parameters") or {}).get(CONFIG_KEY) if isinstance(ckpt, dict) else None
    if config is None:
        raise ValueError(f"ckpt_path {path}: not a checkpoint written by rdl.train (no config in it)")
    return config, ckpt


