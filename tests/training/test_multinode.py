"""Several machines, played on one: two "nodes" of one process each on localhost (gloo),
started by ``torchrun --nnodes 2 --node_rank {0,1}`` (Lightning's TorchElasticEnvironment)
or with the variables ``srun`` sets (Lightning's SLURMEnvironment), train ``task=user-churn
data=hm-tiny`` as the two processes of one machine do, read what the first process
prepared, and evaluate as one process scores their checkpoint."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rdl.predict import predict
from rdl.prepared_cache import DATA
from rdl.preparation import first_process, local_rank, node_rank
from tests.conftest import SHORT, TINY

#: the model's own training decides its metrics (no tree prior to start from); evaluation
#: in batches of 16, every row
DDP = ("task=user-churn", "data.tree_prior=false", "trainer=ddp", "trainer.accelerator=cpu",
       "trainer.limit_val_batches=1.0", "data.eval_batch_size=16", "compile.enabled=false")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(run) -> dict:
    return json.loads((run / "metrics.json").read_text())["model"]


@pytest.mark.parametrize("env,ranks", [
    ({}, (0, 0)),
    ({"LOCAL_RANK": "1"}, (1, 0)),                                  # Lightning's 2nd process
    ({"LOCAL_RANK": "0", "GROUP_RANK": "1"}, (0, 1)),               # torchrun, 2nd machine
    ({"LOCAL_RANK": "1", "NODE_RANK": "0"}, (1, 0)),                # Lightning, NODE_RANK set
    ({"SLURM_LOCALID": "3", "SLURM_NODEID": "0"}, (3, 0)),          # srun, 4th task
    ({"SLURM_LOCALID": "0", "SLURM_NODEID": "2"}, (0, 2)),          # srun, 3rd machine
    ({"LOCAL_RANK": "0", "SLURM_LOCALID": "5"}, (0, 0)),            # Lightning's own under Slurm
])
def test_only_the_first_process_of_all_prepares(monkeypatch, env, ranks):
    for name in ("LOCAL_RANK", "SLURM_LOCALID", "GROUP_RANK", "NODE_RANK", "SLURM_NODEID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert (local_rank(), node_rank()) == ranks
    assert first_process() == (ranks == (0, 0))


@pytest.fixture(scope="module")
def one_machine(run_train, tmp_path_factory) -> dict:
    """The two processes of one machine (Lightning starts the second): the reference."""
    run = tmp_path_factory.mktemp("one-machine")
    out = run_train(run, *DDP, "trainer.devices=2")
    assert out.returncode == 0, out.stderr[-3000:]
    return metrics(run)


def node_command(launcher: str, rank: int, port: int, run) -> tuple[list[str], dict]:
    """Node ``rank``'s command and environment: ``torchrun`` (Lightning's
    TorchElasticEnvironment), or what ``srun`` sets for a task of a 2-node job with one task
    per node (Lightning's SLURMEnvironment; no Slurm here, so the variables are set by hand)."""
    train = ["-m", "rdl.train", f"hydra.run.dir={run}", f"hydra.job.name=node{rank}", *TINY,
             *SHORT, *DDP, "trainer.devices=1", "trainer.num_nodes=2"]
    if launcher == "torchrun":
        return ([sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank",
                 str(rank), "--nproc-per-node", "1", "--master_addr", "127.0.0.1",
                 "--master_port", str(port), *train], {})
    slurm = {"SLURM_NTASKS": "2", "SLURM_NTASKS_PER_NODE": "1", "SLURM_PROCID": str(rank),
             "SLURM_LOCALID": "0", "SLURM_NODEID": str(rank), "SLURM_NODELIST": "127.0.0.1",
             "SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "rdl", "MASTER_PORT": str(port)}
    return [sys.executable, *train], slurm


@pytest.mark.slow  # two DDP runs and the reference's: about a minute each on 2 cores
@pytest.mark.parametrize("launcher", ["torchrun", "srun"])
def test_two_nodes_train_and_evaluate_as_one_machine(tmp_path, rdl_cache, one_machine,
                                                     launcher):
    run, port = tmp_path / "nodes", free_port()
    env = {**os.environ, "RDL_CACHE": str(rdl_cache), "OMP_NUM_THREADS": "1"}
    for name in [k for k in env if k.startswith(("SLURM_", "TORCHELASTIC_"))]:
        del env[name]
    nodes = []
    for rank in (0, 1):
        command, own = node_command(launcher, rank, port, run)
        nodes.append(subprocess.Popen(command, env={**env, **own}, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = [node.communicate(timeout=900)[0] for node in nodes]
    for node, output in zip(nodes, outputs):
        assert node.returncode == 0, output[-3000:]
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in outputs[1]
    if launcher == "srun":
        assert "SLURM auto-requeueing enabled" in outputs[0]  # SLURMEnvironment's own line
    # the second node read what the first prepared (one LightGBM fit, one set of tables)
    second = (run / "node1.log").read_text()
    assert "prepared data read from" in second and "LightGBM" not in second
    assert not list(run.glob(".prepared-*"))
    two_nodes = metrics(run)

    # they train as the two processes of one machine do
    for split in ("val", "test"):
        assert two_nodes[split] == pytest.approx(one_machine[split], rel=1e-6), split

    # and one process scores the nodes' checkpoint as they did (rdl.predict)
    for split in ("val", "test"):
        cfg = OmegaConf.create({"ckpt_path": str(run / "checkpoints" / "best.ckpt"),
                                "split": split, "format": "csv", "accelerator": "cpu",
                                "output": str(tmp_path / f"{split}.csv"),
                                "run": {"data": {"cache_dir": str(rdl_cache)}}})
        one = predict(cfg)[2]
        assert one.keys() == two_nodes[split].keys()
        for metric, value in one.items():
            assert two_nodes[split][metric] == pytest.approx(value, rel=1e-6), metric
    print(f"\n{launcher}, two nodes: {two_nodes}\none machine: {one_machine}")


#: a node task with its tree fits, prior and seed features: all that the prepared cache keeps
CACHED = ("task=user-churn", "compile.enabled=false", "data.eval_batch_size=16")


def files(folder: Path) -> dict:
    """Each file under ``folder``: its modification time, inode and size."""
    return {str(p): (s.st_mtime_ns, s.st_ino, s.st_size) for p in folder.rglob("*")
            if p.is_file() and (s := p.stat())}


@pytest.mark.slow  # a run that fills the cache, then two DDP nodes: about 2 minutes on 2 cores
def test_two_nodes_map_one_cache_entry_and_write_nothing(tmp_path, run_train):
    """Two "nodes" started as Lightning starts a machine's processes itself (``NODE_RANK``,
    ``MASTER_ADDR``), sharing a cache a first run filled: both map the one prepared-data
    entry and the graph's files (their pages in each process's ``/proc/<pid>/maps``), no
    process writes, replaces or copies a file of the cache, and no copy of the prepared
    data appears in the run's folder or the processes' temporary folder."""
    cache, tmp, run = tmp_path / "cache", tmp_path / "tmp", tmp_path / "nodes"
    tmp.mkdir()
    first = run_train(tmp_path / "first", *CACHED, env={"RDL_CACHE": str(cache)})
    assert first.returncode == 0, first.stderr[-3000:]
    (entry,) = (cache / "prepared").iterdir()
    data, graph = entry / DATA, sorted((cache / "graphs").glob("graph-*/*.pt"))
    before = files(cache)

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(
        ("SLURM_", "TORCHELASTIC_", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK"))}
    env.update(RDL_CACHE=str(cache), TMPDIR=str(tmp), OMP_NUM_THREADS="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    nodes, outputs = [], [tmp_path / f"node{rank}.out" for rank in (0, 1)]
    for rank in (0, 1):
        command = [sys.executable, "-m", "rdl.train", f"hydra.run.dir={run}",
                   f"hydra.job.name=node{rank}", *TINY, *SHORT, *CACHED, "trainer=ddp",
                   "trainer.accelerator=cpu", "trainer.devices=1", "trainer.num_nodes=2"]
        with open(outputs[rank], "w") as out:
            nodes.append(subprocess.Popen(command, env={**env, "NODE_RANK": str(rank)},
                                          stdout=out, stderr=subprocess.STDOUT))
    seen = [set(), set()]   # the cache's files each process maps
    start = time.monotonic()
    while any(node.poll() is None for node in nodes) and time.monotonic() - start < 900:
        for rank, node in enumerate(nodes):
            try:
                maps = Path(f"/proc/{node.pid}/maps").read_text()
            except OSError:   # ended
                continue
            seen[rank] |= {f for f in (data, *graph) if f" {f}\n" in maps}
        time.sleep(0.2)
    for node, output in zip(nodes, outputs):
        if node.poll() is None:   # past the time limit
            node.kill()
        assert node.wait() == 0, output.read_text()[-3000:]
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in outputs[1].read_text()
    for rank in (0, 1):
        log = (run / f"node{rank}.log").read_text()
        assert "prepared data read from the cache: " in log, rank
        assert f"; {entry} (mapped)" in log, rank
        assert "prepared data computed" not in log and "graph build" not in log, rank
        assert data in seen[rank] and set(graph) <= seen[rank], (rank, seen[rank])
    assert files(cache) == before   # nothing written, replaced or added
    size = data.stat().st_size
    copies = [p for p in (*run.rglob("*"), *tmp.rglob("*"))
              if p.is_file() and (".prepared" in p.name or p.stat().st_size == size)]
    assert copies == []
