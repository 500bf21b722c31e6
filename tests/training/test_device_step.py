"""A training step on a device other than the CPU, checked without one: every model
family's step, run eagerly on PyTorch's ``meta`` device (shapes, dtypes and devices, no
data), keeps its tensors on the step's device and never waits for it.

- A tensor on the CPU inside a GPU step is a copy between the devices at every step, or,
  a single value, a CPU op in a graph compiled for CUDA graphs, which Inductor cuts the
  graph around (it records no CPU op). A module's tensor that ``module.to(device)`` does
  not move (an attribute, not a buffer) shows up here as one.
- A host sync (``.item()``, ``bool(tensor)``, a boolean mask's ``nonzero``, ...) makes the
  host wait for the device's queue: in an eager GPU step each one stops the overlap of
  the host's launches with the device's work. PyTorch Frame's categorical and timestamp
  encoders made five a step (rdl's own now: ``rdl/nn/encoder.py``).

``test_syncs.py`` audits Lightning's loop around the model on the CPU (the model there is
compiled, and a compiled graph cannot sync: ``test_compile.py``); this audits the model's
own forward, loss and backward, eagerly, as ``compile.enabled=false`` runs them on a GPU,
and its forward in evaluation; with a compiled run's batches, also the padding ahead of
the compiled model (``pad_inputs``, outside its graph). Both the per-type ops and the
fused and stacked ones (``launch_bound=true``, as ``experiment=gpu``).
"""
from __future__ import annotations

import functools
import traceback

import pytest
import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from rdl.api import build
from rdl.families.node.module import node_loss
from tests.training.test_syncs import forces_sync

aten = torch.ops.aten


def on_meta(value):
    """``value`` (a tensor, or a TensorFrame or PyTorch Frame multi-tensor) with each
    tensor made anew on the ``meta`` device, of the same shape, strides and dtype (PyG's
    ``apply`` leaves what it cannot map as it is: on the CPU, where the audit sees it)."""
    if isinstance(value, Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                                   device="meta")
    return value._apply(on_meta)


class DeviceAudit(TorchDispatchMode):
    """Records each op that would sync the host, or that reads or makes a tensor on the
    CPU, with the first frame outside torch that called it."""

    def __init__(self):
        super().__init__()
        self.events: list[str] = []

    def _record(self, what: str):
        stack = traceback.extract_stack()[:-2]
        frame = next((f for f in reversed(stack) if "/torch/" not in f.filename), stack[-1])
        self.events.append(f"{what} at {frame.filename}:{frame.lineno} ({frame.name})")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket is aten._local_scalar_dense:
            # a meta tensor has no value to read: recorded, and a stand-in returned so that
            # the step goes on to show the rest
            self._record(f"host sync {func}")
            return True if args[0].dtype == torch.bool else 1
        if forces_sync(func, args, kwargs):
            self._record(f"host sync {func}")
        out = func(*args, **kwargs)
        cpu = [tuple(t.shape) for t in tree_leaves((args, kwargs, out))
               if isinstance(t, Tensor) and t.device.type == "cpu"]
        if cpu:
            self._record(f"CPU tensors {cpu} in {func}")
        return out


def audit_step(module, batch) -> list[str]:
    """The events of :class:`DeviceAudit` over one training step's loss and backward and
    one evaluation forward of ``batch``, module and batch on the meta device."""
    module = module.to("meta")
    batch = batch.apply(on_meta)
    audit = DeviceAudit()
    with audit:
        module.train()
        loss, _ = module.step_loss(batch)
        loss.backward()
        module.eval()
        with torch.no_grad():
            module.step_loss(batch)
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    assert grads and all(g.device.type == "meta" for g in grads), \
        "the backward reached the parameters, on the step's device"
    return audit.events


#: every model, each family, both ways of computing the message passing and the encoders,
#: and a compiled run's batches (pad rows, nodes and edges: ``rdl.training.shapes``)
CASES = [("user-churn", "sage", False, False), ("user-churn", "sage", True, False),
         ("user-churn", "sage", True, True), ("user-churn", "graph-transformer", True, False),
         ("user-item-purchase", "idgnn", False, False),
         ("user-item-purchase", "contextgnn", True, False),
         ("user-item-purchase", "contextgnn", True, True),
         ("user-item-purchase", "two-tower", True, False),
         ("user-item-purchase", "context-transformer", False, False)]


