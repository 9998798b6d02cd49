#!/usr/bin/env python3
"""Train Bagel's demo model: a small real `qwen3_5` (Gated DeltaNet and gated
attention layers, dense MLP, tied embeddings) with a multi-token-prediction
(MTP) head and its own byte-level BPE tokenizer, on the Jargon File and The
Devil's Dictionary as chat turns ("What is a kludge?" -> the entry).

    python3 tools/demo/corpus.py --out .devbin/demo/corpus.jsonl     # here (Debian packages)
    python3 tools/demo/train.py --corpus .devbin/demo/corpus.jsonl --out assets/demo-model  # GPU machine

Needs numpy, torch and transformers >= 5 with qwen3_5 and the `tokenizers`
library (the GPU machine has them). Deterministic from --seed on one machine
(the order of samples, initialisation and dropout-free training; CUDA's own
reductions may still differ between GPUs).

Writes, in --out:
  config.json, generation_config.json, model.safetensors   the MLX 4-bit layout
      Bagel loads (docs/MLX_QWEN35.md; tools/goldens/make_goldens.py's quantizer)
  mtp.safetensors     the MTP head beside the checkpoint, as Qwen's releases ship
      it, under transformers' names (mtp.fc, mtp.layers.0.self_attn.q_proj, ...) but
      in the checkpoint's conventions: 4-bit Linears, norms with the +1 folded in
  tokenizer.json, tokenizer_config.json   Hugging Face format, Qwen's special
      tokens and the Qwen3.5 chat template (testdata/tokenizer/templates)
  reference.json      transformers' float32 forward of the dequantized weights:
      teacher-forced top logits of chat prompts and greedy replies, for Bagel's tests
  train.log           the run's losses
"""

import argparse
import json
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "goldens"))

import numpy as np  # noqa: E402

import make_goldens as mg  # noqa: E402

SPLIT = open(os.path.join(HERE, "..", "..", "testdata", "tokenizer", "qwen35_split_pattern.txt")).read().strip()
TEMPLATE = open(os.path.join(HERE, "..", "..", "testdata", "tokenizer", "templates", "qwen35_small.jinja")).read()
# Qwen's added tokens, in Qwen's order (ids follow the BPE vocabulary); the
# first 14 are special (never split out of user text by Bagel).
ADDED = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True), ("<|box_start|>", True), ("<|box_end|>", True), ("<|quad_start|>", True),
    ("<|quad_end|>", True), ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False), ("</tool_call>", False),
    ("<|fim_prefix|>", False), ("<|fim_middle|>", False), ("<|fim_suffix|>", False), ("<|fim_pad|>", False),
    ("<|repo_name|>", False), ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False),
]
VOCAB = 4096
QUESTIONS = ["What is {t}?", "What does {t} mean?", "Define {t}.", "What is {t}", "Tell me about {t}.",
             "what is {l}?", "Explain {t}.", "What's {t}?"]

TEXT_CONFIG = {
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_output_gate": True,
    "dtype": "bfloat16",
    "full_attention_interval": 3,
    "head_dim": 256,
    "hidden_act": "silu",
    "hidden_size": 256,
    "initializer_range": 0.02,
    "intermediate_size": 768,
    "layer_types": mg.layer_types(6, 3),
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 64,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_value_head_dim": 64,
    "max_position_embeddings": 4096,
    "model_type": "qwen3_5_text",
    "mtp_num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_hidden_layers": 6,
    "num_key_value_heads": 1,
    "rms_norm_eps": 1e-06,
    "rope_parameters": dict(mg.ROPE),
    "tie_word_embeddings": True,
    "use_cache": True,
    "vocab_size": VOCAB,
}


def log(f, msg):
    print(msg, flush=True)
    f.write(msg + "\n")
    f.flush()


# ---------------------------------------------------------------- tokenizer


def train_tokenizer(texts):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - len(ADDED), min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(texts, trainer)
    from tokenizers import AddedToken

    for content, special in ADDED:  # one at a time: ids in ADDED's order
        t = AddedToken(content, special=special, normalized=False)
        (tok.add_special_tokens if special else tok.add_tokens)([t])
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    return tok


def tokenizer_config(tok):
    decoder = {}
    for content, special in ADDED:
        i = tok.token_to_id(content)
        decoder[str(i)] = {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                           "single_word": False, "special": special}
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": decoder,
        "additional_special_tokens": [c for c, s in ADDED[1:14]],
        "bos_token": None,
        "chat_template": TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": TEXT_CONFIG["max_position_embeddings"],
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def chat(question, answer=None):
    """The Qwen3.5 template's rendering of one user turn (no system prompt),
    with thinking off, and the answer closed by <|im_end|> when given."""
    s = f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    return s if answer is None else s + answer + "<|im_end|>\n"


