"""Several processes: ``python -m rdl.train trainer=ddp`` with 2 gloo CPU processes evaluates
exactly as one process (rdl's loaders deal out the batches themselves, each row scored once);
and, for loaders built by hand, Lightning's distributed-sampler injection re-creates PyG's
NodeLoader and LinkLoader over rdl's TemporalSampler with a ``DistributedSampler``: every
rank must get its own disjoint share of the seeds, and valid time-respecting batches."""
from __future__ import annotations

import json
from pathlib import Path

from omegaconf import OmegaConf

import pytest
import pytorch_lightning as pl
import torch
from lightning_fabric.utilities.data import _replace_dunder_methods
from pytorch_lightning.trainer.states import RunningStage
from pytorch_lightning.utilities.data import _update_dataloader
from torch.utils.data import DataLoader, DistributedSampler
from torch_geometric.data import HeteroData
from torch_geometric.loader import LinkLoader, NodeLoader
from torch_geometric.sampler import NegativeSampling

from rdl.graph import TemporalSampler
from rdl.predict import predict
from rdl.training.batches import DealtBatches, EpochShuffle, batches
from rdl.graph.transforms import AttachTarget
from rdl.graph.link_sampling import KeepArgsLinkLoader
from tests.conftest import task_overrides

#: a parameter that needs a GPU (`pytest -m cuda`, benchmarks/gpu.sh)
CUDA_ONLY = [pytest.mark.cuda,
             pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")]

N_SEEDS = 48  # a multiple of the world size: DistributedSampler pads nothing
BATCH = 8
LINK = ("customer", "buys", "article")  # a link-task edge type, not one of the graph


def tiny_graph(seed: int = 0) -> HeteroData:
    """customer / article (static) and timed transactions between them, as rdl builds."""
    g = torch.Generator().manual_seed(seed)
    n_c, n_a, n_t = 12, 9, 150
    d = HeteroData()
    for t, n in (("customer", n_c), ("article", n_a), ("transactions", n_t)):
        d[t].num_nodes = n
        d[t].x = torch.arange(n, dtype=torch.float).view(-1, 1)
    d["transactions"].time = torch.randint(0, 100, (n_t,), generator=g)
    tx = torch.arange(n_t)
    for parent, n in (("customer", n_c), ("article", n_a)):
        p = torch.randint(0, n, (n_t,), generator=g)
        d["transactions", f"f2p_{parent}_id", parent].edge_index = torch.stack([tx, p])
        d[parent, f"rev_f2p_{parent}_id", "transactions"].edge_index = torch.stack([p, tx])
    return d


def seeds(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 12, (N_SEEDS,), generator=g),   # customers
            torch.randint(0, 9, (N_SEEDS,), generator=g),    # articles (link dst)
            torch.randint(0, 110, (N_SEEDS,), generator=g))  # seed times


def make_loader(kind: str, data: HeteroData, num_workers: int = 0, shuffle: bool = True,
                device: str = "cpu"):
    """The loaders as :class:`rdl.training.datamodule.RelDataModule` builds them."""
    src, dst, time = seeds()
    sampler = TemporalSampler(data, [4, 2], random_seed=0, device=device)
    kw = dict(batch_size=BATCH, shuffle=shuffle, num_workers=num_workers,
              persistent_workers=num_workers > 0, filter_per_worker=num_workers > 0)
    if kind == "node":
        target = torch.arange(N_SEEDS, dtype=torch.float) * 10
        return NodeLoader(data, node_sampler=sampler, input_nodes=("customer", src),
                          input_time=time, transform=AttachTarget("customer", target), **kw)
    return LinkLoader(data, link_sampler=sampler, edge_label_index=(LINK, torch.stack([src, dst])),
                      edge_label_time=time, neg_sampling=NegativeSampling("binary", 1), **kw)


def check_batch(kind: str, batch: HeteroData, data: HeteroData) -> list[int]:
    """A valid, time-respecting batch of the right seeds; returns its input ids."""
    batch = batch.to("cpu")
    src, dst, time = seeds()
    if kind == "node":
        store = batch["customer"]
        iid, bs = store.input_id, store.batch_size
        assert torch.equal(store.n_id[:bs], src[iid]) and torch.equal(store.seed_time, time[iid])
        assert torch.equal(store.y, iid.float() * 10)  # the transform ran on the new loader
        seed_time = store.seed_time
    else:
        iid = batch[LINK].input_id
        eli, seed_time = batch[LINK].edge_label_index, batch[LINK].edge_label_time
        n = iid.numel()
        assert torch.equal(batch["customer"].n_id[eli[0, :n]], src[iid])
        assert torch.equal(batch["article"].n_id[eli[1, :n]], dst[iid])
        assert torch.equal(seed_time, time[iid].repeat(2))
        assert batch[LINK].edge_label.tolist() == [1.0] * n + [0.0] * n
    tx = batch["transactions"]
    assert (data["transactions"].time[tx.n_id] <= seed_time[tx.batch]).all()
    for et in batch.edge_types:
        if et == LINK:
            continue
        s, _, t = et
        ei = batch[et].edge_index
        g = data[et].edge_index[:, batch[et].e_id]
        assert torch.equal(batch[s].n_id[ei[0]], g[0]) and torch.equal(batch[t].n_id[ei[1]], g[1])
    return iid.tolist()


