"""A table's first encoder block with its two linear maps of the input held as one
parameter (``model.fused``; :func:`rdl.nn.stacked.resnet_head` multiplies by it)."""
from __future__ import annotations

import torch
from torch import Tensor

from rdl.nn.stacked import _Slices


class JoinedInput(torch.nn.Module):
    """A table's first block's two linear maps of its input, ``lin1`` and the
    ``shortcut``, held as one: ``weight [out_1 + out_2, in]`` and ``bias``, which
    :func:`resnet_head` multiplies by as they are. Taken from ``block`` (a PyTorch Frame
    ``FCResidualBlock`` whose two maps have biases), whose ``lin1`` and ``shortcut``
    become :class:`JoinedPart` s of it.

    Written because the two maps' parameters concatenated at every step are a copy kernel
    per parameter on a GPU, where Inductor's C++ fused them into their neighbours (4 a
    table a step: docs/compile.md, "The GPU proxy"). The values, the initialisation (each
    part's rows in PyTorch Frame's order) and the checkpoints (under ``lin1`` and
    ``shortcut``: :class:`~rdl.nn.encoder.HeteroEncoder`'s state hooks) are the two maps'.
    """

    def __init__(self, block):
        super().__init__()
        parts = (block.lin1, block.shortcut)
        self.weight = torch.nn.Parameter(torch.cat([m.weight.detach() for m in parts]))
        self.bias = torch.nn.Parameter(torch.cat([m.bias.detach() for m in parts]))
        self.sizes = [m.out_features for m in parts]
        block.lin1 = JoinedPart(self, 0, parts[0].in_features)
        block.shortcut = JoinedPart(self, 1, parts[1].in_features)

    @staticmethod
    def joinable(block) -> bool:
        """Whether ``block``'s first maps can be joined: both there, with biases."""
        return all(isinstance(m, torch.nn.Linear) and m.bias is not None
                   for m in (block.lin1, getattr(block, "shortcut", None)))


class JoinedPart(torch.nn.Module):
    """One of the maps a :class:`JoinedInput` holds (its ``part``-th rows): its sizes, and
    its initialisation as ``torch.nn.Linear``'s on those rows; it does not run alone."""

    def __init__(self, joined: JoinedInput, part: int, in_features: int):
        super().__init__()
        object.__setattr__(self, "joined", joined)   # not a submodule: no second copy
        self.part, self.in_features = part, in_features
        self.out_features = joined.sizes[part]

    def rows(self) -> slice:
        start = sum(self.joined.sizes[:self.part])
        return slice(start, start + self.out_features)

    def reset_parameters(self) -> None:
        rows = self.rows()
        torch.nn.Linear.reset_parameters(_Slices(self.joined.weight[rows],
                                                 self.joined.bias[rows]))

    def forward(self, x: Tensor) -> Tensor:
        raise RuntimeError("this table's first encoder block holds its input maps joined "
                           "(model.fused, model.stacked_encoders): run the HeteroEncoder "
                           "that holds them, not the table's ResNet alone")
