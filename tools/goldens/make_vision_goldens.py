#!/usr/bin/env python3
"""tiny-vision: transformers' Qwen3.5 with its vision tower, as a golden for Bagel.

Builds tiny-dense's text model (make_goldens.py) with a tiny random vision tower
(2 blocks of 64, 4 heads, MLP 128, patches of 16 merged 2x2, a learned 8x8
position table), writes it in mlx-vlm's layout (language_model.* quantized as
make_goldens writes it, vision_tower.* bf16 with the patch embedding channels
last) with a preprocessor_config.json, then runs transformers'
Qwen3_5ForConditionalGeneration in float32 (eager attention) on the dequantized
weights:

- each image of IMAGES through the Qwen2VL image processor and the tower: its
  grid and the merger's output rows (image_embeds), and for STAGED the
  processor's pixels and the tower's stages;
- one prompt holding both images, teacher-forced: per position the top-20
  logits, logsumexp and margin, and get_rope_index's three positions.

Output: testdata/models/tiny-vision/ and testdata/goldens/tiny-vision.json.
Nothing here runs in CI; it last ran on the GPU machine's CPU on 2026-12-05
(transformers 5.17.0), and engine.TestImagesMatchTransformers reads its output.

    PYTHONUNBUFFERED=1 python3 tools/goldens/make_vision_goldens.py --out testdata
"""
import argparse
import base64
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402

F32 = np.float32
NAME = "tiny-vision"
IMAGES = ["big.png", "tall.png"]  # testdata/vision
STAGED = "tall.png"  # its tower's stages are kept too
# A vocabulary of 1024 (the text model's embedding and head at Qwen3's
# 151936 would make the committed checkpoint 12 MB instead of 1), with the
# image markers and the end of text at its top: the config names them, and
# Bagel and transformers read them from there.
VOCAB = 1024
IMAGE_PAD, VISION_START, VISION_END, EOS = 1000, 997, 998, 1001
MIN_PIXELS, MAX_PIXELS = 2048, 65536
VISION = {
    "depth": 2,
    "hidden_size": 64,
    "hidden_act": "gelu_pytorch_tanh",
    "intermediate_size": 128,
    "num_heads": 4,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "num_position_embeddings": 64,
    "deepstack_visual_indexes": [],
}


def spec():
    s = json.loads(json.dumps(mg.MODELS["tiny-dense"]))
    s["seed"] = 4321
    s["text_config"]["vocab_size"] = VOCAB
    s["text_config"]["eos_token_id"] = EOS
    return s


def build_tower(B, out_hidden):
    """Random tower weights (bf16-rounded): B.mlx in mlx-vlm's layout, and the
    same values for transformers under model.visual.*"""
    v = VISION
    h, inter = v["hidden_size"], v["intermediate_size"]
    p, tp, c = v["patch_size"], v["temporal_patch_size"], v["in_channels"]
    merged = h * v["spatial_merge_size"] ** 2

    def put(name, x):
        val = B.bf16("vision_tower." + name, x)
        B.hf["model.visual." + name] = val
        return val

    def lin(name, out, inp):
        put(name + ".weight", B.normal((out, inp), 1.0 / math.sqrt(inp)))
        put(name + ".bias", B.normal(out, 0.02))

    def norm(name, n):
        put(name + ".weight", B.normal(n, 0.05) + F32(1.0))
        put(name + ".bias", B.normal(n, 0.02))

    # the Conv3d: PyTorch [out, in, t, p, p]; mlx-vlm keeps [out, t, p, p, in]
    w = mg.bf16_round(B.normal((h, c, tp, p, p), 1.0 / math.sqrt(c * tp * p * p)))
    B.mlx["vision_tower.patch_embed.proj.weight"] = ("BF16", mg.f32_to_bf16_bits(np.ascontiguousarray(w.transpose(0, 2, 3, 4, 1))))
    B.hf["model.visual.patch_embed.proj.weight"] = w
    put("patch_embed.proj.bias", B.normal(h, 0.02))
    put("pos_embed.weight", B.normal((v["num_position_embeddings"], h), 0.5))
    for i in range(v["depth"]):
        b = f"blocks.{i}."
        norm(b + "norm1", h)
        norm(b + "norm2", h)
        lin(b + "attn.qkv", 3 * h, h)
        lin(b + "attn.proj", h, h)
        lin(b + "mlp.linear_fc1", inter, h)
        lin(b + "mlp.linear_fc2", h, inter)
    norm("merger.norm", h)
    lin("merger.linear_fc1", merged, merged)
    lin("merger.linear_fc2", out_hidden, merged)


