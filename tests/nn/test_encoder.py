"""The table encoder: PyTorch Frame's stype-wise encoder, with its stype order fixed at build
time so that Dynamo traces it without a graph break."""
import pandas as pd
import torch
import torch_frame
from torch_frame.data import Dataset
from torch_frame.nn.encoder.stypewise_encoder import StypeWiseFeatureEncoder
from torch.utils._python_dispatch import TorchDispatchMode

from rdl.nn.encoder import STYPE_ENCODERS, FixedOrderEncoder, HeteroEncoder, TimestampEncoder


def frame():
    df = pd.DataFrame({
        "when": pd.date_range("2020-01-01", periods=40, freq="37h").astype(str),
        "colour": ["red", "blue", "green", "red"] * 10,
        "price": torch.linspace(0, 1, 40).numpy(),
    })
    # Columns listed out of PyTorch Frame's canonical stype order.
    ds = Dataset(df, {"when": torch_frame.timestamp, "colour": torch_frame.categorical,
                      "price": torch_frame.numerical}).materialize()
    return ds.tensor_frame, ds.col_stats


def test_fixed_order_matches_pytorch_frame():
    tf, stats = frame()
    names = tf.col_names_dict
    kw = dict(out_channels=8, col_stats=stats, col_names_dict=names)
    torch.manual_seed(0)
    ref = StypeWiseFeatureEncoder(**kw, stype_encoder_dict={st: STYPE_ENCODERS[st]() for st in names})
    ours = FixedOrderEncoder(**kw, stype_encoder_dict={st: STYPE_ENCODERS[st]() for st in names})
    ours.load_state_dict(ref.state_dict())
    x_ref, cols_ref = ref(tf)
    x, cols = ours(tf)
    assert cols == cols_ref and len(cols) == 3
    torch.testing.assert_close(x, x_ref)


def test_missing_timestamps_filled_as_pytorch_frame_fills_them_without_a_mask_assignment():
    """PyTorch Frame's boolean-mask assignment stays an ``index_put_`` in Inductor's graph,
    a host sync a step on a GPU; ours is a ``where`` with the same result."""
    df = pd.DataFrame({"a": ["2020-01-01 00:00", None, "2021-06-03 10:00", "2019-02-02 08:30", None],
                       "b": ["2018-05-05 00:00", "2018-05-06 12:00", None, "2022-12-31 23:59", None]})
    ds = Dataset(df, {"a": torch_frame.timestamp, "b": torch_frame.timestamp}).materialize()
    feat = ds.tensor_frame.feat_dict[torch_frame.timestamp]
    stats = [ds.col_stats[c] for c in ds.tensor_frame.col_names_dict[torch_frame.timestamp]]
    ref = torch_frame.nn.TimestampEncoder(out_channels=4, stats_list=stats, stype=torch_frame.timestamp)
    ours = TimestampEncoder(out_channels=4, stats_list=stats, stype=torch_frame.timestamp)
    missing = (feat == -1).any(-1)
    assert missing.sum() == 4 and feat.shape[1:] == (2, 7)
    filled = ours.na_forward(feat)
    assert torch.equal(filled, ref.na_forward(feat)) and not (filled == -1).any()
    assert torch.equal(filled[missing], ours.fill_values[missing.nonzero()[:, 1]])
    ops = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.append(func.overloadpacket)
            return func(*args, **(kwargs or {}))

    with Ops():
        ours.na_forward(feat)
    assert ops and torch.ops.aten.index_put_ not in ops and torch.ops.aten.index_put not in ops


