#!/usr/bin/env python3
"""Perplexity the way llama.cpp's `llama-perplexity` computes it, for bench/perplexity_vs_llamacpp.sh.

llama.cpp's tools/perplexity/perplexity.cpp (`perplexity()`, no --ppl-stride), mirrored here:
  - the text is read as `-f` reads it (one trailing newline dropped) and tokenized whole with
    `add_special = true`, `parse_special = false` (common_tokenize): a BOS first when the vocabulary
    adds one;
  - n_chunk = len(tokens) // n_ctx (at least 2 * n_ctx tokens, or it refuses), or --chunks;
  - chunk i is tokens[i*n_ctx : (i+1)*n_ctx], its first token replaced by BOS when the vocabulary
    adds BOS; the KV cache is cleared between chunks (here: each chunk is one request);
  - first = n_ctx / 2; the logits at positions first .. n_ctx-2 predict tokens first+1 .. n_ctx-1,
    so each chunk scores n_ctx - first - 1 tokens (255 for -c 512);
  - it prints the running PPL after each chunk, `[k]exp(nll_1..k / count_1..k)`, and
    `Final estimate: PPL = exp(mean NLL) +/- ...`.

Our side: POST /v1/completions with the chunk as a token-id `prompt`, `max_tokens: 1` and vLLM's
`prompt_logprobs: 0`, whose entry j (null for j = 0) is log P(token j | tokens < j): the entries
first+1 .. n_ctx-1 are exactly the ones llama.cpp scores.

Standard library only (runs on any python3), but for `transformers`. Subcommands:
  tokenize  --llama URL --text FILE --out tokens.json      llama-server's /tokenize, and its BOS rule
  check-tokens --url URL --tokens tokens.json              our /tokenize must give the same ids
  score     --url URL --tokens tokens.json --ctx N [--chunks K] --label L --out ours.json
  llama-log --log llama-perplexity.log --ctx N --label L --out llama.json   its chunks, running and final PPL
  transformers --gguf FILE --tokens tokens.json --ctx N [--chunks K] --out hf.json   (needs torch,
            transformers, gguf) the same chunks through transformers, the GGUF dequantized to float32
  table     --llama a.json [b.json ...] --ours c.json [...] [--reference hf.json] [--tolerance 0.01]
            [--meta meta.json]: the target is checked against the first --llama run
"""
import argparse
import hashlib
import json
import math
import re
import sys
import time
import urllib.request


def post(url, body, timeout=600):
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def read_text(path):
    """The text as llama.cpp's `-f` reads it: the bytes, one trailing newline dropped."""
    raw = open(path, "rb").read()
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    return raw.decode("utf-8")


def llama_tokenize(base, text, add_special):
    # llama-server's /tokenize: tokenize_mixed(vocab, content, add_special, parse_special);
    # llama-perplexity calls common_tokenize(ctx, text, true), whose parse_special is false.
    out = post(base + "/tokenize", {"content": text, "add_special": add_special, "parse_special": False})
    return [t if isinstance(t, int) else t["id"] for t in out["tokens"]]


def cmd_tokenize(args):
    text = read_text(args.text)
    tokens = llama_tokenize(args.llama, text, True)
    # llama_vocab_get_add_bos: what add_special prepends to any text (here to "a").
    with_special = llama_tokenize(args.llama, "a", True)
    without = llama_tokenize(args.llama, "a", False)
    add_bos = len(with_special) == len(without) + 1 and with_special[1:] == without
    if not add_bos and with_special != without:
        sys.exit(f"add_special adds something other than one leading BOS: {with_special} vs {without}")
    bos_id = with_special[0] if add_bos else None
    doc = {
        "text": args.text,
        "text_bytes": len(open(args.text, "rb").read()),
        "text_sha256": hashlib.sha256(open(args.text, "rb").read()).hexdigest(),
        "add_bos": add_bos,
        "bos_id": bos_id,
        "n_tokens": len(tokens),
        "tokens": tokens,
    }
    json.dump(doc, open(args.out, "w"))
    print(f"llama.cpp's tokenizer: {len(tokens)} tokens, add_bos={add_bos}", file=sys.stderr)


