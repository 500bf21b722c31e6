"""How much of its correction of its prior a node model keeps, chosen on val.

With a prior (a baseline chosen on val, :mod:`rdl.families.node.prior_choice`: LightGBM
or a simple one) a node model's output is a correction of it
(:class:`~rdl.families.node.module.NodeTaskModule`): training fits the correction on train
and chooses its checkpoint on val. Where the correction does not carry over to new weeks
(on the binary tasks of docs/results.md the best checkpoint was still below its own prior
on val) the model would print a score below the baseline it starts from. So, after
training, the correction is scaled by the factor of ``evaluation.correction_scales`` whose
val score is best (1: as trained, 0: the prior alone), the first one unless another is
strictly better: a blend of model and prior fitted on val, as the checkpoint is. Every factor's val
score, and the test scores of the one kept and of 1, go to metrics.json (test scores are
reported, never used to choose).

Written here, not as a Lightning callback: the choice runs Lightning's validation loop
once per factor, which a callback cannot call from inside a loop.
"""
from __future__ import annotations

import logging

from pytorch_lightning.utilities import rank_zero_only

from rdl.families.family import scores

log = logging.getLogger("rdl.train")


def scaled_on_val(trainer, module, data, ckpt: str | None, scales, **load) -> dict:
    """The model's entry in the results (:meth:`rdl.families.family.Family.evaluate`) with
    the correction of ``module`` scaled by the factor of ``scales`` best on val, and
    ``"correction": {"scale": s, "by_scale": {s: {"val": ..., "test": ...}}}``: every
    factor's val scores, and the test scores of the one kept and of 1 (as trained, the
    model's before scaling, there whether ``scales`` holds it or not); the factor is saved
    into ``ckpt`` (the best checkpoint) for ``rdl.predict``."""
    key, higher = f"val/{data.task.monitor}", data.task.monitor_mode != "min"
    run = dict(datamodule=data, verbose=False)
    # The best weights loaded once, scored at 1 (the factor is not read from a checkpoint:
    # training and its validations always run at 1), then every other factor on them.
    module.correction_scale = 1.0
    val = {1.0: trainer.validate(module, ckpt_path=ckpt, **run, **load)[0]}
    best = None
    for s in map(float, scales):
        if s not in val:
            module.correction_scale = s
            val[s] = trainer.validate(module, **run)[0]
        if best is None or (val[s][key] > val[best][key] if higher
                            else val[s][key] < val[best][key]):
            best = s
    test = {}
    for s in dict.fromkeys((best, 1.0)):
        module.correction_scale = s
        test[s] = trainer.test(module, **run)[0]
    module.correction_scale = best
    if ckpt:  # every process saves (Lightning writes on the first only)
        trainer.save_checkpoint(ckpt, weights_only=False)
    rank_zero_only(log.info)(   # every rank chose the same factor: one line says it
        "the correction of the prior (%s) scaled by %g, the best on val of %s (%s: %s)",
        getattr(data, "prior_name", None), best,
        ", ".join(f"{s:g}" for s in map(float, scales)), key,
        ", ".join(f"{val[s][key]:.4f}" for s in map(float, scales)))
    table = {f"{s:g}": {split: m for split, m in scores(v, test.get(s, {})).items() if m}
             for s, v in val.items()}
    return {**table[f"{best:g}"], "correction": {"scale": best, "by_scale": table}}
