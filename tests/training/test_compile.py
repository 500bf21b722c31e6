"""The compiled path: every model compiles in one graph (``fullgraph=True``), shapes that
vary from batch to batch (empty node types, single rows included) never recompile it,
nor does a changing learning rate; padding changes no output."""
from __future__ import annotations

import functools
import itertools
import re

import pandas as pd
import pytest
import torch
from torch._dynamo.utils import counters
from torch_geometric.loader import NodeLoader

from rdl.graph.build import to_seconds
from rdl.api import build
from rdl.training import schedules
from rdl.graph.transforms import PAD
from rdl.training.compile import compile_optimizer_step
from rdl.training.batches import SeedBatches
from rdl.training.buckets import BucketSettings
from rdl.training.module import TaskModule
from rdl.training.shapes import Buckets, Exact, Padded, Tokens, pad_inputs

# user-churn/sage and contextgnn compile with fullgraph=True in the no-recompile test. Slow
# (a compile each, CI's budget): item-sales only changes user-churn's head, ID-GNN shares
# contextgnn's backbone, and two-tower (about 2 minutes) went to the slow tests when the
# label history made the node-model compiles in CI longer (CI took 13:51 to 15:45 on 2 cores)
MODELS = [pytest.param("item-sales", "sage", marks=pytest.mark.slow),
          pytest.param("user-item-purchase", "idgnn", marks=pytest.mark.slow),
          pytest.param("user-item-purchase", "two-tower", marks=pytest.mark.slow)]


def setup(tiny_cfg, task, model, *overrides):
    # evaluation compiled too: a tiny run's few batches would run it eager (compile.eval=auto)
    cfg = tiny_cfg(f"task={task}", f"model={model}", "compile.eval=true", *overrides)
    torch.manual_seed(0)
    return build(cfg)


def graphs() -> int:
    return int(counters["stats"]["unique_graphs"])


pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # tests/training/conftest.py


def train_step(module, batch, opt):
    loss, _ = module.step_loss(batch)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def eval_step(module, batch):
    with torch.no_grad():
        module.eval_step(batch, module.val_metrics)


def prepare_eval(module, dm, split="val"):
    if getattr(module.model, "embeds_candidates", False):   # two-tower
        module.trainer = type("T", (), {"datamodule": dm})()  # what embed_candidates reads
        module.embed_candidates(split)


@pytest.mark.parametrize("task,model", MODELS)
def test_every_model_compiles_in_one_graph(tiny_cfg, task, model):
    _, dm, module = setup(tiny_cfg, task, model, "+compile.kwargs.fullgraph=true")
    opt = torch.optim.Adam(module.model.parameters(), lr=torch.tensor(1e-3))
    module.train()
    loss = train_step(module, next(iter(dm.train_dataloader())), opt)
    assert torch.isfinite(loss)
    module.eval()
    with torch.no_grad():
        prepare_eval(module, dm)
        eval_step(module, next(iter(dm.val_dataloader())))
    assert not counters["graph_break"], dict(counters["graph_break"])
    assert graphs() >= 2  # fullgraph=True would have raised on a break


def odd_batches(dm) -> list:
    """Seeds whose subgraphs hold no transaction and no article (empty node and edge
    types), and seeds that see exactly one transaction in all."""
    task = dm.task
    tx = dm.db["transactions"].df
    first = tx.groupby("customer_id")["t_dat"].min()
    on_first = tx[tx["t_dat"] == tx["customer_id"].map(first)]["customer_id"].value_counts()
    one = int(on_first.index[on_first == 1][0])  # bought one article on their first day
    day = first[one]
    later = set(first.index[first <= day])
    others = [c for c in range(dm.data[task.entity_table].num_nodes) if c not in later][:31]
    first_day = tx["t_dat"].min()
    loader = functools.partial(NodeLoader, dm.data, node_sampler=dm.sampler,
                               transform=dm.transform("train"), batch_size=64)
    empty = loader(input_nodes=(task.entity_table, torch.tensor(others)),
                   input_time=to_seconds(pd.Series([first_day - pd.Timedelta(days=1)] * 31)))
    single = loader(input_nodes=(task.entity_table, torch.tensor([one] + others)),
                    input_time=to_seconds(pd.Series([day] * 32)))
    out = [next(iter(empty)), next(iter(single))]
    assert out[0]["transactions"].num_nodes == 0 and out[0]["article"].num_nodes == 0
    assert out[1]["transactions"].num_nodes == 1 and out[1]["article"].num_nodes == 1
    return out