def cmd_check_tokens(args):
    doc = json.load(open(args.tokens))
    text = read_text(doc["text"])
    ours = post(args.url + "/tokenize", {"prompt": text, "add_special_tokens": True})["tokens"]
    ref = doc["tokens"]
    if ours != ref:
        first = next((i for i, (a, b) in enumerate(zip(ours, ref)) if a != b), min(len(ours), len(ref)))
        sys.exit(f"our /tokenize disagrees with llama.cpp's: {len(ours)} vs {len(ref)} tokens, "
                 f"first difference at {first}: ours {ours[first:first + 5]} llama.cpp {ref[first:first + 5]}")
    print(f"our /tokenize agrees with llama.cpp's: {len(ours)} identical ids", file=sys.stderr)


def llama_chunks(args):
    """llama-perplexity's chunks of the tokens file: (index, tokens) of each n_ctx-token chunk, its
    first token replaced by BOS when the model adds one; with all tokens, `first` (the first
    scored row) and the number of chunks."""
    doc = json.load(open(args.tokens))
    tokens, n_ctx = doc["tokens"], args.ctx
    n_chunk_max = len(tokens) // n_ctx
    n_chunk = n_chunk_max if args.chunks is None or args.chunks < 0 else min(args.chunks, n_chunk_max)

    def chunks():
        for i in range(n_chunk):
            chunk = tokens[i * n_ctx:(i + 1) * n_ctx]
            if doc["add_bos"]:
                chunk = [doc["bos_id"]] + chunk[1:]
            yield i, chunk

    return tokens, n_ctx // 2, n_chunk, chunks()


def cmd_score(args):
    tokens, first, n_chunk, chunked = llama_chunks(args)
    n_ctx = args.ctx
    if len(tokens) < 2 * n_ctx:
        sys.exit(f"need at least {2 * n_ctx} tokens for a context of {n_ctx}; the text has {len(tokens)}")
    nll_total, count, chunks = 0.0, 0, []
    started = time.monotonic()
    for i, chunk in chunked:
        t0 = time.monotonic()
        body = {"prompt": chunk, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 0}
        if args.model:
            body["model"] = args.model
        out = post(args.url + "/v1/completions", body)
        entries = out["choices"][0]["prompt_logprobs"]
        if len(entries) != n_ctx or entries[0] is not None:
            sys.exit(f"chunk {i + 1}: prompt_logprobs has {len(entries)} entries (want {n_ctx}, the first null)")
        nll = 0.0
        for j in range(first + 1, n_ctx):
            entry = entries[j][str(chunk[j])]
            nll -= entry["logprob"]
        scored = n_ctx - first - 1
        nll_total += nll
        count += scored
        chunks.append({"chunk": i + 1, "nll": nll, "scored": scored, "ppl": math.exp(nll / scored),
                       "running_ppl": math.exp(nll_total / count), "seconds": time.monotonic() - t0})
        print(f"[{i + 1}]{math.exp(nll_total / count):.4f}", end="," if i + 1 < n_chunk else "\n",
              file=sys.stderr, flush=True)
    result = {"label": args.label, "n_ctx": n_ctx, "n_chunk": n_chunk, "first": first,
              "scored_tokens": count, "mean_nll": nll_total / count, "ppl": math.exp(nll_total / count),
              "seconds": time.monotonic() - started, "chunks": chunks}
    json.dump(result, open(args.out, "w"), indent=1)
    print(f"{args.label}: PPL = {result['ppl']:.4f} over {n_chunk} chunks, {count} scored tokens",
          file=sys.stderr)