def test_categories_and_timestamps_encode_as_pytorch_frame_encodes_them_without_host_syncs():
    """rdl's categorical and timestamp encoders: PyTorch Frame's outputs and gradients from
    the same state, missing categories and timestamps included, with none of its ops that
    wait for a GPU (a boolean-mask assignment's ``nonzero``, an assert's ``item``)."""
    from tests.training.test_syncs import SyncRecorder
    df = pd.DataFrame({"colour": ["red", None, "green", "red", "blue", None, "teal", "red"],
                       "size": ["s", "m", None, "l", "s", "s", "m", None],
                       "when": ["2020-01-01 00:00", None, "2021-06-03 10:00", "2019-02-02 08:30",
                                "2024-12-31 23:59", "2019-01-01 00:00", None, "2022-07-14 12:30"]})
    ds = Dataset(df, {"colour": torch_frame.categorical, "size": torch_frame.categorical,
                      "when": torch_frame.timestamp}).materialize()
    tf = ds.tensor_frame
    for stype, ref_cls in [(torch_frame.categorical, torch_frame.nn.EmbeddingEncoder),
                           (torch_frame.timestamp, torch_frame.nn.TimestampEncoder)]:
        feat = tf.feat_dict[stype]
        assert (feat == -1).any(), "some values are missing"
        stats = stats_of(ds.col_stats, tf, stype)
        torch.manual_seed(0)
        ref = ref_cls(out_channels=8, stats_list=stats, stype=stype)
        ours = STYPE_ENCODERS[stype](out_channels=8, stats_list=stats, stype=stype)
        assert type(ours) is not ref_cls
        ours.load_state_dict(ref.state_dict())
        recorder = SyncRecorder()
        with recorder:
            x = ours(feat)
            x.square().sum().backward()
        assert not recorder.events, recorder.events
        x_ref = ref(feat)
        x_ref.square().sum().backward()
        torch.testing.assert_close(x, x_ref, rtol=0, atol=0)
        for (name, p), p_ref in zip(ours.named_parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, p_ref.grad, rtol=0, atol=0, msg=name)
        with SyncRecorder() as theirs:
            ref(feat)
        assert theirs.events, "PyTorch Frame's own encoder syncs (what this replaces)"


def test_missing_numbers_encode_as_zeros_and_keep_the_weight_finite():
    tf, stats = frame()
    feat = tf.feat_dict[torch_frame.numerical].clone()
    feat[::3, 0] = float("nan")  # a third of the prices missing
    enc = STYPE_ENCODERS[torch_frame.numerical](
        out_channels=8, stats_list=stats_of(stats, tf, torch_frame.numerical),
        stype=torch_frame.numerical)
    x = enc(feat)
    assert torch.isfinite(x).all()
    assert (x[::3] == 0).all() and (x[1::3] != 0).any()
    (x ** 2).sum().backward()
    assert torch.isfinite(enc.weight.grad).all() and enc.weight.grad.abs().sum() > 0


def stats_of(stats, tf, stype):
    return [stats[c] for c in tf.col_names_dict[stype]]


def test_table_encoder_traces_as_one_graph():
    tf, stats = frame()
    enc = HeteroEncoder(8, {"t": tf.col_names_dict}, {"t": stats}, num_layers=2).eval()
    assert isinstance(enc.encoders["t"].encoder, FixedOrderEncoder)
    torch._dynamo.reset()
    compiled = torch.compile(enc, fullgraph=True, backend="eager", dynamic=True)
    torch.testing.assert_close(compiled({"t": tf})["t"], enc({"t": tf})["t"])


def test_dropout_keeps_each_value_with_probability_1_minus_p():
    from rdl.nn.encoder import Dropout
    torch.manual_seed(0)
    x = torch.rand(400, 500) + 0.5
    drop = Dropout(0.2)
    y = drop(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.8) < 0.005     # 200k draws: sd 0.0009
    torch.testing.assert_close(y[kept], x[kept] / 0.8)        # kept values scaled by 1/(1-p)
    assert not torch.equal(drop(x) != 0, kept)                # a new mask per call
    assert drop.eval()(x) is x                                # identity in evaluation
    assert torch.equal(Dropout(0.0).train()(x), x)
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))


def test_dropout_gradient_uses_the_same_mask():
    from rdl.nn.encoder import Dropout
    x = torch.rand(300, 40, requires_grad=True)
    y = Dropout(0.5)(x)
    y.sum().backward()
    torch.testing.assert_close(x.grad, (y != 0).float() * 2.0)


def test_table_encoder_uses_rdl_dropout():
    from rdl.nn.encoder import Dropout
    tf, stats = frame()
    enc = HeteroEncoder(8, {"t": tf.col_names_dict}, {"t": stats}, num_layers=2)
    drops = [m for m in enc.modules() if isinstance(m, torch.nn.Dropout)]
    assert len(drops) == 2 and all(type(m) is Dropout and m.p == 0.2 for m in drops)


