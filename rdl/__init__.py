"""rdl: relational deep learning on PyG, PyTorch Frame and Lightning."""
from pathlib import Path

__version__ = "0.1.0"

#: The repository root, where ``conf/`` and ``tasks/`` live (rdl is installed editable).
ROOT = Path(__file__).resolve().parents[1]
