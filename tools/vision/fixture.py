#!/usr/bin/python3
"""Writes testdata/vision: small images and what the Qwen2-VL image
processor's steps make of them, for vision/'s tests.

The steps are transformers' Qwen2VLImageProcessor (the slow one) as it runs
them: load_image (PIL.ImageOps.exif_transpose), convert("RGB"), smart_resize
(round to multiples of patch·merge, within min/max pixels, Python's round),
PIL's resize with BICUBIC and reducing_gap None, rescale by 1/255 in float64
then float32, normalize by mean/std 0.5 in float32, then patchify. Only PIL
and numpy are needed (Debian's python3-pil, python3-numpy): run it with
/usr/bin/python3 tools/vision/fixture.py from the repository root.
"""
import io
import json
import math
import os

import numpy as np
from PIL import Image, ImageOps

OUT = "testdata/vision"
PATCH, TEMPORAL, MERGE = 16, 2, 2
FACTOR = PATCH * MERGE
MIN_PIXELS, MAX_PIXELS = 32 * 32 * 2, 96 * 96  # small, so the fixtures stay small
MEAN = STD = [0.5, 0.5, 0.5]


def smart_resize(h, w):
    hb = round(h / FACTOR) * FACTOR
    wb = round(w / FACTOR) * FACTOR
    if hb * wb > MAX_PIXELS:
        beta = math.sqrt(h * w / MAX_PIXELS)
        hb = max(FACTOR, math.floor(h / beta / FACTOR) * FACTOR)
        wb = max(FACTOR, math.floor(w / beta / FACTOR) * FACTOR)
    elif hb * wb < MIN_PIXELS:
        beta = math.sqrt(MIN_PIXELS / (h * w))
        hb = math.ceil(h * beta / FACTOR) * FACTOR
        wb = math.ceil(w * beta / FACTOR) * FACTOR
    return hb, wb


def patches(rgb):
    x = rgb.astype(np.float64) * (1 / 255)
    x = x.astype(np.float32)
    x = (x - np.array(MEAN, dtype=np.float32)) / np.array(STD, dtype=np.float32)
    x = x.transpose(2, 0, 1)[None]  # [1, C, H, W]
    x = np.concatenate([x, x], axis=0)  # a still image fills the temporal patch
    t, c, h, w = x.shape
    gh, gw = h // PATCH, w // PATCH
    x = x.reshape(t // TEMPORAL, TEMPORAL, c, gh // MERGE, MERGE, PATCH, gw // MERGE, MERGE, PATCH)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gh * gw, c * TEMPORAL * PATCH * PATCH)


def picture(w, h, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 // max(1, w - 1), yy * 255 // max(1, h - 1), (xx + yy) * 255 // max(1, w + h - 2)], -1)
    noise = rng.integers(-40, 41, size=(h, w, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = []
    # name, size, how it is stored
    specs = [("wide.png", (90, 41), "png"), ("tall.png", (23, 77), "png"), ("big.png", (200, 150), "png"),
             ("rgba.png", (40, 40), "rgba"), ("rotated.jpg", (60, 34), "jpeg-orient6")]
    for i, (name, (w, h), kind) in enumerate(specs):
        arr = picture(w, h, i)
        img = Image.fromarray(arr)
        buf = io.BytesIO()
        if kind == "png":
            img.save(buf, "PNG")
        elif kind == "rgba":
            alpha = (np.arange(w * h).reshape(h, w) * 7 % 256).astype(np.uint8)
            Image.fromarray(np.dstack([arr, alpha]), "RGBA").save(buf, "PNG")
        else:
            exif = Image.Exif()
            exif[0x0112] = 6  # orientation: rotate 90° clockwise to view
            img.save(buf, "JPEG", quality=95, exif=exif.tobytes())
        data = buf.getvalue()
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        loaded = ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB")
        src = np.asarray(loaded)
        rh, rw = smart_resize(src.shape[0], src.shape[1])
        resized = np.asarray(loaded.resize((rw, rh), resample=Image.BICUBIC, reducing_gap=None))
        base = name.rsplit(".", 1)[0]
        with open(os.path.join(OUT, base + ".rgb"), "wb") as f:
            f.write(resized.tobytes())
        if kind == "png" and w < 100:  # the patches of two: normalize and patchify are the same steps for all
            with open(os.path.join(OUT, base + ".f32"), "wb") as f:
                f.write(patches(resized).astype("<f4").tobytes())
        cases.append({"file": name, "width": loaded.width, "height": loaded.height,
                      "resized_width": rw, "resized_height": rh, "grid": [1, rh // PATCH, rw // PATCH]})
    meta = {"made_by": "tools/vision/fixture.py", "pil": Image.__version__, "patch": PATCH, "temporal": TEMPORAL,
            "merge": MERGE, "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS, "mean": MEAN, "std": STD, "cases": cases}
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