def cmd_llama_log(args):
    log = open(args.log, encoding="utf-8", errors="replace").read()
    m = re.search(r"calculating perplexity over (\d+) chunks, n_ctx=(\d+), batch_size=(\d+), n_seq=(\d+)", log)
    if not m:
        sys.exit(f"no 'calculating perplexity over N chunks' line in {args.log}")
    n_chunk, n_ctx = int(m.group(1)), int(m.group(2))
    if n_ctx != args.ctx:
        sys.exit(f"llama-perplexity ran with n_ctx={n_ctx}, not {args.ctx}")
    running = [float(v) for _, v in re.findall(r"\[(\d+)\](\d+\.\d+|nan|inf)", log)]
    final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
    if not final or len(running) != n_chunk:
        sys.exit(f"{args.log}: final estimate {'found' if final else 'missing'}, "
                 f"{len(running)} running values for {n_chunk} chunks")
    # What it resolved (logged with -lv 4): flash attention on or off, the KV cache's types.
    fa = re.search(r"Flash Attention (enabled|disabled)", log) or re.search(r"flash_attn\s+= (enabled|disabled)", log)
    kv = re.search(r"K \((\w+)\):.*V \((\w+)\):", log)
    first = n_ctx // 2
    result = {"label": args.label, "n_ctx": n_ctx, "n_chunk": n_chunk, "first": first,
              "batch_size": int(m.group(3)), "scored_tokens": n_chunk * (n_ctx - first - 1),
              "flash_attention": fa.group(1) if fa else None,
              "kv_cache": f"K {kv.group(1)}, V {kv.group(2)}" if kv else None,
              "ppl": float(final.group(1)), "ppl_stderr": float(final.group(2)),
              "chunks": [{"chunk": k + 1, "running_ppl": v} for k, v in enumerate(running)]}
    json.dump(result, open(args.out, "w"), indent=1)


def cmd_transformers(args):
    """The same chunks through transformers: the GGUF dequantized to float32 by its own loader,
    one forward pass per chunk (eager, float32), log_softmax in float64 over the float32 logits."""
    import os
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    torch.set_grad_enabled(False)
    where, name = os.path.dirname(os.path.abspath(args.gguf)), os.path.basename(args.gguf)
    model = AutoModelForCausalLM.from_pretrained(where, gguf_file=name, dtype=torch.float32).eval()
    tokens, first, n_chunk, chunked = llama_chunks(args)
    n_ctx = args.ctx
    nll_total, count, chunks = 0.0, 0, []
    started = time.monotonic()
    for i, chunk in chunked:
        ids = torch.tensor([chunk])
        lp = torch.log_softmax(model(ids).logits[0].double(), dim=-1)
        rows = torch.arange(first, n_ctx - 1)
        nll = -lp[rows, ids[0, first + 1:]].sum().item()
        scored = n_ctx - first - 1
        nll_total += nll
        count += scored
        chunks.append({"chunk": i + 1, "nll": nll, "scored": scored, "ppl": math.exp(nll / scored),
                       "running_ppl": math.exp(nll_total / count)})
        print(f"[{i + 1}]{math.exp(nll_total / count):.4f}", end="," if i + 1 < n_chunk else "\n",
              file=sys.stderr, flush=True)
    result = {"label": f"transformers {transformers.__version__} float32", "n_ctx": n_ctx, "n_chunk": n_chunk,
              "first": first, "scored_tokens": count, "mean_nll": nll_total / count,
              "ppl": math.exp(nll_total / count), "seconds": time.monotonic() - started,
              "torch": torch.__version__, "chunks": chunks}
    json.dump(result, open(args.out, "w"), indent=1)
    print(f"{result['label']}: PPL = {result['ppl']:.4f}", file=sys.stderr)


