#!/usr/bin/env bash
# First cut of the prepared GPU check (issue 28): CUDA tests, then end-to-end epochs.
# Usage: OUT=dir bash benchmarks/gpu.sh [e2e stage seconds]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-outputs/gpu}; mkdir -p "$OUT"; W=/tmp/rdl-gpu; mkdir -p $W
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
fi
PY=python3
{ nvidia-smi; $PY -c "import torch,torch_geometric,pytorch_lightning as pl,torch_frame;print('torch',torch.__version__,'cuda',torch.version.cuda,'pyg',torch_geometric.__version__,'pl',pl.__version__,'frame',torch_frame.__version__)"; nproc; } > $W/env.txt 2>&1
tail -2 $W/env.txt
timeout 60 $PY -m pytest -q -p no:cacheprovider -m "not slow" -k cuda tests/graph/test_sampler.py tests/training/test_ddp.py 2>&1 | tail -15 | tee $W/tests.txt
T=${1:-300}
timeout $T $PY -m rdl.bench e2e --device cuda --workers 0 --epochs 3 --batches 20 \
  --variants eager dynamic reduce-overhead+buckets buckets --host-overhead --timeout 150 --out $W/e2e 2>&1 | tee $W/e2e.txt
tar czf "$OUT/gpu.tgz" -C $W . ; cp $W/e2e.txt $W/env.txt "$OUT"/ 2>/dev/null; cp $W/e2e/e2e.md "$OUT"/ 2>/dev/null; true
