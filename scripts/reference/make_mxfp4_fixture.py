#!/usr/bin/env python3
"""Builds the MXFP4 variant of the gpt_oss fixture: engine/tests/fixtures/families/gpt_oss/hf-mxfp4/.

1. Quantizes every layer's expert weights of the committed ``gpt_oss/hf/`` to MXFP4, stored as
   OpenAI's released gpt-oss checkpoints store them: ``model.layers.N.mlp.experts.{gate_up_proj,
   down_proj}_blocks`` uint8 ``[E, out, in/32, 16]`` and ``..._scales`` uint8 ``[E, out, in/32]``
   (out/in = the projection's output/input dims, the transpose of transformers' ``[E, in, out]``
   parameter). A block is 32 consecutive input elements of one output row; its scale byte is an
   E8M0 exponent (2^(byte-127)) with e = the smallest integer such that max|x| <= 6 * 2^e (all-zero
   blocks: byte 0); each x / 2^e is rounded to the nearest E2M1 value (ties to the even code),
   two codes per byte, the LOW nibble the even element. This is the exact inverse of transformers'
   ``integrations/mxfp4.py`` ``_convert_moe_packed_tensors`` / ``FP4_VALUES``. The bf16/float
   ``gate_up_proj``/``down_proj`` are replaced by ``_blocks`` + ``_scales``; every other tensor
   (expert ``_bias``, router, attention, sinks, norms, embeddings, lm_head) is kept, float32.
2. Writes ``hf-mxfp4/``: ``config.json`` (hf/'s plus the released checkpoints'
   ``quantization_config``), ``generation_config.json`` and the tokenizer files copied from hf/,
   ``model.safetensors``.
3. Reference: ``AutoModelForCausalLM.from_pretrained(hf-mxfp4/, quantization_config=
   Mxfp4Config(dequantize=True), dtype=float32)`` (transformers dequantizes the blocks with its
   own ``convert_moe_packed_tensors`` on load), eager attention; checked bit-for-bit against the
   same model built by hand (hf/ with the expert weights replaced by
   ``convert_moe_packed_tensors(blocks, scales, dtype=float32)``). Logits as in
   make_family_fixtures.py (prefill + 8 greedy decode steps, prompts.json) go to
   ``gpt_oss/transformers-mxfp4.safetensors``.
4. Prints max |Δlogit| of the MXFP4 model vs the float fixture (hf/, teacher-forced on the MXFP4
   model's tokens) and how many greedy tokens changed.

Usage: /work/refenv/bin/python scripts/reference/make_mxfp4_fixture.py
Deterministic: rerunning it with the same package versions writes byte-identical files.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file as load_np, save_file as save_np
from safetensors.torch import load_file as load_pt, save_file as save_pt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_family_fixtures import FIXTURES, transformers_logits  # noqa: E402

FAM = FIXTURES / "gpt_oss"
SRC, DST = FAM / "hf", FAM / "hf-mxfp4"
REF = FAM / "transformers-mxfp4.safetensors"
EXPERT_PROJS = ("gate_up_proj", "down_proj")
# As in openai/gpt-oss-20b and -120b config.json.
QUANT_CONFIG = {"quant_method": "mxfp4", "modules_to_not_convert": [
    "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
# E2M1 magnitudes (codes 0..7; bit 3 is the sign), = transformers' FP4_VALUES[:8].
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
MIDPOINTS = (E2M1[1:] + E2M1[:-1]) / 2


def quantize_mxfp4(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """w: float32 [E, in, out] (x @ W). Returns (blocks uint8 [E, out, in/32, 16],
    scales uint8 [E, out, in/32])."""
    e_, n_in, n_out = w.shape
    assert n_in % 32 == 0, w.shape
    x = w.transpose(1, 2).contiguous().double().numpy().reshape(e_, n_out, n_in // 32, 32)
    amax = np.abs(x).max(axis=-1)
    with np.errstate(divide="ignore"):
        exp = np.ceil(np.log2(amax / 6.0))
    exp = np.where(amax > 0, exp, -127.0)
    # Exact: 6 * 2^e is exact in float64, so fix any rounding of log2 either way.
    exp = np.where((amax > 0) & (6.0 * np.exp2(exp - 1) >= amax), exp - 1, exp)
    exp = np.where(6.0 * np.exp2(exp) < amax, exp + 1, exp)
    exp = np.clip(exp, -127, 127)
    v = np.abs(x) / np.exp2(exp)[..., None]           # exact (power-of-two scaling), <= 6
    assert v.max() <= 6.0
    idx = np.searchsorted(MIDPOINTS, v, side="left")   # ties go to the lower code ...
    tie = (idx < len(MIDPOINTS)) & (v == MIDPOINTS[np.minimum(idx, len(MIDPOINTS) - 1)])
    idx = np.where(tie & (idx % 2 == 1), idx + 1, idx)  # ... unless it is odd: ties to even
    codes = (idx | np.where(np.signbit(x), 8, 0)).astype(np.uint8)
    blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
    scales = (exp + 127).astype(np.uint8)
    return torch.from_numpy(np.ascontiguousarray(blocks)), torch.from_numpy(scales)


def load_model(path: Path, **kw):
    import transformers
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path), dtype=torch.float32, attn_implementation="eager", **kw)
    model.eval()
    return model


def write_hf_mxfp4() -> dict[str, torch.Tensor]:
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    src = load_pt(str(SRC / "model.safetensors"))
    out, deq = {}, {}
    for name, t in src.items():
        proj = name.rsplit(".", 1)[-1]
        if ".mlp.experts." in name and proj in EXPERT_PROJS:
            blocks, scales = quantize_mxfp4(t)
            out[name + "_blocks"], out[name + "_scales"] = blocks, scales
            d = convert_moe_packed_tensors(blocks, scales, dtype=torch.float32)
            assert d.shape == t.shape, (name, d.shape, t.shape)
            # Every dequantized value is within half an E2M1 step (<= 2^e) of the original.
            step = torch.ldexp(torch.ones(scales.shape), scales.to(torch.int32) - 127)
            err = (d - t).abs().transpose(1, 2).reshape(*scales.shape, 32)
            assert bool((err <= step[..., None]).all()), name
            deq[name] = d
        else:
            out[name] = t.contiguous()
    if DST.exists():
        shutil.rmtree(DST)
    DST.mkdir()
    cfg = json.loads((SRC / "config.json").read_text())
    cfg["quantization_config"] = QUANT_CONFIG
    (DST / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    for f in sorted(SRC.iterdir()):
        if f.name not in ("config.json", "model.safetensors"):
            shutil.copyfile(f, DST / f.name)
    save_pt(out, str(DST / "model.safetensors"), metadata={"format": "pt"})
    for f in DST.iterdir():
        f.chmod(0o644)
    return deq


def main() -> None:
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    from transformers import Mxfp4Config
    deq = write_hf_mxfp4()
    prompts = json.loads((FAM / "prompts.json").read_text())["prompts"]

    # Reference: transformers loads hf-mxfp4/ itself, dequantizing to float32 on CPU.
    direct = load_model(DST, quantization_config=Mxfp4Config(dequantize=True))
    # Cross-check: hf/ with the expert weights replaced by convert_moe_packed_tensors' output.
    manual = load_model(SRC)
    params = dict(manual.named_parameters())
    with torch.no_grad():
        for name, d in deq.items():
            params[name].copy_(d)
    for name, p in direct.named_parameters():
        assert p.dtype == torch.float32, (name, p.dtype)
        assert torch.equal(p, params[name]), name
    floatm = load_model(SRC)
    base_ref = load_np(str(FAM / "transformers.safetensors"))
    tensors, d_manual, d_float, lmax, changed, total = {}, 0.0, 0.0, 0.0, 0, 0
    for i, p in enumerate(prompts):
        toks, logits = transformers_logits(direct, p)
        toks_m, logits_m = transformers_logits(manual, p)
        assert np.array_equal(toks, toks_m)
        d_manual = max(d_manual, float(np.max(np.abs(logits - logits_m))))
        tensors[f"p{i}.tokens"], tensors[f"p{i}.logits"] = toks, logits
        with torch.no_grad():  # the float model, teacher-forced on the MXFP4 model's tokens
            fl = floatm(input_ids=torch.tensor([toks.tolist()])).logits[0].numpy()
        d_float = max(d_float, float(np.max(np.abs(logits - fl))))
        lmax = max(lmax, float(np.max(np.abs(fl))))
        changed += int(np.sum(toks[len(p):] != base_ref[f"p{i}.tokens"][len(p):]))
        total += len(toks) - len(p)
    save_np(tensors, str(REF))
    REF.chmod(0o644)
    print(f"gpt_oss: hf-mxfp4/ + {REF.name} written; Mxfp4Config(dequantize=True) load vs "
          f"hand-dequantized model: max|Δlogit| {d_manual:.3e}; MXFP4 vs float hf/: "
          f"max|Δlogit| {d_float:.4f} (max|logit| {lmax:.2f}, relative {d_float / lmax:.3f}); "
          f"greedy tokens changed {changed}/{total}")


if __name__ == "__main__":
    main()