@pytest.mark.parametrize("task,model,dynamic,extra", [
    ("user-churn", "sage", True, ()),
    # experiment=gpu's model ops: the tables' encoders stacked (row counts padded to a size
    # the host passes) and the fused layers, both with autograd Functions of rdl's own
    pytest.param("user-churn", "sage", True, ("launch_bound=true",),
                 marks=pytest.mark.slow),
    # the stacked encoders over chunks of rows: the number of chunks varies with the batch
    pytest.param("user-churn", "sage", True, ("launch_bound=true", "model.stacked_encoders=16"),
                 marks=pytest.mark.slow),
    # slow: more compiles than CI's 15 minutes on 2 cores hold (77 s for the link model on
    # a cold cache); run with -m slow
    pytest.param("user-item-purchase", "contextgnn", True, (), marks=pytest.mark.slow),
    pytest.param("user-churn", "graph-transformer", True, (), marks=pytest.mark.slow),
    # static shapes: token sets padded to the batch size, one row per token
    pytest.param("user-churn", "graph-transformer", False, (), marks=pytest.mark.slow)])
def test_no_recompiles_over_varying_batches(tiny_cfg, task, model, dynamic, extra):
    _, dm, module = setup(tiny_cfg, task, model, "+compile.kwargs.fullgraph=true",
                          f"compile.kwargs.dynamic={str(dynamic).lower()}", *extra)
    assert dm.shapes.static == (not dynamic) and module.shapes is dm.shapes
    opt = torch.optim.Adam(module.model.parameters(), lr=torch.tensor(1e-3), fused=True)
    module.train()
    loader, sizes, steps = dm.train_dataloader(), set(), 0
    while steps < 50:
        for batch in loader:
            train_step(module, batch, opt)
            sizes.add(tuple(batch[nt].num_nodes for nt in batch.node_types))
            steps += 1
            if steps == 2:
                warm = graphs()
    assert len(sizes) > 20, "the batches should vary in shape"
    assert graphs() == warm == 1, "training compiled more than once"
    if task == "user-churn":  # odd shapes: empty node and edge types, one node
        for batch in odd_batches(dm):
            train_step(module, batch, opt)
        assert graphs() == 1
    module.eval()
    for batch in dm.val_dataloader():
        eval_step(module, batch)
    assert graphs() == 2, "evaluation compiled more than once"
    assert not counters["graph_break"], dict(counters["graph_break"])


@pytest.mark.parametrize("task,model,extra,sizes", [
    ("user-churn", "sage", (), None),
    ("user-churn", "sage", ("launch_bound=true",), lambda rows: (max(rows) + 1,)),
    ("user-churn", "sage", ("launch_bound=true", "model.stacked_encoders=16"),
     lambda rows: tuple(r // 16 + 1 for r in rows)),
    ("user-churn", "graph-transformer", ("launch_bound=true",), lambda rows: (max(rows) + 1,)),
    ("user-item-purchase", "contextgnn", ("launch_bound=true",), lambda rows: (max(rows) + 1,)),
    ("user-item-purchase", "two-tower", ("launch_bound=true",), lambda rows: (max(rows) + 1,))],
    ids=["default", "stacked", "chunked", "tokens", "link", "two-tower"])
def test_stacked_encoders_get_their_padded_sizes_with_the_batch(tiny_cfg, task, model, extra,
                                                                 sizes):
    """The host decides the stacked encoders' padded sizes from the batch's tables (pad
    rows included) and passes them with the model's inputs, which every model takes."""
    _, dm, module = setup(tiny_cfg, task, model, *extra)
    batch = next(iter(dm.train_dataloader()))
    module.train()
    calls = []
    real = module.model.forward
    module.model.forward = lambda *a, **k: calls.append(k.get("stack_sizes")) or real(*a, **k)
    module.set_forward(module.model)   # eager: no compile here
    args, kwargs = module.inputs(batch)
    rows = [tf.num_rows for tf in args[0].values()]
    assert kwargs.get("stack_sizes") == (sizes and sizes(rows))
    loss, _ = module.step_loss(batch)
    loss.backward()
    assert calls and calls[0] == kwargs.get("stack_sizes")


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), ("launch_bound=true",),
                                   ("launch_bound=true", "model.stacked_encoders=16")],
                         ids=["default", "stacked", "chunked"])
