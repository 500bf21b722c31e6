"""The table encoder: PyTorch Frame's stype-wise encoder, with its stype order fixed at build
time so that Dynamo traces it without a graph break."""
import pandas as pd
import torch
import torch_frame
from torch_frame.data import Dataset
from torch_frame.nn.encoder.stypewise_encoder import StypeWiseFeatureEncoder

from rdl.nn.encoder import STYPE_ENCODERS, FixedOrderEncoder, HeteroEncoder


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


def test_table_encoder_traces_as_one_graph():
    tf, stats = frame()
    enc = HeteroEncoder(8, {"t": tf.col_names_dict}, {"t": stats}, num_layers=2).eval()
    assert isinstance(enc.encoders["t"].encoder, FixedOrderEncoder)
    torch._dynamo.reset()
    compiled = torch.compile(enc, fullgraph=True, backend="eager", dynamic=True)
    torch.testing.assert_close(compiled({"t": tf})["t"], enc({"t": tf})["t"])