def write_model(out_dir):
    s = spec()
    B = mg.build_model(NAME, s)
    H = s["text_config"]["hidden_size"]
    build_tower(B, H)
    d = os.path.join(out_dir, "models", NAME)
    os.makedirs(d, exist_ok=True)
    cfg = mg.mlx_config(NAME, s, B.overrides)
    cfg["vision_config"] = dict(VISION, out_hidden_size=H, model_type="qwen3_5")
    cfg["image_token_id"], cfg["vision_start_token_id"], cfg["vision_end_token_id"] = IMAGE_PAD, VISION_START, VISION_END
    cfg["eos_token_id"] = EOS
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(dict(sorted(cfg.items())), f, indent=4)
        f.write("\n")
    pre = {"image_processor_type": "Qwen2VLImageProcessor", "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
           "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "do_resize": True, "do_rescale": True,
           "rescale_factor": 1 / 255, "do_normalize": True, "do_convert_rgb": True,
           "size": {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS}}
    with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
        json.dump(pre, f, indent=4)
        f.write("\n")
    mg.write_safetensors(os.path.join(d, "model.safetensors"), B.mlx, {"format": "mlx"})
    print(f"[{NAME}] wrote {len(B.mlx)} tensors to {d}", flush=True)
    return B, s


def run_hf(out_dir, B, s, image_dir, device):
    import torch
    import transformers
    from PIL import Image
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration, Qwen2VLImageProcessor

    tc = s["text_config"]
    text = {k: tc[k] for k in mg.HF_FIELDS if k in tc}
    text["rope_parameters"] = dict(tc["rope_parameters"])
    cfg = Qwen3_5Config(text_config=text, vision_config=dict(VISION, out_hidden_size=tc["hidden_size"]),
                        image_token_id=IMAGE_PAD, vision_start_token_id=VISION_START, vision_end_token_id=VISION_END,
                        tie_word_embeddings=tc["tie_word_embeddings"])
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = Qwen3_5ForConditionalGeneration(cfg).to(torch.float32).eval()
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    sd = model.state_dict()
    mine = {}
    for k, v in B.hf.items():  # make_goldens names the text model as a CausalLM's
        if k.startswith("model.") and not k.startswith("model.visual."):
            k = "model.language_model." + k[len("model."):]
        mine[k] = v
    if "lm_head.weight" in sd and "lm_head.weight" not in mine:
        mine["lm_head.weight"] = mine["model.language_model.embed_tokens.weight"]
    missing, unexpected = sorted(set(sd) - set(mine)), sorted(set(mine) - set(sd))
    bad = sorted(k for k in set(sd) & set(mine) if tuple(sd[k].shape) != tuple(mine[k].shape))
    if missing or unexpected or bad:
        sys.exit(f"FATAL: state dict mismatch: missing {missing} unexpected {unexpected} bad shapes "
                 f"{[(k, tuple(sd[k].shape), mine[k].shape) for k in bad]}")
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v, dtype=F32)) for k, v in mine.items()}, strict=True)
    model = model.to(device)

    proc = Qwen2VLImageProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=16, temporal_patch_size=2,
                                 merge_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    golden = {"model": NAME, "meta": {"transformers": transformers.__version__, "torch": torch.__version__,
                                      "dtype": "float32", "device": str(device)}, "images": []}
    pixel_values, grids, tokens = [], [], []
    with torch.no_grad():
        for name in IMAGES:
            img = Image.open(os.path.join(image_dir, name)).convert("RGB")
            out = proc(images=[img], return_tensors="pt")
            pv, grid = out["pixel_values"].to(device), out["image_grid_thw"].to(device)
            # The tower's stages for the smallest image, to place a
            # disagreement: float32 little-endian, base64, in patch order
            # (merge blocks, as the processor and the tower order them).
            stages, hooks = {}, []
            if name == STAGED:
                vis = model.model.visual
                keep = lambda key: (lambda mod, inp, out: stages.__setitem__(key, out[0] if isinstance(out, tuple) else out))
                hooks.append(vis.patch_embed.register_forward_hook(keep("patch_embed")))
                hooks.append(vis.blocks[0].register_forward_hook(keep("block0")))
                hooks.append(vis.blocks[-1].register_forward_hook(keep("blocks")))
                stages["pixels"] = pv
                # the patches with the resampled position table added: the
                # first block's input
                hooks.append(vis.blocks[0].register_forward_pre_hook(
                    lambda mod, args, kw: stages.__setitem__("embedded", args[0] if args else kw["hidden_states"]),
                    with_kwargs=True))
                hooks.append(vis.rotary_pos_emb.register_forward_hook(keep("rotary_cos")))
            emb = model.model.visual(pv, grid_thw=grid)
            for h in hooks:
                h.remove()
            emb = getattr(emb, "pooler_output", emb)
            if isinstance(emb, (tuple, list)):
                emb = emb[0]
            emb = emb.float().cpu()
            g = [int(x) for x in grid[0]]
            n = g[0] * g[1] * g[2] // 4
            if tuple(emb.shape) != (n, tc["hidden_size"]):
                sys.exit(f"FATAL: {name}: tower output {tuple(emb.shape)}, want ({n}, {tc['hidden_size']})")
            entry = {"file": name, "grid": g, "embeds": [[float(x) for x in r] for r in emb]}
            if stages:
                entry["stages"] = {k: {"shape": list(v.shape), "f32": base64.b64encode(
                    v.detach().float().cpu().contiguous().numpy().astype("<f4").tobytes()).decode()} for k, v in stages.items()}
            golden["images"].append(entry)
            pixel_values.append(pv)
            grids.append(grid)
            tokens.append(n)
            print(f"[{NAME}] {name}: grid {g}, {n} tokens, embeds std {float(emb.std()):.3f}", flush=True)

        # the prompt: text, image 1, text, image 2, text (Bagel's ids carry one pad an image)
        short = [5, 17, VISION_START, IMAGE_PAD, VISION_END, 40, 41, VISION_START, IMAGE_PAD, VISION_END, 50, 51, 52]
        ids = []
        k = 0
        for t in short:
            if t == IMAGE_PAD:
                ids += [IMAGE_PAD] * tokens[k]
                k += 1
            else:
                ids.append(t)
        inp = torch.tensor([ids], device=device)
        grid_thw = torch.cat(grids)
        # Newer releases want the processor's mm_token_type_ids (1 on an image's
        # pads) beside the grids, for get_rope_index and the forward alike.
        mm = {"mm_token_type_ids": (inp == IMAGE_PAD).long()}
        pos = None  # get_rope_index's signature moved between transformers releases
        for kwargs in ({"image_grid_thw": grid_thw, "attention_mask": torch.ones_like(inp), **mm},
                       {"image_grid_thw": grid_thw, "attention_mask": torch.ones_like(inp)}):
            try:
                pos, _ = model.model.get_rope_index(inp, **kwargs)
                break
            except (TypeError, ValueError) as e:
                print(f"[{NAME}] note: get_rope_index({sorted(kwargs)}) failed: {e!r}")
        args = dict(input_ids=inp, pixel_values=torch.cat(pixel_values), image_grid_thw=grid_thw, use_cache=False)
        try:
            out = model(**args, **mm)
        except TypeError as e:
            print(f"[{NAME}] note: the forward takes no mm_token_type_ids: {e!r}")
            out = model(**args)
        lg = out.logits[0].float().cpu()
        lse = torch.logsumexp(lg.double(), dim=-1)
        tv, ti = torch.topk(lg, mg.TOP_K, dim=-1)
        golden["prompt"] = {
            "ids": short,
            "expanded": ids,
            "rope_positions": None if pos is None else [[int(pos[a, 0, i]) for a in range(3)] for i in range(len(ids))],
            "positions": [{"top_ids": [int(v) for v in ti[i]], "top_logits": [float(v) for v in tv[i]],
                           "logsumexp": float(lse[i]), "margin": float(tv[i, 0] - tv[i, 1])} for i in range(len(ids))],
        }
        print(f"[{NAME}] prompt of {len(ids)} tokens: logits std {float(lg.std()):.3f}, "
              f"clear top-1 (margin > 0.1) at {sum(p['margin'] > 0.1 for p in golden['prompt']['positions'])}", flush=True)
    gd = os.path.join(out_dir, "goldens")
    os.makedirs(gd, exist_ok=True)
    path = os.path.join(gd, NAME + ".json")
    with open(path, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
    print(f"[{NAME}] wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output root (the repo's testdata/)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--skip-hf", action="store_true", help="write the model only (numpy)")
    args = ap.parse_args()
    t0 = time.time()
    B, s = write_model(args.out)
    if not args.skip_hf:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        run_hf(args.out, B, s, os.path.join(args.out, "vision"), args.device)
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
