#!/usr/bin/env bash
# The GPU check (issues 28 and 48), for the minutes a GPU is lent: CUDA tests, then
# end-to-end epochs of user-churn, item-sales and user-item-purchase (experiment=gpu and
# the default; eager, compiled, CUDA graphs over buckets, buckets; the loader in the
# process; the host-overhead rows), each row profiled and timed with its loader alone and
# its step alone, within a budget of 450 s, in parts most wanted first: `--part 1` the
# CUDA tests and the rows asked for first, then `--part 2`, 3, 4 (rdl/bench/gpu_plan.py;
# python -m rdl.bench gpu --help). Writes gpu.md, gpu.json, tests.txt and logs.tgz under
# $OUT (default outputs/gpu). Arguments go to python -m rdl.bench gpu.
#
# The device machine has torch, PyG, Lightning and torchmetrics but no network: the other
# packages travel as wheels in .whl/ (made here by benchmarks/gpu-wheels.sh; device call
# with carry [".whl"]), installed where they are missing.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-outputs/gpu}
if ! "${PYTHON:=python3}" -c "import torch_frame, hydra, duckdb, lightgbm" 2>/dev/null \
    && ls .whl/*.whl >/dev/null 2>&1; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/rdl-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/rdl-site:$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
PYTHONUNBUFFERED=1 exec "$PYTHON" -m rdl.bench gpu --out "$OUT" "$@"