@pytest.mark.parametrize("task,model,launch_bound,compiled", CASES)
def test_a_step_keeps_to_its_device_and_never_syncs(tiny_cfg, task, model, launch_bound,
                                                    compiled):
    cfg = tiny_cfg(f"task={task}", f"model={model}", f"compile.enabled={str(compiled).lower()}",
                   f"launch_bound={str(launch_bound).lower()}")
    _, dm, module = build(cfg)
    if compiled:
        # a compiled run's loaders and padding ahead of the model, the model itself eager
        # (Inductor cannot compile for the meta device; a compiled graph cannot sync:
        # test_compile.py)
        assert module.shapes.pad_rows and module.forward_fn is not module.model
        module.set_forward(module.model)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    events = audit_step(module, batch)
    assert not events, "\n".join(events)


def test_the_audit_sees_a_cpu_tensor_and_a_sync():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 2)
            self.table = torch.arange(4.0)          # an attribute: .to() leaves it behind

        def forward(self, x):
            assert torch.all(x >= 0)                # bool(tensor): a host sync
            return self.lin(x).sum() + self.table.to(x.device).sum()

    model = Model().to("meta")
    x = on_meta(torch.rand(5, 3))
    with DeviceAudit() as audit:
        model(x).backward()
    assert any(e.startswith("host sync") for e in audit.events), audit.events
    assert any(e.startswith("CPU tensors [(4,)]") for e in audit.events), audit.events
    assert len(audit.events) == 2, audit.events


@pytest.mark.slow
@pytest.mark.parametrize("dynamic", [False, True])
def test_the_compiled_graphs_hold_nothing_a_cuda_graph_is_cut_around(tiny_cfg, dynamic):
    """``experiment=gpu``'s model and loss as Inductor receives them (forward and backward graphs
    after AOTAutograd and Inductor's decompositions), traced on the ``meta`` device with
    rdl's trace settings: no node on the CPU, none of the ops torch will not record in a
    CUDA graph, no size read from data. Inductor cuts a graph around such nodes (its
    partitions); with static shapes (buckets) or without, the model gives it none. Private
    torch APIs, in this test only: skipped where this torch lacks them."""
    aot = pytest.importorskip("torch._functorch.aot_autograd")
    decomp = pytest.importorskip("torch._inductor.decomposition")
    utils = pytest.importorskip("torch._inductor.utils")
    unsafe = getattr(utils, "is_cudagraph_unsafe_fx_node", None)
    if unsafe is None:
        pytest.skip(f"torch {torch.__version__} has no is_cudagraph_unsafe_fx_node")
    from rdl.training.compile import _trace_settings

    graphs = []

    def backend(gm, example_inputs):
        def keep(kind):
            def compiler(g, _):
                graphs.append((kind, g))
                return g.forward
            return compiler
        return aot.aot_module_simplified(gm, example_inputs, fw_compiler=keep("forward"),
                                         bw_compiler=keep("backward"),
                                         decompositions=decomp.select_decomp_table())

    cfg = tiny_cfg("task=user-churn", "launch_bound=true", "compile.enabled=true")
    _, dm, module = build(cfg)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader())).apply(on_meta)
    module = module.to("meta").train()
    # the graph a training step runs: the model and its loss (TaskModule.compile_loss)
    module.compile_options.kwargs = {"backend": backend, "dynamic": dynamic}
    module.compile_loss(functools.partial(node_loss, module.kind))
    assert module.train_fn is not None
    with _trace_settings():
        loss, _ = module.step_loss(batch)
        loss.backward()
    assert [kind for kind, _ in graphs] == ["forward", "backward"]
    found = []
    for kind, gm in graphs:
        for node in gm.graph.nodes:
            vals = node.meta.get("val")
            vals = vals if isinstance(vals, (list, tuple)) else [vals]
            if any(isinstance(v, Tensor) and v.device.type == "cpu" for v in vals):
                found.append(f"{kind}: {node.op} {node.target} on the CPU")
            if node.op == "call_function" and (unsafe(node) or
                                               node.meta.get("unbacked_bindings")):
                found.append(f"{kind}: {node.target} is not recorded in a CUDA graph")
    assert not found, "\n".join(found)
