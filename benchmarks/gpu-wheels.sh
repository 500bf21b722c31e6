#!/usr/bin/env bash
# Wheels for the GPU machine (Python 3.12, x86-64, no network), put in .whl/ (ignored by
# git): what rdl needs beyond that machine's image (torch, PyG, Lightning, torchmetrics,
# pandas, pyarrow, scipy and scikit-learn are there). benchmarks/gpu.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
platforms="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
# hydra-core 1.3 wants omegaconf < 2.4 and antlr4 4.9 (a source release: built here,
# pure Python).
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp $platforms -d .whl \
  pytorch-frame hydra-core "omegaconf>=2.2,<2.4" duckdb lightgbm
python3 -m pip wheel -q --no-deps -w .whl "antlr4-python3-runtime==4.9.3"
ls .whl