# ---------------------------------------------------------------- the model


def build(torch, seed):
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    kw = {k: TEXT_CONFIG[k] for k in mg.HF_FIELDS if k in TEXT_CONFIG}
    kw["rope_parameters"] = dict(TEXT_CONFIG["rope_parameters"])
    cfg = Qwen3_5TextConfig(**kw)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    model = Qwen3_5ForCausalLM(cfg)
    mtp = MTP(torch, cfg)
    return cfg, model, mtp


def MTP(torch, cfg):
    """Qwen3-Next's MTP module (as vLLM's qwen3_next_mtp runs it): the next
    token's embedding and the final-normed hidden state, each normed,
    concatenated [embedding, hidden], projected to the width, one
    full-attention decoder layer, a norm; the model's tied head gives logits."""
    from transformers.models.qwen3_5 import modeling_qwen3_5 as mq

    nn = torch.nn
    full = cfg.layer_types.index("full_attention")

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            H = cfg.hidden_size
            self.pre_fc_norm_embedding = mq.Qwen3_5RMSNorm(H, eps=cfg.rms_norm_eps)
            self.pre_fc_norm_hidden = mq.Qwen3_5RMSNorm(H, eps=cfg.rms_norm_eps)
            self.fc = nn.Linear(2 * H, H, bias=False)
            self.layers = nn.ModuleList([mq.Qwen3_5DecoderLayer(cfg, full)])
            self.norm = mq.Qwen3_5RMSNorm(H, eps=cfg.rms_norm_eps)

        def forward(self, emb_next, hidden, position_embeddings):
            x = torch.cat([self.pre_fc_norm_embedding(emb_next), self.pre_fc_norm_hidden(hidden)], dim=-1)
            x = self.fc(x)
            out = self.layers[0](x, position_embeddings=position_embeddings, attention_mask=None)
            x = out[0] if isinstance(out, tuple) else out
            return self.norm(x)

    return Head()


def batches(rng, samples, tok, seq, batch):
    """Endless packed batches: samples shuffled each epoch, their ids
    concatenated and cut into rows of seq + 1 tokens."""
    stream = []
    while True:
        order = list(range(len(samples)))
        rng.shuffle(order)
        for i in order:
            term, text = samples[i]
            q = rng.choice(QUESTIONS).format(t=term, l=term.lower())
            stream.extend(tok.encode(chat(q, text)).ids)
            while len(stream) >= batch * (seq + 1):
                rows = [stream[r * (seq + 1):(r + 1) * (seq + 1)] for r in range(batch)]
                del stream[:batch * (seq + 1)]
                yield rows


def losses(torch, model, mtp, ids):
    """Mean next-token and MTP (token after next) cross-entropies of a batch."""
    F = torch.nn.functional
    x, y = ids[:, :-1], ids[:, 1:]
    out = model.model(input_ids=x, use_cache=False)
    h = out.last_hidden_state  # after the final norm
    logits = model.lm_head(h)
    main = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
    # MTP at position t: hidden h_t and the embedding of token t+1 predict t+2.
    emb = model.model.embed_tokens(y[:, :-1])
    # Text positions on all three mRoPE axes (t, h, w), as the model uses them.
    pos = torch.arange(emb.shape[1], device=ids.device)[None, None].expand(3, emb.shape[0], -1)
    pe = model.model.rotary_emb(emb, pos)
    m = mtp(emb, h[:, :-1], pe)
    ml = model.lm_head(m)
    extra = F.cross_entropy(ml.float().reshape(-1, ml.shape[-1]), y[:, 1:].reshape(-1))
    return main, extra


# ---------------------------------------------------------------- conversion