def cmd_table(args):
    refs = [json.load(open(p)) for p in args.llama]
    ours = [json.load(open(p)) for p in args.ours]
    extra = [json.load(open(p)) for p in (args.reference or [])]
    meta = json.load(open(args.meta)) if args.meta else {}
    base = refs[0]
    lines = []
    if meta:
        lines.append("Perplexity against llama.cpp's llama-perplexity")
        for key, value in meta.items():
            lines.append(f"- {key}: `{value}`" if key == "command" else f"- {key}: {value}")
        lines.append("")
    lines.append(f"n_ctx {base['n_ctx']}, {base['n_chunk']} chunks, logits of positions {base['first']}..{base['n_ctx'] - 2} "
                 f"of each chunk scored (tokens {base['first'] + 1}..{base['n_ctx'] - 1}); target: "
                 f"|our PPL / llama-perplexity's - 1| <= {args.tolerance:.0%} "
                 f"(first llama.cpp row: its defaults)")
    lines.append("")
    cols = refs + extra
    head = "| side | chunks | scored tokens | PPL | " + " | ".join(f"ratio to {c['label']}" for c in cols) + " |"
    lines.append(head)
    lines.append("|" + "---|" * (4 + len(cols)))
    ok = True

    def row(r, is_ours):
        nonlocal ok
        ppl = f"{r['ppl']:.4f}" + (f" ± {r['ppl_stderr']:.4f}" if "ppl_stderr" in r else "")
        if r.get("flash_attention"):
            label = f"{r['label']} (flash attention {r['flash_attention']}, {r['kv_cache']})"
        else:
            label = r["label"]
        cells = [label, str(r["n_chunk"]), str(r["scored_tokens"]), ppl]
        for k, c in enumerate(cols):
            if c is r:
                cells.append("1")
                continue
            ratio = r["ppl"] / c["ppl"]
            same = r["n_chunk"] == c["n_chunk"] and r["scored_tokens"] == c["scored_tokens"]
            cell = f"{ratio:.5f} ({(ratio - 1) * 100:+.3f} %)"
            if is_ours and c in refs:
                met = same and abs(ratio - 1) <= args.tolerance
                if k == 0:
                    ok &= met
                cell += " met" if met else " NOT MET"
            if not same:
                cell += " (other chunk/token count)"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")

    for r in refs:
        row(r, False)
    for r in ours:
        row(r, True)
    for r in extra:
        row(r, False)
    lines.append("")
    lines.append("Running PPL after each chunk (what llama-perplexity prints as [k]value):")
    lines.append("")
    sides = refs + ours + extra
    lines.append("| chunk | " + " | ".join(s["label"] for s in sides) + " |")
    lines.append("|" + "---|" * (1 + len(sides)))
    for k in range(max(len(s["chunks"]) for s in sides)):
        cells = [str(k + 1)] + [f"{s['chunks'][k]['running_ppl']:.4f}" if k < len(s["chunks"]) else "" for s in sides]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"target against {base['label']}: " + ("met" if ok else "NOT MET"))
    print("\n".join(lines))
    return 0 if ok else 3


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tokenize")
    t.add_argument("--llama", required=True)
    t.add_argument("--text", required=True)
    t.add_argument("--out", required=True)
    c = sub.add_parser("check-tokens")
    c.add_argument("--url", required=True)
    c.add_argument("--tokens", required=True)
    s = sub.add_parser("score")
    s.add_argument("--url", required=True)
    s.add_argument("--tokens", required=True)
    s.add_argument("--ctx", type=int, default=512)
    s.add_argument("--chunks", type=int, default=None)
    s.add_argument("--label", required=True)
    s.add_argument("--model", default=None)
    s.add_argument("--out", required=True)
    g = sub.add_parser("llama-log")
    g.add_argument("--log", required=True)
    g.add_argument("--ctx", type=int, default=512)
    g.add_argument("--label", default="llama.cpp")
    g.add_argument("--out", required=True)
    h = sub.add_parser("transformers")
    h.add_argument("--gguf", required=True)
    h.add_argument("--tokens", required=True)
    h.add_argument("--ctx", type=int, default=512)
    h.add_argument("--chunks", type=int, default=None)
    h.add_argument("--out", required=True)
    b = sub.add_parser("table")
    b.add_argument("--llama", nargs="+", required=True)
    b.add_argument("--ours", nargs="+", required=True)
    b.add_argument("--reference", nargs="*", default=None)
    b.add_argument("--tolerance", type=float, default=0.01)
    b.add_argument("--meta", default=None)
    args = p.parse_args()
    fn = {"tokenize": cmd_tokenize, "check-tokens": cmd_check_tokens, "score": cmd_score,
          "llama-log": cmd_llama_log, "transformers": cmd_transformers, "table": cmd_table}[args.cmd]
    sys.exit(fn(args) or 0)


if __name__ == "__main__":
    main()
