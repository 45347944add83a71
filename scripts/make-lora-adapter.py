#!/usr/bin/env python3
"""Write a LoRA adapter with random weights, in PEFT's on-disk format, for a Llama-family base model.

Tests, benchmarks and users of `pagoda-server --enable-lora --lora-modules name=DIR` need adapters
whose shapes fit a given base model. Training one is beside the point; this script writes what
PEFT's `save_pretrained` would write, with weights drawn from a fixed seed:

  DIR/adapter_config.json        LoraConfig as PEFT saves it (indent 2, sorted keys)
  DIR/adapter_model.safetensors  metadata {"format": "pt"}; for each layer i and target module:
      base_model.model.model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_A.weight  [r, in_features]
      base_model.model.model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_B.weight  [out_features, r]
      base_model.model.model.layers.{i}.mlp.{gate,up,down}_proj.lora_{A,B}.weight
  (PEFT strips the adapter name, e.g. ".default", from saved keys.)

Shapes come from --base (a Hugging Face model directory's config.json, or a .gguf file's metadata)
or from --shape hidden,intermediate,layers,heads,kv_heads[,head_dim]:
  q_proj hidden -> heads*head_dim    k_proj, v_proj hidden -> kv_heads*head_dim
  o_proj heads*head_dim -> hidden    gate_proj, up_proj hidden -> intermediate
  down_proj intermediate -> hidden

Weights: numpy.random.default_rng(--seed), drawn in this order: for each layer (ascending), for
each module in --targets order, A ~ uniform(-1/sqrt(in), 1/sqrt(in)) and then B ~ normal(0, --b-std)
(PEFT initialises B to zero, which makes an adapter a no-op; tests need an effect). Draws are
float64, then cast (bfloat16: round to nearest even). Same arguments and numpy -> same bytes.
Note that --layers changes which draws land where: layer 3 of a subset differs from layer 3 of a
full adapter. The adapter's scale is alpha/r, or alpha/sqrt(r) with --rslora.

--broken KIND writes a deliberately defective adapter, for error-path tests:
  missing-weights  adapter_config.json only, no adapter_model.safetensors
  bad-config       adapter_config.json is not JSON (the weights are fine)
  dora             "use_dora": true (weights are plain LoRA, no lora_magnitude_vector)
  modules-to-save  "modules_to_save": ["lm_head"] (config only; no lm_head tensor)
  wrong-shape      the first lora_B tensor (first layer, first target) has out_features + 1 rows
  embedding        target_modules also lists "embed_tokens", and the weights hold
                   base_model.model.model.embed_tokens.lora_embedding_A [r, vocab] and
                   ...lora_embedding_B [hidden, r] (vocab from the base; 256 with --shape)

Examples:
  scripts/make-lora-adapter.py --base models/SmolLM2-135M-Instruct.Q4_1.gguf --out /tmp/lora-a
  scripts/make-lora-adapter.py --shape 576,1536,30,9,3 --out /tmp/lora-b --rank 8 --targets q_proj,v_proj
  scripts/make-lora-adapter.py --base /models/Llama-3.2-1B --out /tmp/lora-c --seed 7 --dtype bfloat16 --layers 0,1
  scripts/make-lora-adapter.py --shape 64,128,2,4,2 --out /tmp/bad --broken wrong-shape

Needs numpy (and gguf for a .gguf base): python3 -m pip install numpy safetensors gguf
The safetensors file is written directly, byte for byte as safetensors' save_file lays it out
(safetensors.numpy cannot write bfloat16); scripts/test_make_lora_adapter.py checks both agree.
"""
import argparse
import json
import math
import os
import struct
import sys
from collections import namedtuple

ALL_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
BROKEN_KINDS = ["missing-weights", "bad-config", "dora", "modules-to-save", "wrong-shape", "embedding"]
DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
PREFIX = "base_model.model.model."
Dims = namedtuple("Dims", "hidden intermediate layers heads kv_heads head_dim vocab")


class UserError(Exception):
    """A problem with the arguments or inputs: reported in one line, exit code 2."""


def need(module):
    try:
        return __import__(module)
    except ImportError:
        raise UserError(f"python module '{module}' is missing: python3 -m pip install numpy safetensors gguf")


