"""The tasks and variants of ``python -m rdl.bench train``, and their Hydra configs.

Variants (``--variants``, by slug or by name; default: all):

====================  ===============================  ==========================================
slug                  name                             overrides
====================  ===============================  ==========================================
eager                 eager                            ``compile.enabled=false``
dynamic               compile dynamic=True             ``compile.enabled=true`` (the default)
static                compile dynamic=False            ``compile.kwargs.dynamic=false`` (a token
                                                       model then pads its batches: one shape)
dynamic-none          compile dynamic=None             ``compile.kwargs.dynamic=null``
max-autotune          max-autotune-no-cudagraphs       ``+compile.kwargs.mode=max-autotune-no-cudagraphs``
reduce-overhead       reduce-overhead                  ``+compile.kwargs.mode=reduce-overhead`` (CUDA only)
compiled-optimizer    compile + compiled optimizer     ``compile.optimizer=true optimizer.fused=false``
eager-bf16            eager bf16-mixed                 ``compile.enabled=false`` + autocast bf16
bf16                  compile bf16-mixed               ``compile.enabled=true`` + autocast bf16
eager-malloc          eager, malloc defaults           ``compile.enabled=false keep_freed_memory=false``
dynamic-malloc        compile, malloc defaults         ``compile.enabled=true keep_freed_memory=false``
dynamic-nopatch       compile, no CPU patches          ``compile.enabled=true compile.cpu_patches=false``
interleaved           compile dynamic=True, eager      ``compile.enabled=true``; its timed steps
                      interleaved                      alternate with eager steps on the same
                                                       batches, in the same process
====================  ===============================  ==========================================
"""
from __future__ import annotations

ALL_TASKS = ("user-churn:sage", "item-sales:sage", "user-churn:graph-transformer",
             "item-sales:graph-transformer", "user-item-purchase:contextgnn",
             "user-item-purchase:idgnn", "user-item-purchase:two-tower")
COMPILED = ["compile.enabled=true"]
# slug: (name, overrides, autocast bf16, CUDA only)
VARIANTS = {
    "eager": ("eager", ["compile.enabled=false"], False, False),
    "dynamic": ("compile dynamic=True", COMPILED + ["compile.kwargs.dynamic=true"], False, False),
    "static": ("compile dynamic=False", COMPILED + ["compile.kwargs.dynamic=false"], False, False),
    "dynamic-none": ("compile dynamic=None", COMPILED + ["compile.kwargs.dynamic=null"],
                     False, False),
    "max-autotune": ("max-autotune-no-cudagraphs",
                     COMPILED + ["+compile.kwargs.mode=max-autotune-no-cudagraphs"], False, False),
    "reduce-overhead": ("reduce-overhead", COMPILED + ["+compile.kwargs.mode=reduce-overhead"],
                        False, True),
    "compiled-optimizer": ("compile + compiled optimizer",
                           COMPILED + ["compile.optimizer=true", "optimizer.fused=false"],
                           False, False),
    "eager-bf16": ("eager bf16-mixed", ["compile.enabled=false"], True, False),
    "bf16": ("compile bf16-mixed", COMPILED, True, False),
    "eager-malloc": ("eager, malloc defaults", ["compile.enabled=false", "keep_freed_memory=false"],
                     False, False),
    "dynamic-malloc": ("compile, malloc defaults", COMPILED + ["keep_freed_memory=false"],
                       False, False),
    "dynamic-nopatch": ("compile, no CPU patches", COMPILED + ["compile.cpu_patches=false"],
                        False, False),
    "interleaved": ("compile dynamic=True, eager interleaved", COMPILED, False, False),
}


def _compose(overrides: list[str], hydra_config: bool = False):
    from hydra import compose, initialize_config_dir

    import rdl
    with initialize_config_dir(str(rdl.CONF_DIR), version_base="1.3"):
        return compose("config", overrides, return_hydra_config=hydra_config)


def _variant_slugs(names: list[str]) -> list[str]:
    by_name = {v[0].lower(): k for k, v in VARIANTS.items()}
    chosen = set()
    for n in names:
        key = n.strip().lower()
        if key == "all":
            chosen.update(VARIANTS)
        elif key in VARIANTS:
            chosen.add(key)
        elif key in by_name:
            chosen.add(by_name[key])
        else:
            raise SystemExit(f"unknown variant {n!r}; choose from: "
                             + ", ".join(f"{k} ({v[0]})" for k, v in VARIANTS.items()))
    return [k for k in VARIANTS if k in chosen]   # eager first: the ratios need it


def _task_models(items: list[str], sets: list[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        if item == "all":
            out += [tuple(x.split(":")) for x in ALL_TASKS]
            continue
        task, _, model = item.partition(":")
        if not model:   # the task's default model (a link task chooses its own)
            try:
                cfg = _compose([f"task={task}", *sets], hydra_config=True)
            except Exception as e:  # noqa: BLE001 - Hydra's errors name the bad override
                raise SystemExit(f"--tasks {item}: {e}") from None
            model = cfg.hydra.runtime.choices.model
        out.append((task, model))
    return list(dict.fromkeys(out))
