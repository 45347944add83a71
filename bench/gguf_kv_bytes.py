#!/usr/bin/env python3
"""Bytes per token of pagoda's CPU KV cache for a GGUF model (python3 standard library only).

    python3 bench/gguf_kv_bytes.py MODEL.gguf      # prints e.g. 46080 for SmolLM2-135M

The engine's formula (docs/engine.md, "KV cache capacity"): 2 (K and V) x num_layers x
num_kv_heads x head_dim x 4 bytes (f32), with the shape read as the engine reads it:
<arch>.block_count, <arch>.attention.head_count_kv (else head_count), and head_dim =
<arch>.rope.dimension_count, else embedding_length / head_count. bench/cpu_vs_llamacpp.sh sizes
`--kv-cache-memory` with it so that our cache holds exactly as many tokens as llama.cpp's `-c`.
"""
import struct
import sys

F32_BYTES = 4
# GGUF value types: id -> struct format of a scalar (8 = string, 9 = array are handled apart).
SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING_TYPE, ARRAY_TYPE = 8, 9


class GgufReader:
    def __init__(self, stream):
        self.stream = stream

    def unpack(self, fmt):
        size = struct.calcsize("<" + fmt)
        data = self.stream.read(size)
        if len(data) != size:
            raise ValueError("truncated GGUF header")
        return struct.unpack("<" + fmt, data)[0]

    def string(self):
        return self.stream.read(self.unpack("Q")).decode("utf-8", "replace")

    def value(self, value_type):
        if value_type == STRING_TYPE:
            return self.string()
        if value_type == ARRAY_TYPE:
            item_type, count = self.unpack("I"), self.unpack("Q")
            return [self.value(item_type) for _ in range(count)]
        if value_type not in SCALAR_FORMATS:
            raise ValueError(f"unknown GGUF value type {value_type}")
        return self.unpack(SCALAR_FORMATS[value_type])


def read_metadata(stream, wanted=None):
    """The header's key/value pairs (only the keys in `wanted` when given)."""
    reader = GgufReader(stream)
    if stream.read(4) != b"GGUF":
        raise ValueError("not a GGUF file")
    reader.unpack("I")  # version
    reader.unpack("Q")  # tensor count
    metadata = {}
    for _ in range(reader.unpack("Q")):
        key = reader.string()
        value = reader.value(reader.unpack("I"))
        if wanted is None or key in wanted:
            metadata[key] = value
    return metadata


def kv_bytes_per_token(metadata):
    arch = metadata["general.architecture"]
    num_heads = metadata[f"{arch}.attention.head_count"]
    num_kv_heads = metadata.get(f"{arch}.attention.head_count_kv", num_heads)
    head_dim = metadata.get(f"{arch}.rope.dimension_count", metadata[f"{arch}.embedding_length"] // max(num_heads, 1))
    return 2 * metadata[f"{arch}.block_count"] * num_kv_heads * head_dim * F32_BYTES


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gguf_kv_bytes.py MODEL.gguf")
    with open(sys.argv[1], "rb") as f:
        print(kv_bytes_per_token(read_metadata(f)))


if __name__ == "__main__":
    main()
