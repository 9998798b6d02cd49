#!/usr/bin/python3
"""Writes a tiny random Llama model as a GGUF file, for checking Bagel's
remote engine against a real llama-server by hand (docs: the README's
"Models too big for this Mac"). Its replies are noise; what is checked is
the server's dialect: streamed chat completions, usage, stops, cancels.

Needs numpy and llama.cpp's gguf-py (in llama.cpp's source tree):
  PYTHONPATH=LLAMA_CPP/gguf-py /usr/bin/python3 tools/remote/tiny_gguf.py OUT.gguf
"""
import sys

import numpy as np
import gguf


def byte_tokens():
    # GPT-2's byte-to-unicode table: the 256 bytes as printable characters.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def main(out):
    rng = np.random.default_rng(1)
    tokens = byte_tokens() + ["th", "he", "Ġt", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [gguf.TokenType.NORMAL] * (len(tokens) - 3) + [gguf.TokenType.CONTROL] * 3
    merges = ["t h", "h e", "Ġ t"]
    vocab, embd, ff, layers, heads = len(tokens), 64, 128, 2, 4
    w = gguf.GGUFWriter(out, "llama")
    w.add_name("bagel-tiny-random-llama")
    w.add_context_length(512)
    w.add_embedding_length(embd)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(heads)
    w.add_rope_dimension_count(embd // heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index("<|endoftext|>"))
    w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_add_bos_token(False)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    t("token_embd.weight", vocab, embd)
    w.add_tensor("output_norm.weight", np.ones(embd, dtype=np.float32))
    t("output.weight", vocab, embd)
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(embd, dtype=np.float32))
        for p in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t(f"blk.{i}.{p}.weight", embd, embd)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(embd, dtype=np.float32))
        t(f"blk.{i}.ffn_gate.weight", ff, embd)
        t(f"blk.{i}.ffn_up.weight", ff, embd)
        t(f"blk.{i}.ffn_down.weight", embd, ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tiny.gguf")