def test_a_run_from_inductors_warm_cache_compiles_once(tiny_cfg, tmp_path, monkeypatch, extra):
    """What every second run on a machine does: the same model from Inductor's cache,
    then batches with empty node types and single rows, compiles once, as a cold run
    does. The stacked encoders (experiment=gpu's) recompiled here while the graph took
    the maximum of the tables' sizes itself (docs/compile.md, "A second run from
    Inductor's cache")."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    for run in ("cold", "warm"):
        torch._dynamo.reset()
        counters.clear()
        _, dm, module = setup(tiny_cfg, "user-churn", "sage", "+compile.kwargs.fullgraph=true",
                              *extra)
        opt = torch.optim.Adam(module.model.parameters(), lr=torch.tensor(1e-3), fused=True)
        module.train()
        for batch in [*itertools.islice(dm.train_dataloader(), 3), *odd_batches(dm)]:
            train_step(module, batch, opt)
        assert graphs() == 1, f"the {run} run compiled {graphs()} graphs"


@pytest.mark.parametrize("shapes", [Exact(), Padded()], ids=["exact", "padded"])
def test_distinct_rows_and_padding_change_no_output(tiny_cfg, shapes):
    """An eager run's batches have no pads (Exact); a compiled one's (Padded) have pad rows,
    nodes and edges that change no real output."""
    _, dm, module = setup(tiny_cfg, "user-churn", "sage", "compile.enabled=false")
    assert isinstance(dm.shapes, Exact) and module.shapes is dm.shapes
    dm = dm.with_shapes(shapes)
    module.shapes = shapes
    model = module.model.eval()
    batch = next(iter(dm.val_dataloader()))
    args, kwargs = module.inputs(batch)
    # The plain inputs: every node its own row (as PyG's loaders slice features), no pads
    # (a compiled run's loader put its pad nodes' edges, times and seeds after the real ones).
    article, pads = batch["article"], shapes.pad_rows
    n = {nt: batch[nt].num_nodes for nt in batch.node_types}
    plain = ({nt: dm.data[nt].tf[batch[nt].n_id] for nt in batch.node_types},
             {et: ei[:, :ei.size(1) - pads] for et, ei in batch.collect("edge_index").items()},
             {nt: batch[nt].time[:n[nt]] for nt in model.time_types},
             {nt: batch[nt].batch[:n[nt]] for nt in model.time_types},
             batch["customer"].seed_time)
    assert args[0]["article"].num_rows < article.num_nodes, "articles repeat across seeds"
    assert args[0]["article"].num_rows == article.n_id.unique().numel() + pads
    assert kwargs["row_dict"]["article"].numel() == article.num_nodes + pads
    edges = {et: plain[1][et].size(1) for et in plain[1]}
    assert {et: ei.size(1) for et, ei in args[1].items()} == (
        edges if pads == 0 else {et: n + pads for et, n in edges.items()})
    with torch.no_grad():
        torch.testing.assert_close(model(*args, **kwargs), model(*plain, seed_x=kwargs["seed_x"]))


@pytest.mark.parametrize("task,model,backend", [
    # CI: AOTAutograd's graphs run as they are (seconds to compile, where Inductor takes
    # half a minute of CI's budget); Inductor's in the slow tests: ContextGNN's listwise
    # loss over every row, ID-GNN's binary cross-entropy over the subgraph's candidates
    ("user-churn", "sage", "aot_eager"),
    pytest.param("user-churn", "sage", "inductor", marks=pytest.mark.slow),
    pytest.param("user-item-purchase", "contextgnn", "inductor", marks=pytest.mark.slow),
    pytest.param("user-item-purchase", "idgnn", "inductor", marks=pytest.mark.slow)])
def test_a_compiled_step_trains_the_model_and_its_loss_as_one_graph(tiny_cfg, task, model,
                                                                    backend):
    """With dynamic shapes every output of the model is a real seed's, so the task's loss
    joins the model's compiled graph (``TaskModule.compile_loss``; a link model with
    ``loss_targets``): nothing of the loss or its gradient runs outside the graphs, and
    the loss and the gradients are the eager model's with the loss after it. Buckets and
    token sets drop pad seeds' outputs on the host: their loss stays after the compiled
    model."""
    from rdl.bench.kernels import outside_graphs
    assert Exact().keeps_all and Padded().keeps_all
    assert not Buckets(BucketSettings()).keeps_all and not Tokens({"article": 1}).keeps_all
    _, dm, module = setup(tiny_cfg, task, model, f"+compile.kwargs.backend={backend}")
    assert isinstance(module.shapes, Padded) and module.train_fn is not None
    for m in module.model.modules():   # no dropout: one random stream is not the other's
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    module.train()
    batch = next(iter(dm.train_dataloader()))
    if task == "user-churn":
        assert batch[module.entity].get("base") is not None, "the tree prior, in the graph"

    def step():
        module.zero_grad(set_to_none=True)
        loss, n = module.step_loss(batch)
        loss.backward()
        assert n == batch[module.entity].batch_size
        return loss.detach(), [p.grad for p in module.model.parameters()]

    compiled = step()
    _, outside = outside_graphs(step)
    assert set(outside) <= {"fill_"}, f"outside the graphs: {dict(outside)} (fill_: the " \
        "backward's seed)"
    module.set_forward(module.model)
    assert module.train_fn is None
    eager = step()
    torch.testing.assert_close(compiled[0], eager[0], rtol=1e-5, atol=1e-6)
    assert sum(g is not None for g in eager[1]) > 10
    for got, want in zip(compiled[1], eager[1]):
        assert (got is None) == (want is None)
        if got is not None:
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_pad_inputs_adds_the_pad_nodes_edges_times_and_seeds_in_few_ops():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Kernels(TorchDispatchMode):  # ops that write memory (views excluded)
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            views = (torch.ops.aten.as_strided, torch.ops.aten.slice, torch.ops.aten.expand)
            Kernels.count += func.overloadpacket not in views
            return out

    num_nodes = {"a": 5, "b": 0, "c": 3}  # an empty type, and edges both ways between sizes
    edges = {("a", "r", "c"): torch.tensor([[0, 4], [2, 1]]),
             ("c", "s", "a"): torch.tensor([[1], [0]]),
             ("b", "t", "a"): torch.empty(2, 0, dtype=torch.long),
             ("a", "u", "a"): torch.tensor([[3], [3]])}
    time = {"a": torch.arange(5) * 10, "b": torch.empty(0, dtype=torch.long)}
    seeds = {"a": torch.tensor([0, 1, 1, 0, 1]), "b": torch.empty(0, dtype=torch.long)}
    seed_time = torch.tensor([70, 80])
    with Kernels():
        _, ei, t, b, st = pad_inputs({}, edges, time, seeds, seed_time, num_nodes)
    assert Kernels.count == len(edges) + len(time) + len(seeds) + 2
    for (src, rel, dst), e in edges.items():
        pads = torch.stack([torch.arange(num_nodes[src], num_nodes[src] + PAD),
                            torch.arange(num_nodes[dst], num_nodes[dst] + PAD)])
        assert torch.equal(ei[src, rel, dst], torch.cat([e, pads], 1))
    for nt in time:
        assert torch.equal(t[nt], torch.cat([time[nt], torch.full((PAD,), 70)]))
        assert torch.equal(b[nt], torch.cat([seeds[nt], torch.zeros(PAD, dtype=torch.long)]))
    assert st is seed_time


@pytest.mark.parametrize("schedule", [
    functools.partial(schedules.warmup_cosine, warmup_steps=3),
    schedules.exponential, schedules.constant])
@pytest.mark.parametrize("fused", [False, True])
def test_compiled_optimizer_step_follows_the_lr_without_recompiling(schedule, fused):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01), fused=fused)
    compile_optimizer_step(opt)
    sched = schedule(opt, total_steps=12)
    reference = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    reference.load_state_dict(model.state_dict())
    ref_opt = torch.optim.Adam(reference.parameters(), lr=0.01)
    ref_sched = schedule(ref_opt, total_steps=12)
    lrs = []
    for step in range(12):
        x = torch.randn(16, 8)
        for m, o, s in ((model, opt, sched), (reference, ref_opt, ref_sched)):
            o.zero_grad()
            m(x).pow(2).mean().backward()
            o.step()
            s.step()
        lrs.append(float(opt.param_groups[0]["lr"]))
        if step == 0:
            warm = graphs()
    assert isinstance(opt.param_groups[0]["lr"], torch.Tensor)
    # A fused step is one kernel, left uncompiled; otherwise one graph for all steps.
    assert graphs() == warm == (0 if fused else 1), "a new learning rate recompiled the step"
    if schedule is not schedules.constant:
        assert len(set(lrs)) > 5
    for p, q in zip(model.parameters(), reference.parameters()):  # the same updates
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n,batch_size", [(100, 32), (97, 32), (113, 32), (1, 32), (33, 32),
                                          (64, 32), (5, 1)])
def test_tail_merging_batches(n, batch_size):
    sampler = SeedBatches(range(n), batch_size)
    batches = list(sampler)
    assert len(batches) == len(sampler)
    assert sorted(i for b in batches for i in b) == list(range(n))
    if len(batches) > 1:
        assert min(2 * len(b) for b in batches) >= batch_size
    assert max(len(b) for b in batches) < 1.5 * batch_size + 1


class _FloatAttributes(torch.nn.Module):
    """An embedding (its ``norm_type`` a float), a dropout rate and a norm's epsilon: the
    floats every rdl model holds through PyTorch Frame's and its own modules."""

    def __init__(self):
        super().__init__()
        self.emb, self.drop, self.norm = (torch.nn.Embedding(10, 4), torch.nn.Dropout(0.2),
                                          torch.nn.LayerNorm(4))

    def forward(self, x, seed_time):
        return self.norm(self.drop(self.emb(x))).sum(-1) + seed_time


