"""Fused heterogeneous ops (rdl/nn/fused.py): each gives the outputs and gradients of the
per-type version it replaces, from the same parameters."""
import copy

import pandas as pd
import pytest
import torch
import torch_frame
from torch_frame.data import Dataset

from rdl.nn.encoder import HeteroEncoder, _per_table_state
from rdl.nn.fused import stacked_layer_norm
from rdl.nn.stacked import resnet_forward, stackable, stacked_resnets
from rdl.nn.model import HeteroGraphSAGE

NODES = {"a": 7, "b": 5, "c": 4, "d": 3}
# a self-relation, two edge types from one source into one destination, a type ("d") that
# only sends, and an edge type that will have no edges
EDGES = [("a", "r1", "b"), ("b", "r2", "a"), ("c", "r3", "a"), ("a", "r4", "c"),
         ("b", "r5", "b"), ("a", "r6", "b"), ("d", "r7", "a")]


def graph(empty=("a", "r6", "b"), channels=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = {t: torch.randn(n, channels, dtype=torch.float64, generator=g, requires_grad=True)
         for t, n in NODES.items()}
    ei = {}
    for et in EDGES:
        e = 0 if et == empty else 13
        ei[et] = torch.stack([torch.randint(NODES[et[0]], (e,), generator=g),
                              torch.randint(NODES[et[2]], (e,), generator=g)])
    return x, ei


def grads(model, x, out, keys):
    loss = sum((out[k] * torch.linspace(-1, 2, out[k].numel(), dtype=out[k].dtype)
                .view_as(out[k])).sum() for k in keys)
    params = [p for _, p in sorted(model.named_parameters())]
    return torch.autograd.grad(loss, params + [x[t] for t in sorted(x)], allow_unused=True)


def assert_same_grads(g1, g2):
    assert len(g1) == len(g2)
    for a, b in zip(g1, g2):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("aggr", ["sum", "mean", "max", ["sum", "max"]])
@pytest.mark.parametrize("out_types", [None, ("a",)])
def test_fused_sage_equals_heteroconv_per_edge_type(aggr, out_types):
    torch.manual_seed(0)
    ref = HeteroGraphSAGE(list(NODES), EDGES, 6, num_layers=2, aggr=aggr, fused=False).double()
    fused = copy.deepcopy(ref)
    fused.fused = True
    x, ei = graph()
    out_ref, out = ref(x, ei, out_types), fused(x, ei, out_types)
    keys = out_types or list(NODES)
    for k in keys:
        torch.testing.assert_close(out[k], out_ref[k], rtol=1e-10, atol=1e-12)
    # "d" receives nothing: its features pass through unchanged, as per type
    assert out["d"] is x["d"] and out_ref["d"] is x["d"]
    assert_same_grads(grads(ref, x, out_ref, keys), grads(fused, x, out, keys))


def test_aggregations_it_cannot_fuse_run_per_edge_type():
    assert HeteroGraphSAGE(list(NODES), EDGES, 6, fused=True).fused
    assert not HeteroGraphSAGE(list(NODES), EDGES, 6).fused     # off unless asked
    model = HeteroGraphSAGE(list(NODES), EDGES, 6, aggr="std", fused=True)
    assert not model.fused
    x, ei = graph()
    assert model.float()({t: v.float() for t, v in x.items()}, ei)["a"].shape == (7, 6)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("rows", [(4, 0, 9), (3, 5, 2, 7), (6, 0)])
def test_stacked_layer_norm_equals_a_norm_per_type(compiled, rows):
    """Eager, each type's weight expanded to its rows; compiled (traced by Dynamo), each
    row's weight chosen by where its type's rows end: a type with no row included."""
    torch.manual_seed(0)
    norms = [torch.nn.LayerNorm(5).double() for _ in rows]
    for n in norms:
        torch.nn.init.normal_(n.weight)
        torch.nn.init.normal_(n.bias)
    xs = [torch.randn(r, 5, dtype=torch.float64, requires_grad=True) for r in rows]
    ref = [n(x) for n, x in zip(norms, xs)]
    fn = torch.compile(stacked_layer_norm, backend="aot_eager", dynamic=True, fullgraph=True) \
        if compiled else stacked_layer_norm
    torch._dynamo.reset()
    out = fn(xs, norms)
    for a, b in zip(out, ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    w = [torch.randn_like(r) for r in ref]
    params = [p for n in norms for p in n.parameters()] + xs
    g_ref = torch.autograd.grad(sum((r * v).sum() for r, v in zip(ref, w)), params)
    g_out = torch.autograd.grad(sum((r * v).sum() for r, v in zip(out, w)), params)
    assert_same_grads(g_ref, g_out)


# -- table encoders -----------------------------------------------------------------------

def table(rows: int, seed: int, categorical: int, numerical: int):
    g = torch.Generator().manual_seed(seed)
    df = pd.DataFrame({
        **{f"c{i}": [f"v{int(v)}" for v in torch.randint(4, (rows,), generator=g)]
           for i in range(categorical)},
        **{f"n{i}": torch.randn(rows, generator=g).numpy() for i in range(numerical)}})
    stypes = {**{f"c{i}": torch_frame.categorical for i in range(categorical)},
              **{f"n{i}": torch_frame.numerical for i in range(numerical)}}
    ds = Dataset(df, stypes).materialize()
    return ds.tensor_frame, ds.col_stats


def encoder(num_layers=3, **kw):
    tables = {"x": table(11, 0, 2, 1), "y": table(4, 1, 1, 3), "z": table(7, 2, 3, 0)}
    torch.manual_seed(0)
    enc = HeteroEncoder(8, {t: tf.col_names_dict for t, (tf, _) in tables.items()},
                        {t: s for t, (_, s) in tables.items()}, num_layers=num_layers, **kw)
    return enc.double().eval(), {t: tf for t, (tf, _) in tables.items()}


def double(tf):
    feat = {st: v.double() if v.is_floating_point() else v for st, v in tf.feat_dict.items()}
    return torch_frame.TensorFrame(feat, tf.col_names_dict)


def run(enc, tfs):
    """The encoder's outputs and its parameters' gradients under the per-table modules'
    names (a stacked encoder's split by table, as its checkpoints are)."""
    enc.zero_grad()
    out = enc({t: double(tf) for t, tf in tfs.items()})
    loss = sum((o * torch.linspace(-1, 1, o.numel(), dtype=o.dtype).view_as(o)).sum()
               for o in out.values())
    loss.backward()
    g = {n: p.grad.clone() for n, p in enc.named_parameters()}
    if enc.sources:   # stacked or joined
        _per_table_state(enc, g, "", None)
    return out, g


def like(ref, **kw):
    """An encoder with ``kw``'s layout holding ``ref``'s values (through its state)."""
    enc, _ = encoder(**kw)
    enc.load_state_dict(ref.state_dict())
    return enc


# chunks of 2, 3 and 16 rows: tables of 11, 4 and 7 rows in several chunks (the last
# padded), and all of them in one chunk each
@pytest.mark.parametrize("fused,stacked", [(True, False), (True, True), (False, True),
                                           (True, 2), (True, 3), (False, 16)])
def test_fused_and_stacked_table_encoders_equal_pytorch_frames_resnets(fused, stacked):
    enc, tfs = encoder(fused=False, stacked=False)
    out_ref, g_ref = run(enc, tfs)
    out, g = run(like(enc, fused=fused, stacked=stacked), tfs)
    assert out.keys() == out_ref.keys() and g.keys() == g_ref.keys()
    for t in out:
        assert out[t].shape == (tfs[t].num_rows, 8)
        torch.testing.assert_close(out[t], out_ref[t], rtol=1e-10, atol=1e-12)
    for name in g:
        torch.testing.assert_close(g[name], g_ref[name], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("stacked", [False, True])
def test_fused_encoders_hold_each_first_blocks_input_maps_as_one(stacked):
    """``lin1`` and the ``shortcut`` of a table's first block, held as one parameter
    (concatenated at each step, they were a copy kernel each on a GPU): initialised as the
    two maps are from the same seed, saved and loaded under their names, either way."""
    ref, tfs = encoder(fused=False)
    enc, _ = encoder(fused=True, stacked=stacked)
    joined = [m.backbone[0].joined for m in enc.encoders.values()]
    assert [j.weight.shape for j in joined] == [(16, 24), (16, 32), (16, 24)]
    if not stacked:   # three tables: 4 parameters of their first maps become 2
        assert len(list(ref.parameters())) - len(list(enc.parameters())) == 3 * 2
    state, want = enc.state_dict(), ref.state_dict()
    assert sorted(state) == sorted(want)
    assert all(torch.equal(state[k], want[k]) for k in want)
    for seed in (1, 2):   # the same random numbers, drawn in the same order
        torch.manual_seed(seed)
        enc.reset_parameters()
        torch.manual_seed(seed)
        ref.reset_parameters()
        state, want = enc.state_dict(), ref.state_dict()
        assert all(torch.equal(state[k], want[k]) for k in want)
    with pytest.raises(RuntimeError, match="input maps joined"):
        enc.encoders["x"].backbone[0](torch.zeros(2, 24, dtype=torch.float64))
    back = like(enc, fused=False)   # and back into the two maps
    assert all(torch.equal(back.state_dict()[k], want[k]) for k in want)


@pytest.mark.parametrize("stacked", [True, 3])
def test_stacked_encoders_hold_each_map_once_for_all_tables(stacked):
    """The later blocks' and decoders' parameters are held stacked over the tables (one
    parameter a map, not one a table: the optimiser and autograd work per parameter on the
    host), initialised as the per-table modules are from the same seed, and saved and
    loaded under the per-table modules' names, either way."""
    ref, tfs = encoder(fused=True)
    enc, _ = encoder(fused=True, stacked=stacked)
    # three tables of three blocks: 2 later blocks of 8 parameters and a decoder of 4
    assert len(list(ref.parameters())) - len(list(enc.parameters())) == (2 * 8 + 4) * 2
    assert all(p.shape[0] == 3 for p in enc.tail.parameters())
    state, want = enc.state_dict(), ref.state_dict()
    assert sorted(state) == sorted(want)
    for k in want:
        assert torch.equal(state[k], want[k]), k
    torch.manual_seed(1)   # the same random numbers, drawn in the same order
    enc.reset_parameters()
    torch.manual_seed(1)
    ref.reset_parameters()
    state, want = enc.state_dict(), ref.state_dict()
    assert all(torch.equal(state[k], want[k]) for k in want)
    with pytest.raises(RuntimeError, match="stacked_encoders"):
        enc.encoders["x"](double(tfs["x"]))   # a table's ResNet alone lacks its tail
    back = like(enc, fused=True)   # and back into per-table modules
    assert all(torch.equal(back.state_dict()[k], want[k]) for k in want)
    with torch.no_grad():
        for t, out in enc({t: double(tf) for t, tf in tfs.items()}).items():
            torch.testing.assert_close(out, ref({t: double(tfs[t])})[t], rtol=1e-10,
                                       atol=1e-12)


def test_stacked_encoders_batch_the_later_blocks_over_tables():
    """The stacked path runs a batched matmul per linear map of the later blocks and the
    decoder, not one per table; tables that cannot be stacked run per table."""
    ref, tfs = encoder()
    assert stackable(list(ref.encoders.values())) and not stackable([ref.encoders["x"]])
    enc = like(ref, stacked=True)
    models = [enc.encoders[t] for t in tfs]
    calls = []
    real = torch.bmm

    def spy(*args, **kw):
        calls.append(args[1].shape[0])
        return real(*args, **kw)

    torch.bmm = spy
    try:
        stacked_resnets(models, [double(tf) for tf in tfs.values()], enc.tail)
        # in chunks of 3 rows: 4 + 2 + 3 chunks for tables of 11, 4 and 7 rows
        stacked_resnets(models, [double(tf) for tf in tfs.values()], enc.tail, chunk=3)
        # two of the tables, in another order: their weights taken from the stack
        enc({t: double(tfs[t]) for t in ("z", "x")})
    finally:
        torch.bmm = real
    # blocks 2 and 3 (two maps each) and the decoder, each over the three tables
    assert calls == [3] * 5 + [9] * 5 + [2] * 5
    shallow, _ = encoder(num_layers=1)
    deep, _ = encoder(num_layers=2)
    assert not stackable([shallow.encoders["x"], deep.encoders["y"]])
    tf, stats = table(11, 0, 2, 1)   # a database of one table: nothing to stack
    one = HeteroEncoder(8, {"x": tf.col_names_dict}, {"x": stats}, num_layers=3, stacked=True)
    assert one.tail is None and not one.stacked


@pytest.mark.parametrize("chunk", [0, 3])
def test_stacked_encoders_take_their_padded_sizes_from_the_host(chunk):
    """The padded sizes a compiled model reads as inputs (``HeteroEncoder.stack_sizes``,
    from the tables' rows as plain ints; docs/compile.md, "A second run from Inductor's
    cache") leave every table a pad row, change no output against the encoder's own, nor
    does a larger layout; tables that are not stacked get none."""
    enc, tfs = encoder(fused=True, stacked=chunk or True)
    tfs = {t: double(tf) for t, tf in tfs.items()}
    sizes = enc.stack_sizes(tfs)
    # tables of 11, 4 and 7 rows: padded to 12 rows each, or to 4, 2 and 3 chunks of 3
    assert sizes == ((4, 2, 3) if chunk else (12,))
    with torch.no_grad():
        ref = enc(tfs)
        for given in (sizes, tuple(n + 2 for n in sizes)):
            out = enc(tfs, stack_sizes=given)
            for t in tfs:
                torch.testing.assert_close(out[t], ref[t], rtol=1e-12, atol=1e-12)
    assert encoder(fused=True)[0].stack_sizes(tfs) is None
    # one table of a batch: its own layout (11 rows: 12, or 4 chunks of 3)
    assert enc.stack_sizes({"x": tfs["x"]}) == ((4,) if chunk else (12,))


def test_fused_first_block_equals_a_resnet_of_one_block():
    enc, tfs = encoder(num_layers=1)
    m = enc.encoders["x"]
    tf = double(tfs["x"])
    assert m.backbone[0].shortcut is not None
    torch.testing.assert_close(resnet_forward(m, tf), m(tf), rtol=1e-10, atol=1e-12)


def test_types_without_nodes_pass_through_the_fused_layer_and_encoders():
    """An eager batch can hold no node of a type (no row of its table)."""
    torch.manual_seed(0)
    model = HeteroGraphSAGE(list(NODES), EDGES, 6, num_layers=2, fused=True).double()
    x, ei = graph()
    x["b"] = x["b"][:0]
    ei = {et: e[:, :0] if "b" in (et[0], et[2]) else e for et, e in ei.items()}
    ref = copy.deepcopy(model)
    ref.fused = False
    out, out_ref = model(x, ei), ref(x, ei)
    assert out["b"].shape == (0, 6)
    torch.testing.assert_close(out["a"], out_ref["a"], rtol=1e-10, atol=1e-12)
    for stacked in (False, True, 4):
        enc, tfs = encoder(stacked=stacked)
        tfs["y"] = tfs["y"][torch.zeros(0, dtype=torch.long)]
        assert enc({t: double(tf) for t, tf in tfs.items()})["y"].shape == (0, 8)


@pytest.mark.parametrize("overrides,fused,stacked", [
    ((), False, False), (("launch_bound=true",), True, True), (("experiment=gpu",), True, True),
    (("experiment=gpu", "model.stacked_encoders=false"), True, False),
    (("model.fused=true",), True, False),
    (("launch_bound=true", "model=graph-transformer"), True, True)])
def test_the_runs_launch_bound_fuses_rdls_models_unless_the_model_says(tiny_cfg, overrides,
                                                                       fused, stacked):
    from rdl.api import make_model, prepare
    cfg = tiny_cfg(*overrides)
    model = make_model(cfg, prepare(cfg))
    encoder = model.encoder if hasattr(model, "types") else model.gnn.encoder
    assert encoder.stacked is stacked and encoder.fused is fused
    if not hasattr(model, "types"):
        assert model.gnn.gnn.fused is fused


@pytest.mark.parametrize("stacked", [True, 4])
def test_stacked_encoders_weight_gradients_arrive_in_the_parameters_layout(stacked):
    """Autograd copies a gradient into ``.grad`` when its strides are not its parameter's:
    a kernel for each such parameter at every step on a GPU. The stacked blocks' and
    decoders' weights get theirs in their own layout (autograd's bmm gave them transposed)."""
    enc, tfs = encoder(fused=True, stacked=stacked)
    layout = {}
    for name, p in enc.tail.named_parameters():
        p.register_hook(lambda g, name=name, p=p: layout.__setitem__(
            name, g.stride() == p.stride()))
    run(enc, tfs)
    # the later blocks' lin1, lin2, norm1 and norm2 and the decoder's norm and linear map,
    # a weight and a bias each, stacked over the tables
    assert len(layout) == 2 * (2 * 4 + 2)
    assert all(layout.values()), [n for n, ok in layout.items() if not ok]


@pytest.mark.parametrize("aggr", ["sum", ["sum", "max"]])
def test_fused_sage_weight_gradients_arrive_in_the_parameters_layout(aggr):
    """As for the stacked encoders: each SAGEConv weight's gradient reaches its parameter
    in the parameter's own strides, and no two parameters receive one tensor (autograd
    would copy both into ``.grad``)."""
    torch.manual_seed(0)
    model = HeteroGraphSAGE(list(NODES), EDGES, 6, num_layers=2, aggr=aggr, fused=True)
    model = model.double()
    x, ei = graph()
    layout, seen = {}, {}
    for name, p in model.named_parameters():
        if ".lin_" in name and name.endswith("weight"):
            def hook(g, name=name, p=p):
                layout[name] = g.stride() == p.stride()
                seen[name] = g
            p.register_hook(hook)
    grads(model, x, model(x, ei), list(NODES))
    assert len(layout) == 2 * 2 * len(EDGES)
    assert all(layout.values()), [n for n, ok in layout.items() if not ok]
    ptrs = [g.data_ptr() for g in seen.values()]
    assert len(set(ptrs)) == len(ptrs)


@pytest.mark.parametrize("stacked", [True, 4])
def test_fused_and_stacked_ops_train_under_autocast(stacked):
    """``trainer.precision=bf16-mixed``: the hand-written backwards take the gradient's
    dtype (bfloat16) against float32 parameters, and give each parameter a gradient."""
    torch.manual_seed(0)
    model = HeteroGraphSAGE(list(NODES), EDGES, 6, num_layers=2, fused=True)
    x, ei = graph()
    x = {t: v.detach().float() for t, v in x.items()}
    enc, tfs = encoder(fused=True, stacked=stacked)
    enc = enc.float().train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x, ei)
        enc_out = enc(tfs)
        loss = sum(o.float().sum() for o in out.values()) + \
            sum(o.float().sum() for o in enc_out.values())
    loss.backward()
    for name, p in [*model.named_parameters(), *enc.named_parameters()]:
        if ".lin" in name or ".backbone." in name:
            assert p.grad is not None and p.grad.dtype == torch.float32, name
            assert torch.isfinite(p.grad).all(), name