def to_mlx(torch, model, mtp, out):
    """Writes the MLX checkpoint and mtp.safetensors; returns the Builder (its
    hf dict holds the dequantized weights transformers gets back)."""
    tc = TEXT_CONFIG
    sd = {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}
    B = mg.Builder(0)
    lm = "language_model.model."

    def shifted(mlx_key, hf_key):
        v = B.bf16(mlx_key, sd[hf_key] + np.float32(1.0))
        B.hf[hf_key] = (v - np.float32(1.0)).astype(np.float32)

    B.hf["model.embed_tokens.weight"] = B.qlinear(lm + "embed_tokens", sd["model.embed_tokens.weight"])
    for i, lt in enumerate(tc["layer_types"]):
        P, Q = f"{lm}layers.{i}.", f"model.layers.{i}."
        shifted(P + "input_layernorm.weight", Q + "input_layernorm.weight")
        shifted(P + "post_attention_layernorm.weight", Q + "post_attention_layernorm.weight")
        if lt == "linear_attention":
            A, HA = P + "linear_attn.", Q + "linear_attn."
            for name in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"):
                B.hf[HA + name + ".weight"] = B.qlinear(A + name, sd[HA + name + ".weight"])
            conv = mg.bf16_round(sd[HA + "conv1d.weight"][:, 0, :])  # HF [C,1,K]
            B.mlx[A + "conv1d.weight"] = ("BF16", mg.f32_to_bf16_bits(conv[:, :, None]))  # MLX [C,K,1]
            B.hf[HA + "conv1d.weight"] = np.ascontiguousarray(conv[:, None, :])
            B.hf[HA + "dt_bias"] = B.bf16(A + "dt_bias", sd[HA + "dt_bias"])
            B.hf[HA + "A_log"] = B.f32(A + "A_log", sd[HA + "A_log"])
            B.hf[HA + "norm.weight"] = B.bf16(A + "norm.weight", sd[HA + "norm.weight"])  # not shifted
        else:
            A, HA = P + "self_attn.", Q + "self_attn."
            for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                B.hf[HA + name + ".weight"] = B.qlinear(A + name, sd[HA + name + ".weight"])
            shifted(A + "q_norm.weight", HA + "q_norm.weight")
            shifted(A + "k_norm.weight", HA + "k_norm.weight")
        for name in ("gate_proj", "up_proj", "down_proj"):
            B.hf[Q + "mlp." + name + ".weight"] = B.qlinear(P + "mlp." + name, sd[Q + "mlp." + name + ".weight"])
    shifted(lm + "norm.weight", "model.norm.weight")

    os.makedirs(out, exist_ok=True)
    spec = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"], "text_config": tc}
    cfg = mg.mlx_config("demo", spec, B.overrides)
    cfg["eos_token_id"] = EOS[0]
    cfg["text_config"] = dict(tc, eos_token_id=EOS[0])
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=4)
        f.write("\n")
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": EOS[1], "do_sample": False, "eos_token_id": list(EOS), "pad_token_id": EOS[1],
                   "transformers_version": "5.17.0"}, f, indent=4)
        f.write("\n")
    mg.write_safetensors(os.path.join(out, "model.safetensors"), B.mlx, {"format": "mlx"})

    msd = {k: v.detach().float().cpu().numpy() for k, v in mtp.state_dict().items()}
    mg.write_safetensors(os.path.join(out, "mtp.safetensors"), mtp_mlx(msd), {"format": "mlx"})
    return B


def mtp_mlx(msd):
    """The MTP head's tensors (transformers' names, f32 values) under mtp.*
    in the main checkpoint's conventions: every Linear 4-bit in groups of 64
    (.weight, .scales, .biases), every norm bf16 with the +1 folded in (all
    of the head's norms compute x·(1+w))."""
    B = mg.Builder(0)
    for k in sorted(msd):
        path = "mtp." + k[: -len(".weight")]
        if msd[k].ndim == 2:
            B.qlinear(path, msd[k])
        else:
            assert "norm" in k, k
            B.bf16("mtp." + k, msd[k] + np.float32(1.0))
    return B.mlx


EOS = [0, 0]  # <|im_end|>, <|endoftext|>: set from the tokenizer


# ---------------------------------------------------------------- references


