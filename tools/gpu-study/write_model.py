"""Write a random-weight GGUF of the study's shape with gguf-py: llama architecture, 28 repeating blocks (the study's
qwen3.5:2b offloaded 29/29: 28 blocks + the output layer) at TinyLlama's width (embd 2048, ffn 5632, 32 heads, 4 KV
heads), 1.36 B parameters, Q4_0 weights (random nibbles, symmetric around 0; 0.77 GB), an SPM vocabulary of 32000
pieces with byte fallback.

    python3 write_model.py OUT.gguf [--blocks 28] [--embd 2048] [--ffn 5632] [--heads 32] [--kv-heads 4] [--seed 0]

Why this size: the sweep's CPU-side cells (num_gpu 0, 1, 2, 8 keep 28 to 20 of 29 layers on the CPU) cost about
4.2 CPU-only generations of 512 tokens per backend and repeat, 42 in all at 5 repeats; at the ~40 GB/s a 16-core VM
streams Q4_0 weights, a 2 B Q8_0 model (2.1 GB) would need ~27 s each (19 minutes: over the 30-minute device budget
with the build and the soak), this one ~10 s (7 minutes). Q4_0 is half the bytes of Q8_0 per weight. The EOS row of
output.weight is zero so greedy decoding of random logits never picks EOS: every answer runs to n_predict. Weights
are random, the text is noise; speed, offload and VRAM do not depend on the values.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def q4_0(rng: np.random.Generator, rows: int, cols: int, scale: float, zero_rows: tuple[int, ...] = ()) -> np.ndarray:
    """Q4_0 blocks (f16 d, 16 bytes of nibbles per 32 weights) as a (rows, cols // 32 * 18) uint8 array."""
    blocks = rows * (cols // 32)
    out = np.empty((blocks, 18), dtype=np.uint8)
    out[:, :2] = np.frombuffer(np.float16(scale).tobytes(), dtype=np.uint8)
    qs = rng.integers(0, 256, size=(blocks, 16), dtype=np.uint8)
    lo, hi = qs & 0x0F, qs >> 4
    lo[lo == 0] = 8  # nibble 0 (weight -8 d) -> 8 (0): values -7..7, symmetric, mean 0
    hi[hi == 0] = 8
    out[:, 2:] = lo | (hi << 4)
    out = out.reshape(rows, cols // 32 * 18)
    for row in zero_rows:
        out[row, :2] = 0  # d = 0: the row's weights are all zero
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--blocks", type=int, default=28)
    ap.add_argument("--embd", type=int, default=2048)
    ap.add_argument("--ffn", type=int, default=5632)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import gguf

    rng = np.random.default_rng(args.seed)
    n, ffn, head_dim = args.embd, args.ffn, args.embd // args.heads
    kv = args.kv_heads * head_dim
    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name(f"random-llama-{args.blocks}x{n}-q4_0")
    w.add_context_length(4096)
    w.add_embedding_length(n)
    w.add_block_count(args.blocks)
    w.add_feed_forward_length(ffn)
    w.add_head_count(args.heads)
    w.add_head_count_kv(args.kv_heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(args.vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    # SPM vocabulary: <unk> <s> </s>, the 256 byte pieces, single characters, then filler pieces
    tokens, types = ["<unk>", "<s>", "</s>"], [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    chars = "▁abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"()-"
    tokens += list(chars) + ["▁" + c for c in chars[1:]]
    types += [gguf.TokenType.NORMAL] * (2 * len(chars) - 1)
    i = 0
    while len(tokens) < args.vocab:
        tokens.append(f"▁w{i}")
        types.append(gguf.TokenType.NORMAL)
        i += 1
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([-float(k) for k in range(len(tokens))])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    q = gguf.GGMLQuantizationType.Q4_0
    s = 0.02 / 4.3  # weight std ≈ 0.02

    def add_q(name: str, rows: int, cols: int, zero_rows: tuple[int, ...] = ()) -> None:
        w.add_tensor(name, q4_0(rng, rows, cols, s, zero_rows), raw_dtype=q)

    ones = np.ones(n, dtype=np.float32)
    add_q("token_embd.weight", args.vocab, n)
    for b in range(args.blocks):
        w.add_tensor(f"blk.{b}.attn_norm.weight", ones)
        add_q(f"blk.{b}.attn_q.weight", n, n)
        add_q(f"blk.{b}.attn_k.weight", kv, n)
        add_q(f"blk.{b}.attn_v.weight", kv, n)
        add_q(f"blk.{b}.attn_output.weight", n, n)
        w.add_tensor(f"blk.{b}.ffn_norm.weight", ones)
        add_q(f"blk.{b}.ffn_gate.weight", ffn, n)
        add_q(f"blk.{b}.ffn_up.weight", ffn, n)
        add_q(f"blk.{b}.ffn_down.weight", n, ffn)
    w.add_tensor("output_norm.weight", ones)
    add_q("output.weight", args.vocab, n, zero_rows=(2,))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    params = 2 * args.vocab * n + args.blocks * (2 * n * n + 2 * kv * n + 3 * n * ffn + 2 * n) + n
    print(f"wrote {args.out}: llama, {args.blocks} blocks, embd {n}, ffn {ffn}, vocab {args.vocab}, {params / 1e9:.2f} B parameters, Q4_0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
