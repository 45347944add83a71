#!/usr/bin/env python3
"""Our server on a Hugging Face directory written by transformers, against transformers itself
(bench/hf_dir_vs_transformers.sh). Needs torch and transformers (and gguf for the conversion).

  convert --gguf FILE --out DIR
      transformers' own GGUF loader: AutoModelForCausalLM / AutoTokenizer.from_pretrained(
      <the file's folder>, gguf_file=<name>), the weights dequantized to float32, then
      save_pretrained(DIR) for both (the model's weights through a plain model of the same config:
      transformers refuses to save a model loaded from GGUF). DIR/pagoda-convert.json records what
      made it.
  query --url URL --dir DIR --out responses.json [--max-tokens 8] [--top 20]
      per fixed prompt: the ids of DIR's tokenizer (our /tokenize must give the same), then one
      /v1/completions request: the ids as `prompt`, greedy, `max_tokens`, `logprobs: top`,
      vLLM's `prompt_logprobs: top`, `return_token_ids`, `return_tokens_as_token_ids`,
      `ignore_eos` (so every prompt generates max_tokens tokens).
  compare --dir DIR --responses responses.json --out result.json [--tolerance 1e-3]
      transformers on DIR in float32, one forward pass over prompt + generated ids, log_softmax
      in float32; every logprob the server returned (each prompt position's token and its top
      entries, each generated token's and its top entries) against the same entry of that row;
      greedy: the row's argmax must be the generated token. Exit 3 when the target is missed.
Run query with the server up and compare after it stopped: never two heavy things at once.
"""
import argparse
import hashlib
import json
import os
import sys
import urllib.request

# Fixed prompts: short text, code, a chat turn through the tokenizer's template, a paragraph.
GPL_PREAMBLE = (
    "  The GNU General Public License is a free, copyleft license for\nsoftware and other kinds "
    "of works.\n\n  The licenses for most software and other practical works are designed\nto "
    "take away your freedom to share and change the works.  By contrast,\nthe GNU General "
    "Public License is intended to guarantee your freedom to\nshare and change all versions of "
    "a program--to make sure it remains free\nsoftware for all its users."
)
PROMPTS = [
    ("text", "The capital of France is"),
    ("code", 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'),
    ("chat", [{"role": "user", "content": "What is the capital of Japan? Answer in one word."}]),
    ("paragraph", GPL_PREAMBLE),
]


def post(url, body, timeout=600):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cmd_convert(args):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where, name = os.path.dirname(os.path.abspath(args.gguf)), os.path.basename(args.gguf)
    stamp = {"gguf": name, "gguf_sha256": sha256(args.gguf), "transformers": transformers.__version__,
             "torch": torch.__version__, "dtype": "float32"}
    marker = os.path.join(args.out, "pagoda-convert.json")
    if os.path.exists(marker) and {k: v for k, v in json.load(open(marker)).items() if k != "saved_via"} == stamp:
        print(f"{args.out}: already converted", file=sys.stderr)
        return
    tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(where, gguf_file=name, dtype=torch.float32)
    # transformers 5.23 refuses save_pretrained on a model loaded from GGUF ("The model is quantized
    # with gguf and is not serializable": its GGUF quantizer says so even when every weight was
    # dequantized, as here, where the `kernels` package is absent). So its dense float32 weights go
    # into a plain model of the same config, less `quantization_config`, which saves as usual.
    dense = [n for n, t in loaded.state_dict().items() if t.dtype != torch.float32]
    if dense:
        sys.exit(f"not dequantized to float32: {dense[:5]}")
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    tokenizer.save_pretrained(args.out)
    model.save_pretrained(args.out)
    stamp["saved_via"] = "from_config + load_state_dict of the GGUF-loaded model (save_pretrained refuses it)"
    json.dump(stamp, open(marker, "w"), indent=1)
    files = sorted(os.listdir(args.out))
    print(f"{args.out}: {', '.join(files)}", file=sys.stderr)


def prompt_ids(tokenizer, prompt):
    """The ids of a prompt and the text they stand for (chat: the template's rendering)."""
    if isinstance(prompt, list):
        text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        return text, ids, False
    return prompt, tokenizer(prompt)["input_ids"], True


def cmd_query(args):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.dir)
    out = []
    for name, prompt in PROMPTS:
        text, ids, add_special = prompt_ids(tokenizer, prompt)
        ours_ids = post(args.url + "/tokenize", {"prompt": text, "add_special_tokens": add_special})["tokens"]
        if ours_ids != ids:
            sys.exit(f"prompt {name!r}: our /tokenize gives {ours_ids}, transformers' tokenizer {ids}")
        body = {"prompt": ids, "max_tokens": args.max_tokens, "temperature": 0, "logprobs": args.top,
                "prompt_logprobs": args.top, "return_token_ids": True,
                "return_tokens_as_token_ids": True, "ignore_eos": True}
        resp = post(args.url + "/v1/completions", body)
        out.append({"name": name, "text": text, "ids": ids, "response": resp})
        print(f"{name}: {len(ids)} prompt tokens -> {resp['choices'][0]['text']!r}", file=sys.stderr)
    json.dump({"max_tokens": args.max_tokens, "top": args.top, "prompts": out}, open(args.out, "w"))


