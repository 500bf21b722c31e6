"""The link family: each seed's label is a list of rows of a target table, which the model
ranks (RelBench's recommendation)."""
from __future__ import annotations

import logging

from rdl.baselines.link import link_baselines, pad_lists
from rdl.baselines.scoring import score_tensors
from rdl.families.family import Family, original_ids, scored_rows
from rdl.families.link.blend import blended, cached_fit
from rdl.families.link.data import LinkDataModule
from rdl.families.link.module import LinkTaskModule
from rdl.families.link.task import LinkTask, RelBenchLinkTask
from rdl.tasks.paths import schema_path
from rdl.nn.interface import LinkPredictor
from rdl.prepared_cache import entry_of, shared
from rdl.preparation import (Prepared, build_graph, graph_database, graph_stypes, split_tables,
                             task_database)

log = logging.getLogger("rdl.train")


class LinkPrepared(Prepared):
    """What a link task prepares: :class:`~rdl.preparation.Prepared`'s, and the model's
    arguments of the link's two ends."""

    def model_kwargs(self) -> dict:
        task = self.task
        return dict(super().model_kwargs(), src_table=task.entity_table,
                    dst_table=task.target_table,
                    num_dst_nodes=self.data[task.target_table].num_nodes)


class LinkFamily(Family):
    name = "link"
    task = LinkTask
    relbench_task = RelBenchLinkTask
    predictor = LinkPredictor
    models = "model=contextgnn, context-transformer, idgnn or two-tower"
    data_module_class = LinkDataModule

    def check(self, settings, task):
        if settings.buckets:
            raise ValueError(f"data.buckets: static-shape buckets pad node-task batches; task "
                             f"{task.name!r} is link prediction (set data.buckets=null)")

    def check_schema(self, settings, task, db, model_cls):
        hops, path = len(settings.num_neighbors), schema_path(db, task.entity_table,
                                                              task.target_table)
        if path is None or len(path) - 1 <= hops:
            return
        reach = (f"model.num_layers={len(path) - 1} with {len(path) - 1} fan-outs in "
                 "data.num_neighbors")
        if getattr(model_cls, "scores_in_subgraph_only", False):
            raise ValueError(
                f"model {model_cls.__name__} scores only the rows of {task.target_table!r} in "
                f"a seed's sampled subgraph, {hops} hops from {task.entity_table!r} "
                f"(model.num_layers, data.num_neighbors); {task.target_table!r} is "
                f"{len(path) - 1} hops away ({' - '.join(path)}), so it would score none of "
                f"them: {reach}, or model=contextgnn (it scores every row)")
        # a chained schema (customers, invoices, lines, stocks): the pair scores see no
        # target; on H&M's purchases so chained the model alone found half as much with two
        # layers, as much as unchained with three (docs/results.md, "Chained entities")
        log.warning("task %s: %r lies %d hops from %r (%s), beyond the model's %d layers: it "
                    "scores them without a seed's context of them; %s reaches them", task.name,
                    task.target_table, len(path) - 1, task.entity_table, " - ".join(path), hops,
                    reach)

    def prepare(self, task, db, settings, shared_path=None):
        db = task_database(task, db, settings)
        stypes = graph_stypes(db, settings)
        entry = entry_of(task, db, settings)
        tables = shared(task, db, settings,
                        lambda: {"tables": split_tables(task, db, settings.now)},
                        shared_path=shared_path, entry=entry)["tables"]
        data, col_stats = build_graph(task, db, lambda: graph_database(task, db, settings)[0],
                                      stypes, settings,
                                      digest=None if entry is None else entry.name)
        return LinkPrepared(task, db, tables, data, col_stats)

    def task_module(self, model, data, **common):
        return LinkTaskModule(model, data.task,
                              num_dst_nodes=data.model_kwargs()["num_dst_nodes"], **common)

    def evaluate(self, trainer, module, data, ckpt, settings=None, **load):
        alone = super().evaluate(trainer, module, data, ckpt, settings, **load)
        weights = list((settings or {}).get("ranker_blend") or [])
        if data.settings.ranker is None or not weights:
            return alone
        if trainer.world_size > 1:
            log.warning("evaluation.ranker_blend: the model on the ranker's candidates is "
                        "scored in single-process runs; this run reports the model alone")
            return alone
        # the model on the LightGBM ranker's candidates, the weight of each chosen on val
        return blended(module, data, trainer, ckpt, alone, weights, scored_rows(trainer, data))

    def baselines(self, data, rows):
        out = link_baselines(data.task, data.tables, rows=rows)
        if data.settings.ranker is not None:
            out.update(cached_fit(data, rows).metrics())
        return out

    def predictions(self, data, split, pred, labelled):
        """The top k target rows of each seed, best first, as the files' keys."""
        task, top = data.task, pred.numpy()
        ids = original_ids(data.db, task.target_table, top.reshape(-1)).reshape(top.shape)
        truth = pad_lists(data.tables[split][task.target_col].map(list).tolist(), 1)
        return {task.target_col: list(ids)}, score_tensors(task, pred, truth) if labelled else {}
