#!/usr/bin/env python3
"""bf16 reference logits for the tiny goldens, following kernels/README.md.

Reads the MLX checkpoints in testdata/models/<name>/ and the prompts of
testdata/goldens/<name>.json (the transformers f32 goldens), and runs the model
the way Bagel does: numpy float32 arithmetic, with the activations rounded to
bf16 (round to nearest even, on the uint32 bit pattern) at exactly the points of
the kernel contract in kernels/README.md, composed as in qwen/layers.go and
qwen/model.go. Each prompt is teacher-forced as Bagel's `score --prefill N` does:
the first N = max(1, len//2) tokens in one pass, then one token at a time with
the caches (kv cache bf16, conv state bf16, GDN state f32). The script checks
that this gives the same logits as one pass over the whole prompt.

Writes testdata/goldens/<name>.bf16.json: the golden schema with, per position,
"top_ids" = the transformers golden's top-20 ids (so a test compares the same
entries), "top_logits" = the bf16 reference's logits at those ids, "logsumexp"
of the bf16 reference's logits, plus "meta". Prints the bf16-vs-f32 spread.

Needs numpy only (Debian's python3-numpy: run it with /usr/bin/python3 when
another python3 on PATH lacks numpy):

    python3 tools/goldens/bf16_reference.py [--testdata testdata] [--models tiny-dense,tiny-moe]
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ next to make_goldens.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_goldens import (  # noqa: E402  (numpy-only part of make_goldens)
    bf16_bits_to_f32,
    f32_to_bf16_bits,
    mlx_affine_dequantize,
    read_safetensors,
)

F32 = np.float32


def r(x):
    """Round an f32 array to bf16 values (nearest even), kept as f32."""
    return bf16_bits_to_f32(f32_to_bf16_bits(np.asarray(x, dtype=F32))).reshape(np.shape(x))


def sigmoid(x):
    x = np.asarray(x, dtype=F32)
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(F32)


def silu(x):
    x = np.asarray(x, dtype=F32)
    return (x * sigmoid(x)).astype(F32)


def softplus(x):
    v = np.asarray(x, dtype=np.float64)
    return (np.maximum(v, 0) + np.log1p(np.exp(-np.abs(v)))).astype(F32)


def rms_inv(x, eps):
    x = np.asarray(x, dtype=F32)
    ms = (x * x).sum(axis=-1, keepdims=True, dtype=F32) / F32(x.shape[-1])
    return (1.0 / np.sqrt((ms + F32(eps)).astype(np.float64))).astype(F32)


class Model:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = json.load(f)
        self.tc = self.cfg["text_config"]
        self.q = self.cfg["quantization"]
        self.t, meta = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        assert meta.get("format") == "mlx", meta
        self._w = {}
        tc = self.tc
        self.eps = F32(tc["rms_norm_eps"])
        self.lm = "language_model.model."
        self.head = ("language_model.lm_head" if "language_model.lm_head.scales" in self.t
                     else self.lm + "embed_tokens")

    # ---- weights
    def w(self, path):
        """Dequantized weight (f32 = f32(scale)*q + f32(bias)) or a plain tensor as f32."""
        if path not in self._w:
            if path + ".scales" in self.t:
                ov = self.q.get(path, {})
                gs, bits = ov.get("group_size", self.q["group_size"]), ov.get("bits", self.q["bits"])
                v = mlx_affine_dequantize(self.t[path + ".weight"][1], self.t[path + ".scales"][1],
                                          self.t[path + ".biases"][1], gs, bits)
            else:
                tag, arr = self.t[path]
                v = bf16_bits_to_f32(arr).reshape(arr.shape) if tag == "BF16" else np.asarray(arr, F32)
            self._w[path] = np.ascontiguousarray(v, dtype=F32)
        return self._w[path]

    # ---- kernels (each as kernels/README.md states it)
    @staticmethod
    def matmul_f32(x, W):
        """Σ_j x[t,j]·W[o,j] in f32, one row at a time (a gemv per row), so that a
        row's result does not depend on how many rows are in the pass."""
        x = np.asarray(x, dtype=F32)
        out = np.empty((x.shape[0], W.shape[0]), F32)
        for i in range(x.shape[0]):
            out[i] = W @ x[i]
        return out

    def qmm(self, x, path):  # qmatmul_bf16
        return r(self.matmul_f32(x, self.w(path)))

    def rms_norm(self, x, w):  # rms_norm_bf16
        inv = rms_inv(x, self.eps)
        return r(w * r(x * inv))

    def rms_norm_gated(self, x, z, w):  # rms_norm_gated_bf16
        inv = rms_inv(x, self.eps)
        y = r(w * r(x * inv))
        return r(y * silu(z))

    @staticmethod
    def rope(x, rot, pos0, theta):  # rope_neox_bf16 (x [T,H,D] bf16 values)
        T = x.shape[0]
        half = rot // 2
        inv = np.array([float(theta) ** (-(2.0 * i) / rot) for i in range(half)], dtype=np.float64).astype(F32)
        p = np.arange(pos0, pos0 + T, dtype=F32)
        ang = (p[:, None] * inv[None, :]).astype(F32)  # the angle is formed in f32 (as MLX)
        cos = np.cos(ang.astype(np.float64)).astype(F32)[:, None, :]
        sin = np.sin(ang.astype(np.float64)).astype(F32)[:, None, :]
        x1, x2 = x[..., :half], x[..., half:rot]
        out = x.copy()
        out[..., :half] = r(x1 * cos - x2 * sin)
        out[..., half:rot] = r(x1 * sin + x2 * cos)
        return out

    # ---- layers
    def attention(self, P, x, cache, pos0):
        tc = self.tc
        T = x.shape[0]
        D, Hq, Hkv = tc["head_dim"], tc["num_attention_heads"], tc["num_key_value_heads"]
        qg = self.qmm(x, P + "q_proj").reshape(T, Hq, 2 * D)
        q, gate = qg[..., :D], qg[..., D:]
        k = self.qmm(x, P + "k_proj").reshape(T, Hkv, D)
        v = self.qmm(x, P + "v_proj").reshape(T, Hkv, D)
        q = self.rms_norm(q, self.w(P + "q_norm.weight"))
        k = self.rms_norm(k, self.w(P + "k_norm.weight"))
        rot = int(D * tc["rope_parameters"]["partial_rotary_factor"])
        theta = F32(tc["rope_parameters"]["rope_theta"])
        q = self.rope(q, rot, pos0, theta)
        k = self.rope(k, rot, pos0, theta)
        cache["k"] = np.concatenate([cache["k"], k]) if "k" in cache else k  # [L, Hkv, D] bf16
        cache["v"] = np.concatenate([cache["v"], v]) if "v" in cache else v
        K, V = cache["k"], cache["v"]
        scale = F32(1 / math.sqrt(D))
        grp = Hq // Hkv
        out = np.empty((T, Hq, D), F32)
        for t in range(T):
            last = pos0 + t
            for h in range(Hq):
                kk, vv = K[:last + 1, h // grp], V[:last + 1, h // grp]
                s = (scale * (kk @ q[t, h])).astype(F32)  # scores in f32
                e = np.exp((s - s.max()).astype(F32)).astype(F32)
                out[t, h] = r((e @ vv).astype(F32) / e.sum(dtype=F32))
        o = r(out * sigmoid(gate))  # sigmoid_mul_bf16
        return self.qmm(o.reshape(T, Hq * D), P + "o_proj")

    def gdn(self, P, x, cache):
        tc = self.tc
        T = x.shape[0]
        Hk, Hv = tc["linear_num_key_heads"], tc["linear_num_value_heads"]
        Dk, Dv = tc["linear_key_head_dim"], tc["linear_value_head_dim"]
        K = tc["linear_conv_kernel_dim"]
        C = 2 * Hk * Dk + Hv * Dv
        qkv = self.qmm(x, P + "in_proj_qkv")
        z = self.qmm(x, P + "in_proj_z").reshape(T, Hv, Dv)
        b = self.qmm(x, P + "in_proj_b")
        a = self.qmm(x, P + "in_proj_a")
        # conv1d_silu_bf16: f32 sum over the window, silu, one rounding; state = raw inputs
        W = self.w(P + "conv1d.weight").reshape(C, K)
        state = cache.get("conv", np.zeros((K - 1, C), F32))
        ci = np.concatenate([state, qkv])
        s = np.zeros((T, C), F32)
        for k in range(K):
            s = (s + ci[k:k + T] * W[:, k]).astype(F32)
        conv = r(silu(s))
        cache["conv"] = ci[T:].copy()
        # gdn_gates_bf16
        beta = r(sigmoid(b))
        sp = r(softplus(r(a + self.w(P + "dt_bias"))))
        g = np.exp((-np.exp(self.w(P + "A_log").astype(np.float64)).astype(F32) * sp).astype(np.float64)).astype(F32)
        # gdn_recurrence_bf16
        q = conv[:, :Hk * Dk].reshape(T, Hk, Dk)
        k_ = conv[:, Hk * Dk:2 * Hk * Dk].reshape(T, Hk, Dk)
        v = conv[:, 2 * Hk * Dk:].reshape(T, Hv, Dv)
        q = r(r(q * rms_inv(q, 1e-6)) * (F32(1) / F32(Dk)))
        k_ = r(r(k_ * rms_inv(k_, 1e-6)) * F32(1 / math.sqrt(Dk)))
        S = cache.get("state", np.zeros((Hv, Dv, Dk), F32))
        rep = Hv // Hk
        o = np.empty((T, Hv, Dv), F32)
        for t in range(T):
            for h in range(Hv):
                kk, qq = k_[t, h // rep], q[t, h // rep]
                Sh = (S[h] * g[t, h]).astype(F32)
                u = (Sh @ kk).astype(F32)
                delta = (beta[t, h] * (v[t, h] - u)).astype(F32)
                Sh = (Sh + delta[:, None] * kk[None, :]).astype(F32)
                S[h] = Sh
                o[t, h] = r(Sh @ qq)
        cache["state"] = S
        y = self.rms_norm_gated(o, z, self.w(P + "norm.weight"))
        return self.qmm(y.reshape(T, Hv * Dv), P + "out_proj")

    def dense(self, P, x):
        gt = self.qmm(x, P + "gate_proj")
        up = self.qmm(x, P + "up_proj")
        return self.qmm(r(silu(gt) * up), P + "down_proj")

    def moe(self, P, x):
        tc = self.tc
        T = x.shape[0]
        E, k = tc["num_experts"], tc["num_experts_per_tok"]
        logits = self.qmm(x, P + "gate")
        # router_topk_bf16
        ex = np.exp((logits - logits.max(-1, keepdims=True)).astype(F32)).astype(F32)
        p = r(ex * (F32(1) / ex.sum(-1, keepdims=True, dtype=F32)))
        ids = np.argsort(-p, axis=-1, kind="stable")[:, :k]  # ties: lower index first
        wts = np.take_along_axis(p, ids, axis=-1)
        if tc.get("norm_topk_prob", True):
            wts = r(wts / r(wts.sum(-1, keepdims=True, dtype=F32)))
        Wg, Wu, Wd = (self.w(P + "switch_mlp." + n) for n in ("gate_proj", "up_proj", "down_proj"))
        routed = np.empty_like(x)
        for t in range(T):
            acc = np.zeros(x.shape[1], F32)
            for s in range(k):
                e = ids[t, s]
                h = r(silu(r(Wg[e] @ x[t])) * r(Wu[e] @ x[t]))
                acc = (acc + wts[t, s] * r(Wd[e] @ h)).astype(F32)  # moe_combine_bf16
            routed[t] = r(acc)
        sh = self.dense(P + "shared_expert.", x)
        sg = self.qmm(x, P + "shared_expert_gate")  # [T,1]
        return r(routed + sigmoid(sg) * sh)  # add_sigmoid_scaled_bf16

    # ---- model
    def new_cache(self):
        return [dict() for _ in range(self.tc["num_hidden_layers"])]

    def forward(self, ids, cache, pos0):
        """ids of one pass at position pos0; returns f32 logits [T, V]."""
        tc = self.tc
        lm = self.lm
        x = r(self.w(lm + "embed_tokens")[np.asarray(ids)])  # embed_dequant_bf16
        for i, lt in enumerate(tc["layer_types"]):
            P = f"{lm}layers.{i}."
            xn = self.rms_norm(x, self.w(P + "input_layernorm.weight"))
            if lt == "full_attention":
                br = self.attention(P + "self_attn.", xn, cache[i], pos0)
            else:
                br = self.gdn(P + "linear_attn.", xn, cache[i])
            x = r(x + br)
            xn = self.rms_norm(x, self.w(P + "post_attention_layernorm.weight"))
            br = self.moe(P + "mlp.", xn) if tc.get("num_experts", 0) else self.dense(P + "mlp.", xn)
            x = r(x + br)
        h = self.rms_norm(x, self.w(lm + "norm.weight"))
        return self.matmul_f32(h, self.w(self.head))  # qmatmul_bf16_f32

    def score(self, ids, prefill):
        """Teacher-forced logits [len, V]: `prefill` tokens in one pass, then one at a time."""
        cache = self.new_cache()
        out = [self.forward(ids[:prefill], cache, 0)]
        for p in range(prefill, len(ids)):
            out.append(self.forward(ids[p:p + 1], cache, p))
        return np.concatenate(out)


def logsumexp(v):
    v = v.astype(np.float64)
    m = v.max(-1, keepdims=True)
    return (m + np.log(np.exp(v - m).sum(-1, keepdims=True)))[..., 0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--testdata", default=os.path.join(here, "..", "..", "testdata"))
    ap.add_argument("--models", default="tiny-dense,tiny-moe")
    ap.add_argument("--no-check", action="store_true", help="skip the one-pass consistency check")
    args = ap.parse_args()
    ok = True
    for name in args.models.split(","):
        t0 = time.time()
        m = Model(os.path.join(args.testdata, "models", name))
        with open(os.path.join(args.testdata, "goldens", name + ".json")) as f:
            gold = json.load(f)
        doc = {
            "model": name,
            "meta": {
                "source": "tools/goldens/bf16_reference.py",
                "dtype": "bf16 activations per kernels/README.md (numpy f32 math, bf16 round-to-nearest-even "
                         "at the contract's points; f32 GDN state; f32 logits from the bf16 final norm)",
                "numpy": np.__version__,
                "split": "per prompt: first max(1, len//2) tokens in one pass, the rest one at a time "
                         "with caches (as `bagel score --prefill len//2`)",
                "top_ids": "the transformers golden's top-20 ids (goldens/<name>.json); top_logits are "
                           "this reference's logits at those ids, logsumexp over this reference's logits",
                "positions": "positions[i] holds the logits that predict token i+1 (as `bagel score`)",
            },
            "prompts": [],
        }
        diffs, split_diffs = [], []
        for pr in gold["prompts"]:
            ids = pr["ids"]
            n = max(1, len(ids) // 2)
            lg = m.score(ids, n)
            if not args.no_check:
                whole = m.forward(ids, m.new_cache(), 0)
                split_diffs.append(float(np.abs(whole - lg).max()))
            lse = logsumexp(lg)
            pos = []
            for i, gp in enumerate(pr["positions"]):
                tid = gp["top_ids"]
                mine = lg[i, tid]
                diffs.append(np.abs(mine.astype(np.float64) - np.asarray(gp["top_logits"])))
                pos.append({"top_ids": tid, "top_logits": [float(v) for v in mine], "logsumexp": float(lse[i])})
            doc["prompts"].append({"ids": ids, "positions": pos})
        d = np.concatenate(diffs)
        doc["meta"]["vs_f32_golden"] = {"max_abs": float(d.max()), "median_abs": float(np.median(d)),
                                        "p99_abs": float(np.quantile(d, 0.99))}
        if split_diffs:
            doc["meta"]["split_vs_one_pass_max_abs"] = max(split_diffs)
        p = os.path.join(args.testdata, "goldens", name + ".bf16.json")
        with open(p, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
        print(f"[{name}] |bf16 ref - HF f32| over golden top-20 entries: max {d.max():.4f}, "
              f"median {np.median(d):.4f}, p99 {np.quantile(d, 0.99):.4f}; "
              f"split vs one pass max|d| {max(split_diffs) if split_diffs else float('nan'):.3g}; "
              f"wrote {p} ({time.time() - t0:.1f}s)", flush=True)
        if split_diffs and max(split_diffs) != 0.0:
            ok = False
            print(f"[{name}] WARNING: split and one-pass logits differ", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