def token_id(key):
    assert key.startswith("token_id:"), key
    return int(key[len("token_id:"):])


def cmd_compare(args):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    torch.set_grad_enabled(False)
    model = AutoModelForCausalLM.from_pretrained(args.dir, dtype=torch.float32).eval()
    data = json.load(open(args.responses))
    top = data["top"]
    worst = {"prompt": (0.0, None), "generated": (0.0, None)}
    counts = {"prompt": 0, "generated": 0}
    greedy_same = greedy_total = top_sets_same = top_sets_total = 0
    top_set_differences = []  # where, and transformers' logprobs of ranks top and top + 1 (a near tie?)

    def top_set(row_lp, ours_set, where, subset):
        nonlocal top_sets_same, top_sets_total
        values, indices = torch.topk(row_lp, top + 1)
        ref = set(indices[:top].tolist())
        same = ref <= ours_set if subset else ref == ours_set
        top_sets_total += 1
        top_sets_same += same
        if not same:
            top_set_differences.append({"where": where, f"rank_{top}": values[top - 1].item(),
                                        f"rank_{top + 1}": values[top].item()})
    per_prompt = []
    for p in data["prompts"]:
        choice = p["response"]["choices"][0]
        ids, gen = p["ids"], choice["token_ids"]
        if choice.get("prompt_token_ids", ids) != ids:
            sys.exit(f"{p['name']}: the server read other prompt ids")
        seq = torch.tensor([ids + gen])
        logits = model(seq).logits[0].float()
        lp = torch.log_softmax(logits, dim=-1)
        local = {"prompt": 0.0, "generated": 0.0}

        def check(kind, row, tok, value, where):
            d = abs(value - lp[row, tok].item())
            counts[kind] += 1
            local[kind] = max(local[kind], d)
            if d > worst[kind][0]:
                worst[kind] = (d, where)

        # Prompt positions: entry j (j >= 1) is log P(ids[j] | ids[:j]), row j - 1.
        entries = choice["prompt_logprobs"]
        assert entries[0] is None and len(entries) == len(ids), (len(entries), len(ids))
        for j in range(1, len(ids)):
            for key, e in entries[j].items():
                check("prompt", j - 1, int(key), e["logprob"], f"{p['name']} prompt position {j}, token {key}")
            ours_top = {int(k) for k, e in entries[j].items() if e["rank"] <= top}
            top_set(lp[j - 1], ours_top, f"{p['name']} prompt position {j}", False)
        # Generated tokens: token k from row len(ids) + k - 1.
        logprobs = choice["logprobs"]
        assert [token_id(t) for t in logprobs["tokens"]] == gen
        for k, tok in enumerate(gen):
            row = len(ids) + k - 1
            check("generated", row, tok, logprobs["token_logprobs"][k], f"{p['name']} generated token {k}")
            for key, value in logprobs["top_logprobs"][k].items():
                check("generated", row, token_id(key), value, f"{p['name']} generated token {k}, top {key}")
            greedy_total += 1
            ref_arg = int(torch.argmax(lp[row]))
            greedy_same += ref_arg == tok
            ours_top = {token_id(key) for key in logprobs["top_logprobs"][k]}
            # ours may hold the chosen token besides the top N
            top_set(lp[row], ours_top, f"{p['name']} generated token {k}", True)
        per_prompt.append({"name": p["name"], "prompt_tokens": len(ids), "generated": choice["text"],
                           "max_abs_delta_prompt": local["prompt"], "max_abs_delta_generated": local["generated"]})
    max_delta = max(worst["prompt"][0], worst["generated"][0])
    ok = max_delta <= args.tolerance and greedy_same == greedy_total
    result = {"transformers": transformers.__version__, "torch": torch.__version__, "top": top,
              "entries_compared": counts, "max_abs_delta": max_delta,
              "max_abs_delta_prompt": worst["prompt"][0], "worst_prompt_entry": worst["prompt"][1],
              "max_abs_delta_generated": worst["generated"][0], "worst_generated_entry": worst["generated"][1],
              "greedy_agree": f"{greedy_same}/{greedy_total}", "top_sets_agree": f"{top_sets_same}/{top_sets_total}",
              "top_set_differences": top_set_differences,
              "tolerance": args.tolerance, "target_met": ok, "prompts": per_prompt}
    json.dump(result, open(args.out, "w"), indent=1)
    lines = ["| prompt | prompt tokens | generated (greedy, 8 tokens) | max abs Δ prompt logprobs | max abs Δ generated logprobs |",
             "|---|---|---|---|---|"]
    for r in per_prompt:
        lines.append(f"| {r['name']} | {r['prompt_tokens']} | {json.dumps(r['generated'])} | "
                     f"{r['max_abs_delta_prompt']:.2e} | {r['max_abs_delta_generated']:.2e} |")
    lines += ["", f"entries compared: {counts['prompt']} prompt-side, {counts['generated']} generated-side "
              f"(each position's token and its top {top})",
              f"max |Δ logprob|: {max_delta:.3e} (prompt side {worst['prompt'][0]:.3e} at {worst['prompt'][1]}; "
              f"generated side {worst['generated'][0]:.3e} at {worst['generated'][1]})",
              f"greedy tokens agree: {greedy_same}/{greedy_total}; top-{top} id sets agree: {top_sets_same}/{top_sets_total}"
              + "".join(f"; differs at {d['where']}, where transformers' ranks {top} and {top + 1} are "
                        f"{d[f'rank_{top}']:.5f} and {d[f'rank_{top + 1}']:.5f}" for d in top_set_differences),
              f"target |Δ| <= {args.tolerance:g} and identical greedy tokens: {'met' if ok else 'NOT MET'}"]
    print("\n".join(lines))
    return 0 if ok else 3


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--gguf", required=True)
    c.add_argument("--out", required=True)
    q = sub.add_parser("query")
    q.add_argument("--url", required=True)
    q.add_argument("--dir", required=True)
    q.add_argument("--out", required=True)
    q.add_argument("--max-tokens", type=int, default=8)
    q.add_argument("--top", type=int, default=20)
    m = sub.add_parser("compare")
    m.add_argument("--dir", required=True)
    m.add_argument("--responses", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--tolerance", type=float, default=1e-3)
    args = p.parse_args()
    fn = {"convert": cmd_convert, "query": cmd_query, "compare": cmd_compare}[args.cmd]
    sys.exit(fn(args) or 0)


if __name__ == "__main__":
    main()