def check_shares(per_rank: list[list[int]]):
    """Disjoint shares of equal size that together cover every seed once."""
    assert len(per_rank[0]) == len(per_rank[1]) == N_SEEDS // 2
    assert sorted(per_rank[0] + per_rank[1]) == list(range(N_SEEDS))


# --------------------------------------------------------------------------- #
# Lightning's injection helper, one process playing both ranks (fast)
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("kind", ["node", "link"])
@pytest.mark.parametrize("num_workers,device", [
    (0, "cpu"),
    (2, "cpu"),
    pytest.param(0, "cuda", marks=CUDA_ONLY),
])
def test_injected_distributed_sampler(kind, num_workers, device):
    """What the Trainer does to a ``*_dataloader`` hook's loader: create it under
    ``_replace_dunder_methods`` (init arguments recorded), then ``_update_dataloader``
    with a DistributedSampler per rank."""
    data = tiny_graph()
    with _replace_dunder_methods(DataLoader, "dataset"):
        loader = make_loader(kind, data, num_workers=num_workers, device=device)
    new, samplers = [], []
    for rank in (0, 1):
        ds = DistributedSampler(loader.dataset, num_replicas=2, rank=rank, shuffle=True, seed=3)
        new.append(_update_dataloader(loader, ds, mode=RunningStage.TRAINING))
        samplers.append(ds)
        assert type(new[-1]) is type(loader) and new[-1].sampler is ds
        assert (new[-1].node_sampler if kind == "node" else new[-1].link_sampler) is (
            loader.node_sampler if kind == "node" else loader.link_sampler)
    epochs = []
    try:
        for epoch in (0, 1):  # what the Trainer does: set_epoch, then iterate every rank
            shares = []
            for dl, ds in zip(new, samplers):
                ds.set_epoch(epoch)
                shares.append([i for b in dl for i in check_batch(kind, b, data)])
            check_shares(shares)
            epochs.append(shares)
    finally:
        for dl in new:  # shut persistent workers down now (see tests/graph/sampling.workers_closed)
            it, dl._iterator = dl._iterator, None
            del it
    assert epochs[0][0] != epochs[1][0]  # reshuffled across epochs


def test_injection_without_recorded_arguments():
    """A NodeLoader built outside a hook (Lightning falls back on its attributes)."""
    data = tiny_graph()
    loader = make_loader("node", data)
    shares = []
    for rank in (0, 1):
        ds = DistributedSampler(loader.dataset, num_replicas=2, rank=rank, shuffle=False)
        new = _update_dataloader(loader, ds, mode=RunningStage.VALIDATING)
        shares.append([i for b in new for i in check_batch("node", b, data)])
    check_shares(shares)


def test_link_loader_built_outside_a_hook():
    data = tiny_graph()
    src, dst, time = seeds()
    loader = KeepArgsLinkLoader(data, link_sampler=TemporalSampler(data, [4, 2], random_seed=0),
                                edge_label_index=(LINK, torch.stack([src, dst])),
                                edge_label_time=time, neg_sampling=NegativeSampling("binary", 1),
                                batch_size=BATCH)
    shares = []
    for rank in (0, 1):
        ds = DistributedSampler(loader.dataset, num_replicas=2, rank=rank, shuffle=False)
        new = _update_dataloader(loader, ds, mode=RunningStage.VALIDATING)
        assert torch.equal(new.input_data.time, time)
        shares.append([i for b in new for i in check_batch("link", b, data)])
    check_shares(shares)


