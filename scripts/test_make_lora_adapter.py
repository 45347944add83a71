#!/usr/bin/env python3
"""Self-test of scripts/make-lora-adapter.py: python3 scripts/test_make_lora_adapter.py

Runs the script as a command and reads what it wrote back with the safetensors package.
Needs numpy, safetensors and gguf (python3 -m pip install numpy safetensors gguf). The case on the
real default model is skipped when models/SmolLM2-135M-Instruct.Q4_1.gguf is absent ($PAGODA_MODEL_DIR
names another models directory, as for scripts/fetch-default-model.sh; a git worktree has none).
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "make-lora-adapter.py")
MODEL_DIR = os.environ.get("PAGODA_MODEL_DIR", os.path.join(HERE, "..", "models"))
GGUF = os.path.join(MODEL_DIR, "SmolLM2-135M-Instruct.Q4_1.gguf")
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# hidden 64, intermediate 96, 3 layers, 4 heads, 2 kv heads, head_dim 24 (not hidden/heads)
SHAPE = "64,96,3,4,2,24"
IN_OUT = {"q_proj": (64, 96), "k_proj": (64, 48), "v_proj": (64, 48), "o_proj": (96, 64),
          "gate_proj": (64, 96), "up_proj": (64, 96), "down_proj": (96, 64)}


def key(layer, module, ab):
    block = "self_attn" if module in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
    return f"base_model.model.model.layers.{layer}.{block}.{module}.lora_{ab}.weight"


def split_safetensors(path):
    """(header, data) of a safetensors file, read by hand (numpy has no bfloat16)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), f.read()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class MakeLoraAdapterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_script(self, *args, out="adapter", expect=0):
        out = os.path.join(self.tmp.name, out)
        proc = subprocess.run([sys.executable, SCRIPT, "--out", out, *args], capture_output=True, text=True)
        self.assertEqual(proc.returncode, expect, proc.stdout + proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        return out, proc

    def make(self, *args, out="adapter"):
        return self.run_script(*(args or ("--shape", SHAPE, "--rank", "4")), out=out)[0]

    def config(self, out):
        with open(os.path.join(out, "adapter_config.json")) as f:
            return json.load(f)

    def weights(self, out):
        return os.path.join(out, "adapter_model.safetensors")

    def test_names_shapes_dtype_metadata(self):
        out, proc = self.run_script("--shape", SHAPE, "--rank", "4")
        self.assertIn(out, proc.stdout)
        self.assertIn("42 tensors", proc.stdout)
        tensors = load_file(self.weights(out))
        expected = {key(i, m, ab) for i in range(3) for m in TARGETS for ab in "AB"}
        self.assertEqual(set(tensors), expected)
        for i in range(3):
            for m, (fan_in, fan_out) in IN_OUT.items():
                self.assertEqual(tensors[key(i, m, "A")].shape, (4, fan_in))
                self.assertEqual(tensors[key(i, m, "B")].shape, (fan_out, 4))
        self.assertTrue(all(t.dtype == np.float32 for t in tensors.values()))
        with safe_open(self.weights(out), "numpy") as f:
            self.assertEqual(f.metadata(), {"format": "pt"})

    def test_values_follow_documented_order(self):
        out = self.make("--shape", SHAPE, "--rank", "4", "--seed", "5", "--targets", "v_proj,down_proj")
        tensors = load_file(self.weights(out))
        rng = np.random.default_rng(5)
        for layer in range(3):
            for m in ("v_proj", "down_proj"):
                fan_in, fan_out = IN_OUT[m]
                a = rng.uniform(-1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in), size=(4, fan_in))
                b = rng.normal(0, 0.02, size=(fan_out, 4))
                np.testing.assert_array_equal(tensors[key(layer, m, "A")], a.astype(np.float32))
                np.testing.assert_array_equal(tensors[key(layer, m, "B")], b.astype(np.float32))
        self.assertTrue(np.any(tensors[key(0, "v_proj", "B")] != 0))

    def test_bytes_match_safetensors_save_file(self):
        for dtype in ("float32", "float16"):
            out = self.make("--shape", SHAPE, "--rank", "4", "--dtype", dtype, out=dtype)
            again = os.path.join(self.tmp.name, dtype + ".again")
            save_file(load_file(self.weights(out)), again, metadata={"format": "pt"})
            self.assertEqual(read_bytes(self.weights(out)), read_bytes(again), dtype)

    def test_dtypes(self):
        f32 = load_file(self.weights(self.make("--shape", SHAPE, "--rank", "4", out="f32")))
        f16 = load_file(self.weights(self.make("--shape", SHAPE, "--rank", "4", "--dtype", "float16", out="f16")))
        self.assertTrue(all(t.dtype == np.float16 for t in f16.values()))
        bf16 = self.weights(self.make("--shape", SHAPE, "--rank", "4", "--dtype", "bfloat16", out="bf16"))
        head, raw = split_safetensors(bf16)
        self.assertEqual(head["__metadata__"], {"format": "pt"})
        for name, ref in f32.items():
            self.assertEqual(head[name]["dtype"], "BF16")
            self.assertEqual(head[name]["shape"], list(ref.shape))
            start, end = head[name]["data_offsets"]
            bits = np.frombuffer(raw[start:end], dtype="<u2").astype(np.uint32) << 16
            np.testing.assert_allclose(bits.view(np.float32).reshape(ref.shape), ref, rtol=2 ** -8, atol=0)
            np.testing.assert_allclose(f16[name].astype(np.float32), ref, rtol=1e-3, atol=1e-6)

    def test_determinism(self):
        a = self.make("--shape", SHAPE, "--rank", "4", out="a")
        b = self.make("--shape", SHAPE, "--rank", "4", out="b")
        c = self.make("--shape", SHAPE, "--rank", "4", "--seed", "1", out="c")
        for name in ("adapter_model.safetensors", "adapter_config.json"):
            self.assertEqual(read_bytes(os.path.join(a, name)), read_bytes(os.path.join(b, name)))
        self.assertNotEqual(read_bytes(self.weights(a)), read_bytes(self.weights(c)))

    def test_config_fields(self):
        out = self.make("--shape", SHAPE, "--rank", "8", "--alpha", "16", "--targets", "q_proj,v_proj")
        cfg = self.config(out)
        expected = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 8, "lora_alpha": 16, "lora_dropout": 0.0,
                    "target_modules": ["q_proj", "v_proj"], "bias": "none", "fan_in_fan_out": False,
                    "use_rslora": False, "use_dora": False, "modules_to_save": None, "inference_mode": True,
                    "init_lora_weights": True, "layers_to_transform": None, "layers_pattern": None,
                    "rank_pattern": {}, "alpha_pattern": {}, "revision": None,
                    "base_model_name_or_path": "synthetic"}
        self.assertEqual({k: cfg[k] for k in expected}, expected)
        self.assertEqual(len(load_file(self.weights(out))), 3 * 2 * 2)

    def test_rslora_layers_and_name(self):
        out, proc = self.run_script("--shape", SHAPE, "--rank", "4", "--rslora", "--layers", "2,0",
                                    "--base-model-name", "org/model", "--targets", "all")
        cfg = self.config(out)
        self.assertTrue(cfg["use_rslora"])
        self.assertEqual(cfg["layers_to_transform"], [0, 2])
        self.assertEqual(cfg["base_model_name_or_path"], "org/model")
        self.assertEqual(cfg["target_modules"], TARGETS)
        self.assertIn("scale 16 (rslora)", proc.stdout)
        self.assertEqual({k.split(".")[4] for k in load_file(self.weights(out))}, {"0", "2"})

    def test_hf_directory_base(self):
        base = os.path.join(self.tmp.name, "Tiny-Llama")
        os.makedirs(base)
        with open(os.path.join(base, "config.json"), "w") as f:
            json.dump({"hidden_size": 32, "intermediate_size": 80, "num_hidden_layers": 2,
                       "num_attention_heads": 4}, f)  # kv heads and head_dim default
        out = self.make("--base", base, "--rank", "2")
        tensors = load_file(self.weights(out))
        self.assertEqual(tensors[key(1, "k_proj", "B")].shape, (32, 2))
        self.assertEqual(tensors[key(1, "down_proj", "A")].shape, (2, 80))
        self.assertEqual(self.config(out)["base_model_name_or_path"], "Tiny-Llama")

    @unittest.skipUnless(os.path.exists(GGUF), "default model not fetched (scripts/fetch-default-model.sh)")
    def test_gguf_base(self):
        out = self.make("--base", GGUF, "--rank", "8", "--layers", "0,29")
        tensors = load_file(self.weights(out))
        self.assertEqual(len(tensors), 2 * 7 * 2)
        shapes = {"q_proj": (576, 576), "k_proj": (576, 192), "v_proj": (576, 192), "o_proj": (576, 576),
                  "gate_proj": (576, 1536), "up_proj": (576, 1536), "down_proj": (1536, 576)}
        for m, (fan_in, fan_out) in shapes.items():
            self.assertEqual(tensors[key(29, m, "A")].shape, (8, fan_in))
            self.assertEqual(tensors[key(29, m, "B")].shape, (fan_out, 8))
        self.assertEqual(self.config(out)["base_model_name_or_path"], "SmolLM2-135M-Instruct.Q4_1.gguf")
        self.run_script("--base", GGUF, "--layers", "30", out="bad", expect=2)

    def test_broken_kinds(self):
        def broken(kind):
            return self.make("--shape", SHAPE, "--rank", "4", "--broken", kind, out=kind)

        out = broken("missing-weights")
        self.assertEqual(os.listdir(out), ["adapter_config.json"])
        self.assertEqual(self.config(out)["peft_type"], "LORA")
        out = broken("bad-config")
        with self.assertRaises(ValueError):
            self.config(out)
        self.assertEqual(len(load_file(self.weights(out))), 42)
        out = broken("dora")
        self.assertTrue(self.config(out)["use_dora"])
        self.assertEqual(self.config(out)["modules_to_save"], None)
        self.assertEqual(self.config(broken("modules-to-save"))["modules_to_save"], ["lm_head"])
        tensors = load_file(self.weights(broken("wrong-shape")))
        self.assertEqual(tensors[key(0, "q_proj", "B")].shape, (97, 4))
        self.assertEqual(tensors[key(1, "q_proj", "B")].shape, (96, 4))
        self.assertEqual(tensors[key(0, "k_proj", "B")].shape, (48, 4))
        out = broken("embedding")
        self.assertIn("embed_tokens", self.config(out)["target_modules"])
        tensors = load_file(self.weights(out))
        self.assertEqual(tensors["base_model.model.model.embed_tokens.lora_embedding_A"].shape, (4, 256))
        self.assertEqual(tensors["base_model.model.model.embed_tokens.lora_embedding_B"].shape, (64, 4))

    def test_user_errors_exit_2(self):
        out = self.make()
        _, proc = self.run_script("--shape", SHAPE, out="adapter", expect=2)
        self.assertIn("not empty", proc.stderr)
        self.run_script("--shape", SHAPE, "--seed", "3", "--force", out="adapter")
        self.assertEqual(sorted(os.listdir(out)), ["adapter_config.json", "adapter_model.safetensors"])
        self.run_script("--shape", SHAPE, "--broken", "missing-weights", "--force", out="adapter")
        self.assertEqual(os.listdir(out), ["adapter_config.json"])
        for args in (["--shape", "64,96,3"], ["--shape", SHAPE, "--targets", "lm_head"],
                     ["--shape", SHAPE, "--layers", "3"], ["--base", os.path.join(self.tmp.name, "nope")],
                     ["--shape", SHAPE, "--rank", "0"], [], ["--base", SCRIPT]):
            _, proc = self.run_script(*args, out="err", expect=2)
            self.assertIn("error", proc.stderr)


if __name__ == "__main__":
    unittest.main()