def test_hash_uniform_is_uniform_and_uncorrelated():
    from rdl.nn.encoder import hash_uniform
    x = torch.empty(1000, 200)
    u = hash_uniform(x, torch.tensor(12345, dtype=torch.int32))
    assert u.shape == x.shape and u.dtype == torch.float32
    assert u.min() >= 0 and u.max() < 1
    counts = torch.histc(u, bins=20, min=0, max=1)                 # 10,000 expected each
    assert ((counts - 10_000) ** 2 / 10_000).sum() < 45            # chi2(19): p < 0.001
    flat = u.flatten() - 0.5
    for lag in (1, 2, 200):                                        # neighbours, rows
        assert abs((flat[:-lag] * flat[lag:]).mean() / flat.var()) < 0.01
    other = hash_uniform(x, torch.tensor(12346, dtype=torch.int32))
    assert abs(((u - 0.5) * (other - 0.5)).mean() / flat.var()) < 0.01   # seeds differ
    assert torch.equal(u, hash_uniform(x, torch.tensor(12345, dtype=torch.int32)))


def test_compiled_dropout_keeps_each_value_with_probability_1_minus_p():
    """Compiled, rdl's dropout draws its mask from ``hash_uniform`` (eager: ``rand``)."""
    from torch._dynamo.utils import counters

    from rdl.nn.encoder import Dropout
    torch._dynamo.reset()
    counters.clear()
    drop = Dropout(0.2)
    f = torch.compile(lambda x: drop(x), fullgraph=True, dynamic=True)
    x = (torch.rand(400, 500) + 0.5).requires_grad_()
    torch.manual_seed(0)
    y = f(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.8) < 0.005
    torch.testing.assert_close(y[kept], x[kept] / 0.8)
    y.sum().backward()
    torch.testing.assert_close(x.grad, kept.float() / 0.8)        # the same mask backward
    assert not torch.equal(f(x) != 0, kept)                       # a new mask per call
    torch.manual_seed(0)
    assert torch.equal(f(x) != 0, kept)                           # reproducible
    f(x[:300])
    assert counters["stats"]["unique_graphs"] == 1                # other sizes, same graph


def test_embedding_columns_of_one_width_are_mapped_in_one_batched_matmul():
    from torch_frame.data.multi_embedding_tensor import MultiEmbeddingTensor
    from torch_frame.data.stats import StatType

    from rdl.nn.encoder import LinearEmbeddingEncoder

    for dims in ([4, 4, 4], [4, 3]):
        torch.manual_seed(0)
        stats = [{StatType.EMB_DIM: d} for d in dims]
        kw = dict(out_channels=5, stats_list=stats, stype=torch_frame.embedding)
        ref = torch_frame.nn.LinearEmbeddingEncoder(**kw).double()
        ours = LinearEmbeddingEncoder(**kw).double()
        ours.load_state_dict(ref.state_dict())
        torch.nn.init.normal_(ref.biases)
        ours.biases.data.copy_(ref.biases)
        feat = MultiEmbeddingTensor.from_tensor_list(
            [torch.randn(6, d, dtype=torch.float64) for d in dims])
        calls = []

        class Ops(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                calls.append(func.overloadpacket)
                return func(*args, **(kwargs or {}))

        with Ops():
            out = ours.encode_forward(feat)
        torch.testing.assert_close(out, ref.encode_forward(feat), rtol=1e-12, atol=1e-12)
        assert (torch.ops.aten.bmm in calls) == (len(set(dims)) == 1)
        w = torch.randn_like(out)
        g_ref = torch.autograd.grad((ref.encode_forward(feat) * w).sum(), list(ref.parameters()))
        g = torch.autograd.grad((ours.encode_forward(feat) * w).sum(), list(ours.parameters()))
        for a, b in zip(g, g_ref):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_a_table_of_embedding_columns_alone_compiles():
    # Portal's species table (genus, species, taxa: text, embedded): the columns' batched
    # matmul leaves their encodings transposed in memory, and Inductor's cat of one
    # tensor kept that layout, which the ResNet's view refused when compiling.
    from torch_frame.data.multi_embedding_tensor import MultiEmbeddingTensor
    from torch_frame.data.stats import StatType

    torch.manual_seed(0)
    names = {torch_frame.embedding: ["genus", "species", "taxa"]}
    stats = {c: {StatType.EMB_DIM: 4} for c in names[torch_frame.embedding]}
    feat = MultiEmbeddingTensor.from_tensor_list([torch.randn(7, 4) for _ in range(3)])
    tf = torch_frame.TensorFrame({torch_frame.embedding: feat}, names)
    enc = HeteroEncoder(8, {"t": names}, {"t": stats}, num_layers=1).eval()
    torch._dynamo.reset()
    compiled = torch.compile(enc, fullgraph=True, dynamic=True)
    torch.testing.assert_close(compiled({"t": tf})["t"], enc({"t": tf})["t"])