# --------------------------------------------------------------------------- #
# The real Trainer: 2 CPU processes (ddp_spawn, gloo)
# --------------------------------------------------------------------------- #
class Recorder(pl.LightningModule):
    """Trains a linear layer on the seed features and records the input ids it sees."""

    def __init__(self, kind: str, out_dir: str, num_workers: int):
        super().__init__()
        self.kind, self.out_dir, self.num_workers = kind, out_dir, num_workers
        self.lin = torch.nn.Linear(1, 1)
        self.data = tiny_graph()
        self.seen = {"train": {}, "val": []}

    def train_dataloader(self):
        return make_loader(self.kind, self.data, num_workers=self.num_workers)

    def val_dataloader(self):
        return make_loader(self.kind, self.data, shuffle=False)

    def training_step(self, batch, batch_idx):
        ids = check_batch(self.kind, batch, self.data)
        self.seen["train"].setdefault(self.current_epoch, []).extend(ids)
        return self.lin(batch["customer"].x).mean()

    def validation_step(self, batch, batch_idx):
        if not self.trainer.sanity_checking:
            self.seen["val"].extend(check_batch(self.kind, batch, self.data))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def on_fit_end(self):
        out = Path(self.out_dir) / f"rank{self.global_rank}.json"
        out.write_text(json.dumps({"world": self.trainer.world_size, **self.seen}))


@pytest.mark.parametrize("kind,num_workers", [
    pytest.param("node", 1, marks=pytest.mark.slow),  # spawned loader workers: 15 s of CI
    ("link", 0)])
def test_trainer_ddp_gives_each_rank_its_share(tmp_path, kind, num_workers):
    """Two ranks on the CPU.  Under ddp_spawn the loader workers are spawned too: the
    loader (sampler included) is pickled into them, and each re-imports torch (slow)."""
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", max_epochs=2,
                         num_sanity_val_steps=0, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         default_root_dir=tmp_path)
    trainer.fit(Recorder(kind, str(tmp_path), num_workers))
    runs = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in runs] == [2, 2]
    for epoch in ("0", "1"):
        check_shares([r["train"][epoch] for r in runs])
    assert runs[0]["train"]["0"] != runs[0]["train"]["1"]  # set_epoch reshuffles
    # Validation (2 epochs, not shuffled): each rank sees its half twice.
    check_shares([r["val"][: N_SEEDS // 2] for r in runs])
    assert all(r["val"][: N_SEEDS // 2] == r["val"][N_SEEDS // 2:] for r in runs)


# --------------------------------------------------------------------------- #
# rdl.train with 2 processes (trainer=ddp, gloo on the CPU)
# --------------------------------------------------------------------------- #
def test_each_process_gets_its_share():
    """Training: equal shares of one permutation (padded by repetition, every process takes
    the same number of steps); evaluation: the batches of one process's pass, dealt out."""
    shares = [list(EpochShuffle(11, random_seed=5, rank=r, world=3)) for r in range(3)]
    assert [len(s) for s in shares] == [4, 4, 4]
    assert set(sum(shares, [])) == set(range(11))  # 12 slots: one seed twice
    one = list(batches(79, 16, shuffle=False))
    dealt = [batches(79, 16, shuffle=False, rank=r, world=2) for r in (0, 1)]
    assert all(isinstance(d, DealtBatches) for d in dealt)
    assert [len(d) for d in dealt] == [3, 2] == [len(list(d)) for d in dealt]
    assert list(dealt[0]) == one[0::2] and list(dealt[1]) == one[1::2]


# The node and the link task; batches of 16: each split has more batches than processes.
DDP = ("trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2",
       "trainer.limit_val_batches=1.0", "data.eval_batch_size=16", "compile.enabled=false")


@pytest.mark.parametrize("task", ["user-churn", "user-item-purchase"])
def test_two_processes_evaluate_as_one(tmp_path, run_train, rdl_cache, task):
    """2 gloo processes through ``python -m rdl.train``: they train, the second takes what
    the first prepared instead of preparing it again, and their val and test metrics equal
    one process's scoring of the same checkpoint (``rdl.predict``)."""
    run = tmp_path / "run"
    out = run_train(run, *task_overrides(task), *DDP)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((run / "metrics.json").read_text())
    logs = (run / "train_ddp_process_1.log").read_text()
    assert "prepared data read from" in logs and "LightGBM" not in logs
    assert not list(run.glob(".prepared-*"))  # removed once every process has read it
    ckpt = run / "checkpoints" / "best.ckpt"
    for split in ("val", "test"):
        cfg = OmegaConf.create({"ckpt_path": str(ckpt), "split": split, "format": "csv",
                                "output": str(tmp_path / f"{split}.csv"), "accelerator": "cpu",
                                "run": {"data": {"cache_dir": str(rdl_cache)}}})
        one = predict(cfg)[2]
        assert one.keys() == results["model"][split].keys()
        for metric, value in one.items():
            assert results["model"][split][metric] == pytest.approx(value, rel=1e-6), metric