def references(torch, cfg, B, tok, device, questions):
    """transformers' float32 forward of exactly the written weights:
    teacher-forced top-20 logits of each question's prompt + reply, and the
    greedy reply itself (thinking off, up to 80 tokens)."""
    from transformers import Qwen3_5ForCausalLM

    cfg32 = type(cfg).from_dict(cfg.to_dict())
    cfg32._attn_implementation = "eager"
    model = Qwen3_5ForCausalLM(cfg32).to(torch.float32)
    mine = dict(B.hf)
    mine["lm_head.weight"] = mine["model.embed_tokens.weight"]
    sd = model.state_dict()
    assert set(sd) == set(mine), sorted(set(sd) ^ set(mine))
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in mine.items()}, strict=True)
    model = model.to(device).eval()
    out = {"meta": {"note": "transformers float32, eager attention, on the dequantized weights of model.safetensors",
                    "top_k": 20}, "prompts": []}
    with torch.no_grad():
        for q in questions:
            ids = tok.encode(chat(q)).ids
            seq = list(ids)
            for _ in range(80):
                lg = model(input_ids=torch.tensor([seq], device=device), use_cache=False).logits[0, -1]
                nxt = int(lg.argmax())
                seq.append(nxt)
                if nxt in EOS:
                    break
            reply = seq[len(ids):]
            lg = model(input_ids=torch.tensor([seq], device=device), use_cache=False).logits[0].float().cpu()
            tv, ti = lg.topk(20, dim=-1)
            s2 = lg.topk(2, dim=-1).values
            out["prompts"].append({
                "question": q, "prompt_ids": ids, "reply_ids": reply, "reply": tok.decode(reply),
                "positions": [{"top_ids": [int(v) for v in ti[i]], "top_logits": [float(v) for v in tv[i]],
                               "logsumexp": float(torch.logsumexp(lg[i], 0)), "margin": float(s2[i, 0] - s2[i, 1])}
                              for i in range(len(seq))],
            })
    return out


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    random.seed(args.seed)
    np.random.seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, "train.log"), "w")
    t0 = time.time()

    entries = [json.loads(line) for line in open(args.corpus, encoding="utf-8")]
    samples = [(e["term"], e["text"]) for e in entries]
    tok = train_tokenizer([chat(QUESTIONS[0].format(t=t), a) for t, a in samples])
    EOS[0], EOS[1] = tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")
    tok.save(os.path.join(args.out, "tokenizer.json"))
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config(tok), f, indent=2, ensure_ascii=False)
        f.write("\n")
    n_tok = sum(len(tok.encode(chat(QUESTIONS[0].format(t=t), a)).ids) for t, a in samples)
    log(logf, f"corpus: {len(samples)} entries, {n_tok} tokens a pass with vocabulary {VOCAB} ({time.time() - t0:.1f}s)")

    cfg, model, mtp = build(torch, args.seed)
    model, mtp = model.to(args.device), mtp.to(args.device)
    params = list(model.parameters()) + list(mtp.parameters())
    n_main = sum(p.numel() for p in model.parameters())
    n_mtp = sum(p.numel() for p in mtp.parameters())
    log(logf, f"model: {n_main} parameters, MTP head {n_mtp}")
    decay = [p for p in params if p.dim() >= 2]
    keep = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": keep, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    warm = max(1, args.steps // 20)

    def lr_at(step):
        if step < warm:
            return args.lr * (step + 1) / warm
        return args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * (step - warm) / (args.steps - warm))))

    it = batches(random.Random(args.seed), samples, tok, args.seq, args.batch)
    model.train()
    mtp.train()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        ids = torch.tensor(next(it), device=args.device)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.device == "cuda"):
            main_l, mtp_l = losses(torch, model, mtp, ids)
        loss = main_l + args.mtp_weight * mtp_l
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            log(logf, f"step {step}: loss {main_l.item():.4f}, mtp {mtp_l.item():.4f}, lr {lr_at(step):.2e} "
                      f"({time.time() - t0:.0f}s)")

    model.eval()
    mtp.eval()
    B = to_mlx(torch, model, mtp, args.out)
    # The float model's and the written (4-bit) model's loss on a fixed batch.
    probe = torch.tensor(next(batches(random.Random(args.seed + 1), samples, tok, args.seq, 16)), device=args.device)
    with torch.no_grad():
        fl, fm = losses(torch, model, mtp, probe)
    questions = ["What is a kludge?", "What is a hacker?", "What is marriage?", "Define cynic.", "What is a bug?"]
    ref = references(torch, cfg, B, tok, args.device, questions)
    with torch.no_grad():
        from transformers import Qwen3_5ForCausalLM

        q4 = Qwen3_5ForCausalLM(type(cfg).from_dict(cfg.to_dict())).to(torch.float32)
        mine = dict(B.hf)
        mine["lm_head.weight"] = mine["model.embed_tokens.weight"]
        q4.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in mine.items()}, strict=True)
        q4 = q4.to(args.device).eval()
        ql, _ = losses(torch, q4, mtp, probe)
    log(logf, f"probe loss: float {fl.item():.4f} (mtp {fm.item():.4f}), 4-bit {ql.item():.4f}")
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(ref, f)
    for p in ref["prompts"]:
        log(logf, f"Q: {p['question']}\nA: {p['reply']}")
    sizes = {n: os.path.getsize(os.path.join(args.out, n)) for n in sorted(os.listdir(args.out))}
    log(logf, f"files: {sizes}, {sum(sizes.values())} bytes; {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