def test_a_compile_traces_the_model_once():
    """A model's floats are constants of its graph (``DYNAMO_SETTINGS``): with
    ``dynamic=True`` Dynamo would trace ``nn.Embedding``'s float ``norm_type`` as a symbol,
    fail to make it a tensor and restart its analysis, tracing the model twice."""
    import logging

    from rdl.training import compile as rdl_compile

    def restarts(settings) -> list[str]:
        torch._dynamo.reset()
        seen = []
        handler = logging.Handler()
        handler.emit = lambda record: seen.append(record.getMessage())
        logger = logging.getLogger("torch._dynamo")
        logger.addHandler(handler)
        torch._logging.set_logs(dynamo=logging.INFO)
        try:
            forward = rdl_compile.compile_model(_FloatAttributes(), dynamo=settings)
            out = forward(torch.arange(6).view(3, 2), torch.zeros(3, 2))
        finally:
            torch._logging.set_logs()
            logger.removeHandler(handler)
        assert out.shape == (3, 2)
        return [m for m in seen if "Restarting analysis" in m]

    assert restarts(None) == []   # rdl's default, DYNAMO_SETTINGS
    assert restarts({}), "without the setting this torch no longer restarts: drop the setting?"
    assert restarts({"specialize_float": False})   # the opt-out: torch's own since 2.6


