#!/usr/bin/env python3
"""Builds the LoRA reference fixtures in engine/tests/fixtures/families/<family>/.

For every family in LORA_TARGETS this script

1. loads the committed fixture model ``<family>/hf/`` with transformers (float32, eager attention,
   exactly as make_family_fixtures.py loads it for its logits);
2. wraps it with PEFT (``get_peft_model``, ``LoraConfig(r=4, lora_alpha=8, lora_dropout=0,
   bias="none")``, target_modules = the family's attention + MLP projections, attention only for
   the MoE families) and re-draws every LoRA weight from a fixed ``torch.Generator`` (seed
   ``LORA_SEED_BASE + family seed``): ``lora_A`` ~ U(-1/sqrt(in), 1/sqrt(in)), ``lora_B`` ~
   U(-b, b) with b = 0.05 * B_GAIN (1; granite 8, gemma3 2); PEFT initialises B to zero (a no-op
   adapter);
3. saves the adapter with PEFT's own ``save_pretrained(safe_serialization=True)`` into
   ``<family>/lora/`` (``adapter_config.json`` + ``adapter_model.safetensors``; the model-card
   README.md PEFT writes is removed, ``base_model_name_or_path`` is the repo-relative ``hf/``);
4. reloads the base model, applies the saved adapter with ``PeftModel.from_pretrained`` (so the
   reference is what ``lora/`` holds; no merging) and runs the same procedure as
   make_family_fixtures.py on the family's prompts.json: one prefill forward over the prompt, then
   8 greedy decode steps with the KV cache, the greedy tokens chosen by the ADAPTED model; writes
   ``<family>/transformers-lora.safetensors`` (``p{i}.tokens`` int64 [len+8], ``p{i}.logits``
   float32 [len+8, vocab], the format of transformers.safetensors);
5. prints max |Δlogit| adapter vs base (base = the same model with the adapter disabled, one
   forward over the same tokens) and how many greedy tokens differ from transformers.safetensors.

Usage (from the repository root, with the reference venv; see scripts/reference/README.md)::

    /work/refenv/bin/python scripts/reference/make_lora_fixtures.py                  # all families
    /work/refenv/bin/python scripts/reference/make_lora_fixtures.py --family qwen3   # one family

Deterministic: rerunning it with the same package versions (requirements.txt; peft 0.21.2) writes
byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file as load_np, save_file as save_np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Importing it has no side effects (main() runs only as a script).
from make_family_fixtures import (FIXTURES, N_SPECIAL, REPO, families,  # noqa: E402
                                  transformers_logits)

LORA_R = 4
LORA_ALPHA = 8
LORA_SEED_BASE = 100
# lora_B ~ U(-b, b), b = 0.05 * B_GAIN[family] (default 1). With scaling alpha/r = 2 the update
# 2 * B @ A has std ~ b * 4 / (3 sqrt(in)) ~ 0.008 for in = 64 against the base weights'
# N(0, 0.15): it clearly moves the logits but keeps the model sane. granite (embedding_multiplier
# 12, residual_multiplier 0.3) and gemma3 (embeddings scaled by sqrt(hidden), 6 layers) let the
# embeddings dominate the residual stream, so their layers (and adapters) move the logits less.
B_RANGE = 0.05
B_GAIN = {"granite": 8.0, "gemma3": 2.0}

ATTN = ["q_proj", "k_proj", "v_proj", "o_proj"]
DENSE = ATTN + ["gate_proj", "up_proj", "down_proj"]
PHI3 = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]
# Hugging Face module names adapted per family (MoE: attention only; their experts are fused 3-D
# parameters in transformers 5 and the router is `mlp.gate`, neither is matched).
LORA_TARGETS = {
    "llama3": DENSE, "mistral": DENSE, "qwen2": DENSE, "qwen3": DENSE, "gemma2": DENSE,
    "gemma3": DENSE, "phi3": PHI3, "granite": DENSE, "mixtral": ATTN, "qwen3moe": ATTN,
}


def load_base(fam):
    import transformers
    hf = FIXTURES / fam.id / "hf"
    model = getattr(transformers, fam.model_class).from_pretrained(
        str(hf), dtype=torch.float32, attn_implementation="eager")
    model.eval()
    return model


def lora_config(fam_id: str):
    from peft import LoraConfig
    return LoraConfig(
        r=LORA_R, lora_alpha=LORA_ALPHA, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
        target_modules=list(LORA_TARGETS[fam_id]), use_rslora=False, init_lora_weights=True)


def check_targets(fam_id: str, expected: list[str], peft_model) -> list[str]:
    """The adapted modules are exactly the base model's nn.Linear projections named in
    LORA_TARGETS (every layer), and no expert, router or lm_head."""
    from peft.tuners.lora import LoraLayer
    adapted = [n for n, m in peft_model.named_modules() if isinstance(m, LoraLayer)]
    got = [n.removeprefix("base_model.model.") for n in adapted]
    assert got == expected, (fam_id, got, expected)
    n_layers = peft_model.get_base_model().config.num_hidden_layers
    assert len(got) == n_layers * len(LORA_TARGETS[fam_id]), (fam_id, len(got))
    for n in got:
        assert "expert" not in n and ".gate." not in n and "router" not in n and "lm_head" not in n, n
        if fam_id in ("mixtral", "qwen3moe"):
            assert ".self_attn." in n, n
    return got


def set_lora_weights(peft_model, seed: int, b_range: float) -> None:
    """Re-draws every lora_A / lora_B in named_parameters() order from one generator."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if ".lora_A." in name:
                a = 1.0 / math.sqrt(p.shape[1])          # lora_A: [r, in_features]
            elif ".lora_B." in name:
                a = b_range                              # lora_B: [out_features, r]
            else:
                continue
            p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float32) * 2 - 1) * a)