def dims_from_shape(text):
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        v = []
    if len(v) not in (5, 6) or min(v) <= 0:
        raise UserError(f"--shape wants 5 or 6 positive integers hidden,intermediate,layers,heads,kv_heads[,head_dim], got '{text}'")
    return Dims(*v[:5], v[5] if len(v) == 6 else v[0] // v[3], 256)


def dims_from_hf(path):
    try:
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {path}/config.json: {e}")
    cfg = cfg.get("text_config", cfg) if "hidden_size" not in cfg else cfg
    try:
        heads = cfg["num_attention_heads"]
        return Dims(cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], heads,
                    cfg.get("num_key_value_heads") or heads,
                    cfg.get("head_dim") or cfg["hidden_size"] // heads, cfg.get("vocab_size", 256))
    except KeyError as e:
        raise UserError(f"{path}/config.json has no {e}")


def gguf_value(field):
    if hasattr(field, "contents"):  # gguf >= 0.10
        return field.contents()
    value = field.parts[field.data[0]]
    return bytes(value).decode() if field.types and field.types[0].name == "STRING" else value[0]


def dims_from_gguf(path):
    try:
        reader = need("gguf").GGUFReader(path)
    except UserError:
        raise
    except Exception as e:  # the reader raises assorted errors on a damaged file
        raise UserError(f"cannot read GGUF file {path}: {e}")

    def get(key, default=None):
        if key in reader.fields:
            return gguf_value(reader.fields[key])
        if default is None:
            raise UserError(f"{path}: GGUF metadata has no '{key}'")
        return default

    arch = get("general.architecture")
    hidden, heads = int(get(f"{arch}.embedding_length")), int(get(f"{arch}.attention.head_count"))
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    vocab = get(f"{arch}.vocab_size", 0) or (len(tokens.data) if tokens else 256)
    return Dims(hidden, int(get(f"{arch}.feed_forward_length")), int(get(f"{arch}.block_count")), heads,
                int(get(f"{arch}.attention.head_count_kv", heads)),
                int(get(f"{arch}.attention.key_length", hidden // heads)), int(vocab))


def load_dims(args):
    if args.shape:
        return dims_from_shape(args.shape)
    if os.path.isdir(args.base):
        return dims_from_hf(args.base)
    if os.path.isfile(args.base) and args.base.endswith(".gguf"):
        return dims_from_gguf(args.base)
    raise UserError(f"--base '{args.base}' is neither a model directory with config.json nor a .gguf file")


def module_shape(d, module):
    """(in_features, out_features) of a target module."""
    q, kv = d.heads * d.head_dim, d.kv_heads * d.head_dim
    return {"q_proj": (d.hidden, q), "k_proj": (d.hidden, kv), "v_proj": (d.hidden, kv), "o_proj": (q, d.hidden),
            "gate_proj": (d.hidden, d.intermediate), "up_proj": (d.hidden, d.intermediate),
            "down_proj": (d.intermediate, d.hidden)}[module]


def tensor_name(layer, module, ab):
    block = "self_attn" if module in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
    return f"{PREFIX}layers.{layer}.{block}.{module}.lora_{ab}.weight"


def make_tensors(args, d, layers):
    """name -> float64 array, drawn in the documented order."""
    rng = need("numpy").random.default_rng(args.seed)
    r, out = args.rank, {}
    for layer in layers:
        for module in args.targets:
            fan_in, fan_out = module_shape(d, module)
            if args.broken == "wrong-shape" and not out:
                fan_out += 1
            bound = 1.0 / math.sqrt(fan_in)
            out[tensor_name(layer, module, "A")] = rng.uniform(-bound, bound, size=(r, fan_in))
            out[tensor_name(layer, module, "B")] = rng.normal(0.0, args.b_std, size=(fan_out, r))
    if args.broken == "embedding":
        out[PREFIX + "embed_tokens.lora_embedding_A"] = rng.normal(0.0, 1.0, size=(r, d.vocab))
        out[PREFIX + "embed_tokens.lora_embedding_B"] = rng.normal(0.0, args.b_std, size=(d.hidden, r))
    return out


def to_bytes(array, dtype):
    np = need("numpy")
    if dtype == "bfloat16":
        bits = array.astype(np.float32).view(np.uint32)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return bits.astype("<u2").tobytes()
    return array.astype("<f4" if dtype == "float32" else "<f2").tobytes()


def write_safetensors(path, tensors, dtype):
    """safetensors layout as save_file writes it: u64 header length, JSON header (padded with spaces
    to 8 bytes), then the data, tensors sorted by name (all share one dtype)."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        blob = to_bytes(tensors[name], dtype)
        header[name] = {"dtype": DTYPES[dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    write_file(path, struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_file(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def adapter_config(args, layers_arg):
    targets = list(args.targets) + (["embed_tokens"] if args.broken == "embedding" else [])
    return {
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": args.base_model_name,
        "bias": "none", "eva_config": None, "exclude_modules": None, "fan_in_fan_out": False,
        "inference_mode": True, "init_lora_weights": True, "layer_replication": None, "layers_pattern": None,
        "layers_to_transform": layers_arg, "loftq_config": {}, "lora_alpha": args.alpha, "lora_bias": False,
        "lora_dropout": 0.0, "megatron_config": None, "megatron_core": "megatron.core",
        "modules_to_save": ["lm_head"] if args.broken == "modules-to-save" else None,
        "peft_type": "LORA", "r": args.rank, "rank_pattern": {}, "revision": None,
        "target_modules": targets, "task_type": "CAUSAL_LM",
        "use_dora": args.broken == "dora", "use_rslora": args.rslora,
    }


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--base", help="Hugging Face model directory or .gguf file")
    src.add_argument("--shape", help="hidden,intermediate,layers,heads,kv_heads[,head_dim]")
    p.add_argument("--out", required=True, help="adapter directory to write")
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=float, default=32)
    p.add_argument("--targets", default=",".join(ALL_TARGETS), help="comma-separated modules, or 'all'")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rslora", action="store_true", help="use_rslora: scale = alpha/sqrt(r)")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32")
    p.add_argument("--b-std", type=float, default=0.02, help="std of lora_B's normal draw")
    p.add_argument("--layers", help="comma-separated layer indices (layers_to_transform)")
    p.add_argument("--base-model-name", help="base_model_name_or_path (default: --base's basename)")
    p.add_argument("--broken", choices=BROKEN_KINDS, help="write a deliberately defective adapter")
    p.add_argument("--force", action="store_true", help="write into a non-empty --out")
    args = p.parse_args(argv)
    if args.alpha == int(args.alpha):
        args.alpha = int(args.alpha)
    args.targets = ALL_TARGETS if args.targets == "all" else [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = [t for t in args.targets if t not in ALL_TARGETS]
    if unknown or not args.targets or len(set(args.targets)) != len(args.targets):
        p.error(f"--targets: want distinct names among {','.join(ALL_TARGETS)} or 'all', got '{','.join(args.targets)}'")
    if args.rank <= 0 or args.b_std < 0 or args.seed < 0:
        p.error("--rank must be positive, --b-std and --seed non-negative")
    if args.base_model_name is None:
        args.base_model_name = os.path.basename(os.path.normpath(args.base)) if args.base else "synthetic"
    return args


def pick_layers(text, count):
    if text is None:
        return list(range(count)), None
    try:
        layers = sorted({int(x) for x in text.split(",")})
    except ValueError:
        raise UserError(f"--layers wants comma-separated integers, got '{text}'")
    if not layers or layers[0] < 0 or layers[-1] >= count:
        raise UserError(f"--layers {text}: the base has layers 0..{count - 1}")
    return layers, layers


def prepare_out(path, force):
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"--out {path} exists and is not a directory")
    if os.path.isdir(path) and os.listdir(path) and not force:
        raise UserError(f"--out {path} is not empty (pass --force to overwrite the adapter files in it)")
    os.makedirs(path, exist_ok=True)


def main(argv):
    args = parse_args(argv)
    need("numpy")  # before anything is created
    dims = load_dims(args)
    layers, layers_arg = pick_layers(args.layers, dims.layers)
    prepare_out(args.out, args.force)
    weights = os.path.join(args.out, "adapter_model.safetensors")
    tensors = make_tensors(args, dims, layers)
    if args.broken == "missing-weights":
        if os.path.exists(weights):
            os.remove(weights)
    else:
        write_safetensors(weights, tensors, args.dtype)
    config = json.dumps(adapter_config(args, layers_arg), indent=2, sort_keys=True)
    if args.broken == "bad-config":
        config = "{ this is not JSON: " + config[:40]
    write_file(os.path.join(args.out, "adapter_config.json"), config.encode())
    scale = args.alpha / (math.sqrt(args.rank) if args.rslora else args.rank)
    print(args.out)
    extra = " + embed_tokens A,B" if args.broken == "embedding" else ""
    print(f"{0 if args.broken == 'missing-weights' else len(tensors)} tensors ({len(layers)} layers x "
          f"{len(args.targets)} modules x A,B{extra}), rank {args.rank}, alpha {args.alpha}, scale {scale:g}"
          f"{' (rslora)' if args.rslora else ''}, {args.dtype}{f', broken: {args.broken}' if args.broken else ''}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (UserError, OSError) as e:
        print(f"make-lora-adapter: error: {e}", file=sys.stderr)
        sys.exit(2)