def test_the_trace_settings_hold_at_every_trace_and_only_there():
    """Made once per compiled model and entered at every call: a later call that traces
    again (evaluation's first batch) traces under them too, and torch's settings are
    back as they were after each call."""
    import torch.fx.experimental._config as fx_config

    from rdl.training import compile as rdl_compile
    outside = (fx_config.use_duck_shape, torch._dynamo.config.specialize_float)
    seen = []

    def backend(gm, example_inputs):  # called by Dynamo at each trace
        seen.append((fx_config.use_duck_shape, torch._dynamo.config.specialize_float))
        return gm.forward

    torch._dynamo.reset()
    model = _FloatAttributes()
    forward = rdl_compile.compile_model(model, backend=backend)
    for training in (True, False, True):
        model.train(training)
        forward(torch.arange(6).view(3, 2), torch.zeros(3, 2))
        assert (fx_config.use_duck_shape, torch._dynamo.config.specialize_float) == outside
    assert seen == [(False, True), (False, True)]   # a graph for training, one for eval


def test_compile_dynamo_is_a_setting(tiny_cfg, monkeypatch):
    """``compile.dynamo`` reaches the compiled model as composed (the default: float
    constants), and the opt-out does too."""
    from hydra.utils import instantiate

    from rdl.families.node import NodeTask
    from rdl.families.node.module import NodeTaskModule
    from rdl.training import compile as rdl_compile
    from rdl.training import module as rdl_module

    seen = []
    monkeypatch.setattr(rdl_module, "compile_model",
                        lambda model, patches, dynamo, **kw: seen.append(dynamo) or model)
    task = NodeTask(name="item-sales", sql="hm/item-sales.sql", kind="regression",
                    entity_table="article", entity_col="article_id", target_col="sales",
                    val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    model = torch.nn.Linear(1, 1)
    model.time_types = []
    for overrides, want in [((), rdl_compile.DYNAMO_SETTINGS),
                            (("compile.dynamo.specialize_float=false",),
                             {"specialize_float": False})]:
        options = instantiate(tiny_cfg(*overrides).compile)
        NodeTaskModule(model, task, optimizer=torch.optim.Adam, compile=options)
        assert seen.pop() == want


def test_a_compile_s_time_is_told_by_phase(capsys):
    """A wide schema's cold compile took 11 minutes on the CPU (Lahman's 134 edge types):
    with compile.log=true the run says where they went, by Dynamo's own timers, as what
    this process spent since the job began (a multirun's jobs share it)."""
    from types import SimpleNamespace

    from rdl.api import _print_compiled
    from rdl.training.compile import PHASES, phases, stats

    before = {**stats(), **phases()}
    f = torch.compile(lambda x: (x * 3).cos().sum(), dynamic=True)
    with torch._inductor.config.patch(fx_graph_cache=False):   # (a cold compile's phases)
        f(torch.randn(17))
    after = phases()
    assert set(after) <= set(PHASES) and "Dynamo's trace" in after
    assert after["Dynamo's trace"] > before.get("Dynamo's trace", 0.0)
    data = SimpleNamespace(settings=SimpleNamespace(buckets=None))
    _print_compiled(data, before)   # (compile.log=false: no phases read)
    assert "compile time" not in capsys.readouterr().out
    _print_compiled(data, before, phases=True)
    out = capsys.readouterr().out
    assert "torch.compile: 1 graphs compiled, 0 graph breaks" in out
    # the phases of half a second or more, each (how many: the machine's speed)
    spent = [k for k, v in after.items() if v - before.get(k, 0.0) >= 0.5]
    told = re.search(r"compile time, by Dynamo's timers: (.*)", out)
    assert bool(told) == bool(spent), (out, after, before)
    assert not told or [p.rsplit(" ", 2)[0] for p in told[1].split(", ")] == spent


@pytest.mark.parametrize("task,model", [("user-churn", "sage"),
                                        ("user-item-purchase", "two-tower")])
def test_evaluation_runs_the_eager_model_with_compile_eval_false(tiny_cfg, task, model, capsys):
    """``compile.eval=false``: training compiles its one graph, evaluation (and a two-tower
    model's candidates, embedded at the split's start) run the eager model, with its
    outputs, and no second graph is compiled. (AOTAutograd's graphs: a compile is
    counted as Inductor's is, in seconds.)"""
    from types import SimpleNamespace

    from rdl.api import _print_compiled

    _, dm, module = setup(tiny_cfg, task, model, "compile.eval=false",
                          "+compile.kwargs.backend=aot_eager")
    opt = torch.optim.Adam(module.model.parameters(), lr=torch.tensor(1e-3), fused=True)
    module.train()
    train_step(module, next(iter(dm.train_dataloader())), opt)
    assert graphs() == 1
    module.eval()
    prepare_eval(module, dm)
    batch = next(iter(dm.val_dataloader()))
    eval_step(module, batch)
    assert graphs() == 1, "evaluation compiled a graph"
    if task == "user-churn":   # (a link model's forward takes the candidates too)
        with torch.no_grad():
            args, kwargs = module.inputs(batch)
            want = module.model(*args, **kwargs)
            got = TaskModule.forward(module, batch)   # (the model's, before the head)
        assert torch.equal(got, want[:got.size(0)])
    module.train()   # training still runs the compiled model
    assert module.model_fn is module.forward_fn is not module.model
    _print_compiled(SimpleNamespace(settings=SimpleNamespace(buckets=None)),
                    {"graphs": 0, "graph_breaks": 0}, compile_eval=False)
    assert ("1 graphs compiled, 0 graph breaks (one graph, training's (evaluation eager, as "
            "compile.eval says)") in capsys.readouterr().out
