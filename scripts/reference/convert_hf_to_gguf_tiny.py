#!/usr/bin/env python3
"""Runs llama.cpp's own convert_hf_to_gguf.py unchanged, except for one thing: a BPE tokenizer
whose pre-tokenizer llama.cpp does not recognise is written as tokenizer.ggml.pre = "default"
instead of aborting the conversion.

Why: for families whose converter only takes a tokenizer.json (Qwen2-MoE, Qwen3-MoE, GPT-OSS: the
base TextModel.set_vocab -> _set_vocab_gpt2), the converter identifies the pre-tokenizer by
hashing the token ids of a fixed test string and raises NotImplementedError for any hash not in
its table. The fixtures' tokenizers are tiny, self-trained BPEs, so their hash can never be in the
table. The engine under test only consumes token ids, so the pre-tokenizer name is irrelevant to
the logits; every tensor and every other hyperparameter is converted by llama.cpp's code as is.
Families with a SentencePiece tokenizer.model never reach this code path.

Usage:
    python convert_hf_to_gguf_tiny.py /path/to/llama.cpp/convert_hf_to_gguf.py MODEL_DIR [converter args...]
"""

import runpy
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    script = Path(sys.argv[1]).resolve()
    root = script.parent
    # The same import setup convert_hf_to_gguf.py does itself (llama.cpp's gguf-py first).
    sys.path.insert(0, str(root))
    sys.path.insert(1, str(root / "gguf-py"))
    import conversion.base as base  # noqa: E402

    original = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer) -> str:
        try:
            return original(self, tokenizer)
        except NotImplementedError:
            base.logger.warning("convert_hf_to_gguf_tiny: unrecognised BPE pre-tokenizer "
                                "(a self-trained tiny tokenizer); writing tokenizer.ggml.pre = 'default'")
            return "default"

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    sys.argv = [str(script)] + sys.argv[2:]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