def save_adapter(fam, peft_model) -> Path:
    out = FIXTURES / fam.id / "lora"
    if out.exists():
        shutil.rmtree(out)
    # Repo-relative, so adapter_config.json does not depend on where the checkout lives.
    cfg = peft_model.peft_config["default"]
    cfg.base_model_name_or_path = str((FIXTURES / fam.id / "hf").relative_to(REPO))
    # PEFT keeps target_modules as a set (its JSON order would follow PYTHONHASHSEED).
    cfg.target_modules = sorted(cfg.target_modules)
    peft_model.save_pretrained(str(out), safe_serialization=True)
    readme = out / "README.md"
    if readme.exists():
        readme.unlink()
    names = sorted(p.name for p in out.iterdir())
    assert names == ["adapter_config.json", "adapter_model.safetensors"], names
    for f in out.iterdir():
        f.chmod(0o644)  # safetensors writes 0600
    return out


def make_family(fam) -> dict:
    from peft import PeftModel, get_peft_model
    d = FIXTURES / fam.id
    prompts = json.loads((d / "prompts.json").read_text())["prompts"]

    # 1-3: base model + PEFT wrapper + deterministic weights, saved by PEFT.
    base_model = load_base(fam)
    expected = [n for n, m in base_model.named_modules()
                if isinstance(m, torch.nn.Linear) and n.split(".")[-1] in LORA_TARGETS[fam.id]]
    peft_model = get_peft_model(base_model, lora_config(fam.id))
    adapted = check_targets(fam.id, expected, peft_model)
    set_lora_weights(peft_model, LORA_SEED_BASE + fam.seed, B_RANGE * B_GAIN.get(fam.id, 1.0))
    out = save_adapter(fam, peft_model)
    del peft_model

    # 4: reference logits from the adapter as saved (fresh base + PeftModel.from_pretrained).
    model = PeftModel.from_pretrained(load_base(fam), str(out), is_trainable=False)
    model.eval()
    saved = load_np(str(out / "adapter_model.safetensors"))
    live = {n: p.detach().numpy() for n, p in model.named_parameters() if ".lora_" in n}
    assert len(saved) == len(live) == 2 * len(adapted), (len(saved), len(live))
    base_ref = load_np(str(d / "transformers.safetensors"))
    tensors, dmax, lmax, changed, total = {}, 0.0, 0.0, 0, 0
    for i, p in enumerate(prompts):
        toks, logits = transformers_logits(model, p)
        tensors[f"p{i}.tokens"] = toks
        tensors[f"p{i}.logits"] = logits
        greedy = toks[len(p):]
        if np.any(greedy < N_SPECIAL):
            print(f"warning: {fam.id} p{i} greedy tokens include a special id: {greedy}")
        # 5: base logits for the same tokens (adapter disabled, one teacher-forced forward).
        with torch.no_grad(), model.disable_adapter():
            base = model(input_ids=torch.tensor([toks.tolist()])).logits[0].numpy()
        dmax = max(dmax, float(np.max(np.abs(logits - base))))
        lmax = max(lmax, float(np.max(np.abs(base))))
        changed += int(np.sum(greedy != base_ref[f"p{i}.tokens"][len(p):]))
        total += len(greedy)
    save_np(tensors, str(d / "transformers-lora.safetensors"))
    key = next(k for k in sorted(saved) if "layers.0.self_attn.q" in k)
    res = dict(id=fam.id, dmax=dmax, lmax=lmax, rel=dmax / lmax, changed=changed, total=total,
               n_tensors=len(saved), example_key=key, example_shape=tuple(saved[key].shape),
               adapter_bytes=(out / "adapter_model.safetensors").stat().st_size)
    print(f"{fam.id}: lora/ ({res['n_tensors']} tensors, {res['adapter_bytes']} B) + "
          f"transformers-lora.safetensors; max|Δlogit| vs base {dmax:.3f} "
          f"(max|logit| {lmax:.2f}, relative {res['rel']:.3f}); greedy tokens changed "
          f"{changed}/{total}; e.g. {key} {list(res['example_shape'])}")
    if res["rel"] < 0.05:
        print(f"warning: {fam.id}: the adapter moves the logits by less than 5% of max|logit|")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", action="append", help="family id (repeatable); default: all")
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    fams = [f for f in families() if f.id in LORA_TARGETS]
    for name in args.family or []:
        if name not in LORA_TARGETS:
            ap.error(f"unknown family {name!r}; known: {', '.join(LORA_TARGETS)}")
    chosen = fams if not args.family else [f for f in fams if f.id in set(args.family)]
    for fam in chosen:
        make_family(fam)


if __name__ == "__main__":
    main()
