#!/usr/bin/env bash
# The GPU check (issue 28), for the minutes a GPU is lent: CUDA tests, then end-to-end
# epochs of user-churn and item-sales (experiment=gpu and the default; eager, compiled,
# CUDA graphs over buckets, buckets; the host-overhead rows), each row profiled, within
# a budget of 450 s (python -m rdl.bench gpu --help). Writes gpu.md, gpu.json, tests.txt
# and logs.tgz under $OUT (default outputs/gpu). Arguments go to python -m rdl.bench gpu.
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
