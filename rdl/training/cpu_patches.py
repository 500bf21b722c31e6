"""Speed-ups of rdl's compiled model on the CPU, each on by default on the torch release it was
tested on (2.13): ``compile.cpu_patches.<name>``, all off with ``compile.cpu_patches=false``.

Each was found in the profile of the compiled user-churn train step on a 2-core CPU, and
each changes only rdl's compiled model, and only its CPU tensors (``docs/compile.md`` has
the measurements behind the defaults):

- ``graph_pass``: accumulating index writes (the gradients of every gather) become ATen's
  ``scatter_add``, ``addmm`` a product whose bias is added in a fused kernel.
- ``mask_stores``: Inductor's C++ code stores boolean masks ten times faster.
- ``sum_guard``: a float32 sum whose size crosses 4096 does not recompile the graph.
- ``hash_dropout``: compiled dropout draws its mask from a counter hash that Inductor fuses
  (PyTorch's CPU generator is serial); eager dropout is unchanged.

The first three reach into Inductor's private internals (:mod:`rdl.training.inductor`,
imported only when one is on), so every patch is allowed only on the torch releases in
:data:`TESTED`. Elsewhere rdl warns once and leaves them off; a patch whose internals are
missing is named in a warning, never skipped silently. On CUDA none applies: they rewrite
CPU code only.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, fields

import torch

#: torch releases (major.minor) the patches were tested on: the whole suite, and the
#: compiled train step measured with and without them.
TESTED = ("2.13",)
_warned: set[str] = set()


class CpuPatchWarning(UserWarning):
    """A requested CPU patch stays off (untested torch, or an internal it needs is gone)."""


@dataclass
class CpuPatches:
    """Which patches to apply to a compiled model on the CPU (all on by default: each made
    the default user-churn step faster on the CPU it was measured on)."""
    graph_pass: bool = True
    mask_stores: bool = True
    sum_guard: bool = True
    hash_dropout: bool = True

    @classmethod
    def of(cls, value) -> "CpuPatches":
        if isinstance(value, cls):
            return value
        if isinstance(value, bool) or value is None:
            return cls(**{f.name: bool(value) for f in fields(cls)})
        unknown = set(value) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"compile.cpu_patches: unknown patch {sorted(unknown)}; known: "
                             f"{[f.name for f in fields(cls)]}")
        return cls(**value)

    def requested(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name)]


def torch_release(version: str | None = None) -> str:
    """``major.minor`` of a torch version string (``2.13.0+cpu`` -> ``2.13``)."""
    return ".".join((version or torch.__version__).split("+")[0].split(".")[:2])


def warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, CpuPatchWarning, stacklevel=3)


def prepare(patches: CpuPatches) -> tuple[dict, set[str]]:
    """The Inductor options for ``torch.compile(options=...)`` and the names of the patches
    that apply, for a model compiled for the CPU."""
    names = patches.requested()
    if not names:
        return {}, set()
    if torch_release() not in TESTED:
        warn_once(f"compile.cpu_patches ({', '.join(names)}) were tested on torch "
                  f"{', '.join(TESTED)} only; on torch {torch.__version__} they stay off, and "
                  "the compiled CPU step is slower. compile.cpu_patches=false silences this.")
        return {}, set()
    applied = {"hash_dropout"} & set(names)
    inductor_patches = {n: getattr(patches, n) for n in ("graph_pass", "mask_stores", "sum_guard")}
    if not any(inductor_patches.values()):
        return {}, applied
    try:
        from rdl.training import inductor
        options, failed = inductor.options(**inductor_patches)
    except Exception as e:  # noqa: BLE001 - any failure of torch internals: named, then off
        options, failed = {}, {n: f"{type(e).__name__}: {e}"
                               for n, on in inductor_patches.items() if on}
    if failed:
        lost = (" (float32 sums whose size crosses 4096 recompile the graph)"
                if "sum_guard" in failed else "")
        warn_once("compile.cpu_patches: cannot apply " + "; ".join(
            f"{n} ({why})" for n, why in failed.items()) + f" on torch {torch.__version__}: "
            f"off{lost}. Inductor's internals differ from the tested ones.")
    return options, applied | {n for n, on in inductor_patches.items()
                               if on and n not in failed}
