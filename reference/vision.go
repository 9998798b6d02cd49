package reference

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// The vision tower's forward (transformers' Qwen3_5VisionModel, which is
// Qwen3-VL's ViT without DeepStack; mlx-vlm's qwen3_vl vision.py), written
// from those sources' math in plain float64 loops, for one image: patches
// in the processor's order (2×2 merge blocks together, the blocks row by
// row), each patch's pixels in (channel, frame, y, x) order as
// image_processing_qwen2_vl's flatten leaves them.
//
// Rounding MLX rounds to bf16 where a bf16 run stores a tensor: the pixels
// (cast to the weights' dtype), the patch embedding, the interpolated
// position embedding and its sum, each LayerNorm, each linear (before its
// activation) and activation, q and k after the rotary, the attention's
// output, each residual add. The scores, the softmax and the rotary's
// angles stay exact. Exact rounds nowhere.

// visionConfig is config.json's vision_config.
type visionConfig struct {
	Depth        int `json:"depth"`
	Hidden       int `json:"hidden_size"`
	Intermediate int `json:"intermediate_size"`
	Heads        int `json:"num_heads"`
	InChannels   int `json:"in_channels"`
	Patch        int `json:"patch_size"`
	Temporal     int `json:"temporal_patch_size"`
	Merge        int `json:"spatial_merge_size"`
	OutHidden    int `json:"out_hidden_size"`
	Positions    int `json:"num_position_embeddings"`
}

func readVisionConfig(dir string) (*visionConfig, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	var top struct {
		Vision *visionConfig `json:"vision_config"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	if top.Vision == nil {
		return nil, fmt.Errorf("config.json has no vision_config")
	}
	v := top.Vision
	if v.InChannels == 0 {
		v.InChannels = 3
	}
	if v.Heads <= 0 || v.Hidden%v.Heads != 0 || v.Merge <= 0 || v.Depth < 0 {
		return nil, fmt.Errorf("vision_config: %+v", *v)
	}
	return v, nil
}

// EncodeImage runs one image's patches (rows × cols patches of one frame,
// rows and cols multiples of the merge size; pixels [rows·cols][C·T·P·P])
// through the checkpoint's vision tower in dir and returns the merged
// tokens [rows·cols/merge²][out_hidden_size].
func EncodeImage(dir string, pixels [][]float64, rows, cols int, r Rounding) ([][]float64, error) {
	v, err := readVisionConfig(dir)
	if err != nil {
		return nil, err
	}
	w, err := openTower(dir)
	if err != nil {
		return nil, err
	}
	defer w.ck.Close()
	f := &fwd{r: r}
	if len(pixels) != rows*cols || rows%v.Merge != 0 || cols%v.Merge != 0 {
		return nil, fmt.Errorf("encode: %d patches for a %d×%d grid (merge %d)", len(pixels), rows, cols, v.Merge)
	}
	x, err := w.patchEmbed(f, v, pixels)
	if err != nil {
		return nil, err
	}
	pos, err := w.positions(f, v, rows, cols)
	if err != nil {
		return nil, err
	}
	x = f.add(x, pos)
	rowOf, colOf := blockOrder(rows, cols, v.Merge)
	for i := range v.Depth {
		p := w.prefix + "blocks." + strconv.Itoa(i) + "."
		h, err := w.layerNorm(f, p+"norm1", x, v.Hidden)
		if err != nil {
			return nil, err
		}
		a, err := w.attention(f, v, p+"attn.", h, rowOf, colOf)
		if err != nil {
			return nil, err
		}
		x = f.add(x, a)
		if h, err = w.layerNorm(f, p+"norm2", x, v.Hidden); err != nil {
			return nil, err
		}
		m, err := w.dense(f, p+"mlp.linear_fc1", h, v.Intermediate, v.Hidden, geluTanh)
		if err != nil {
			return nil, err
		}
		if m, err = w.dense(f, p+"mlp.linear_fc2", m, v.Hidden, v.Intermediate, nil); err != nil {
			return nil, err
		}
		x = f.add(x, m)
	}
	h, err := w.layerNorm(f, w.prefix+"merger.norm", x, v.Hidden)
	if err != nil {
		return nil, err
	}
	group := v.Merge * v.Merge
	merged := make([][]float64, len(h)/group)
	for i := range merged {
		for j := range group {
			merged[i] = append(merged[i], h[i*group+j]...)
		}
	}
	wide := v.Hidden * group
	m, err := w.dense(f, w.prefix+"merger.linear_fc1", merged, wide, wide, geluErf)
	if err != nil {
		return nil, err
	}
	return w.dense(f, w.prefix+"merger.linear_fc2", m, v.OutHidden, wide, nil)
}

// towerWeights are the checkpoint's tower tensors under their prefix
// (mlx-vlm's vision_tower., Hugging Face's model.visual.).
type towerWeights struct {
	*weights
	prefix string
}

func openTower(dir string) (*towerWeights, error) {
	w, err := openWeights(dir, &config{Tied: true})
	if err != nil {
		return nil, err
	}
	for _, p := range []string{"vision_tower.", "model.visual."} {
		if _, ok := w.ck.Tensor(p + "patch_embed.proj.weight"); ok {
			return &towerWeights{weights: w, prefix: p}, nil
		}
	}
	w.ck.Close()
	return nil, fmt.Errorf("%s: no vision tower (vision_tower.* or model.visual.*)", dir)
}

// blockOrder is each sequence row's (row, column) on the patch grid: the
// merge blocks row by row, the patches of a block row by row.
func blockOrder(rows, cols, merge int) (rowOf, colOf []int) {
	for br := 0; br < rows; br += merge {
		for bc := 0; bc < cols; bc += merge {
			for i := range merge * merge {
				rowOf, colOf = append(rowOf, br+i/merge), append(colOf, bc+i%merge)
			}
		}
	}
	return rowOf, colOf
}

// patchEmbed is the Conv3d whose kernel is its stride, patch by patch. Its
// weight is [D, C, T, P, P] (PyTorch) or [D, T, P, P, C] (MLX).
func (w *towerWeights) patchEmbed(f *fwd, v *visionConfig, pixels [][]float64) ([][]float64, error) {
	name := w.prefix + "patch_embed.proj.weight"
	t, err := w.tensor(name)
	if err != nil {
		return nil, err
	}
	wt, err := floats(t)
	if err != nil {
		return nil, err
	}
	bias, err := w.vector(w.prefix+"patch_embed.proj.bias", v.Hidden)
	if err != nil {
		return nil, err
	}
	c, tp, p := v.InChannels, v.Temporal, v.Patch
	in := c * tp * p * p
	if len(wt) != v.Hidden*in {
		return nil, fmt.Errorf("%s: %d values, want %d", name, len(wt), v.Hidden*in)
	}
	mlxLayout := t.Shape[len(t.Shape)-1] == c && len(t.Shape) == 5 && t.Shape[1] == tp
	out := make([][]float64, len(pixels))
	for n, px := range pixels {
		if len(px) != in {
			return nil, fmt.Errorf("patch %d: %d values, want %d", n, len(px), in)
		}
		out[n] = make([]float64, v.Hidden)
		for o := range v.Hidden {
			s := 0.0
			for ci := range c {
				for fr := range tp {
					for y := range p {
						for x := range p {
							k := ((ci*tp+fr)*p+y)*p + x // the pixel row's order
							wi := k
							if mlxLayout {
								wi = ((fr*p+y)*p+x)*c + ci
							}
							s += f.rnd(px[k]) * wt[o*in+wi]
						}
					}
				}
			}
			out[n][o] = f.rnd(s + bias[o])
		}
	}
	return out, nil
}

// positions is the learned square table bilinearly resampled (corners
// aligned) to the rows × cols patch grid, in the sequence's order.
func (w *towerWeights) positions(f *fwd, v *visionConfig, rows, cols int) ([][]float64, error) {
	side := int(math.Sqrt(float64(v.Positions)))
	table, err := w.vector(w.prefix+"pos_embed.weight", v.Positions*v.Hidden)
	if err != nil {
		return nil, err
	}
	at := func(i, n int) float64 {
		if n == 1 {
			return 0
		}
		return float64(i) * float64(side-1) / float64(n-1)
	}
	rowOf, colOf := blockOrder(rows, cols, v.Merge)
	out := make([][]float64, len(rowOf))
	for n := range out {
		y, x := at(rowOf[n], rows), at(colOf[n], cols)
		y0, x0 := int(math.Floor(y)), int(math.Floor(x))
		y1, x1 := min(y0+1, side-1), min(x0+1, side-1)
		dy, dx := y-float64(y0), x-float64(x0)
		out[n] = make([]float64, v.Hidden)
		for j := range out[n] {
			e := func(r, c int) float64 { return table[(r*side+c)*v.Hidden+j] }
			out[n][j] = f.rnd((1-dy)*(1-dx)*e(y0, x0) + (1-dy)*dx*e(y0, x1) + dy*(1-dx)*e(y1, x0) + dy*dx*e(y1, x1))
		}
	}
	return out, nil
}

// layerNorm is PyTorch's LayerNorm (eps 1e-6, weight and bias) per row.
func (w *towerWeights) layerNorm(f *fwd, path string, x [][]float64, n int) ([][]float64, error) {
	g, err := w.vector(path+".weight", n)
	if err != nil {
		return nil, err
	}
	b, err := w.vector(path+".bias", n)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(x))
	for i, row := range x {
		mean, vr := 0.0, 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(n)
		for _, v := range row {
			vr += (v - mean) * (v - mean)
		}
		inv := 1 / math.Sqrt(vr/float64(n)+1e-6)
		out[i] = make([]float64, n)
		for j, v := range row {
			out[i][j] = f.rnd((v-mean)*inv*g[j] + b[j])
		}
	}
	return out, nil
}

// dense is x·Wᵀ + b for the bf16 (or f16, f32) linear at path, then act.
func (w *towerWeights) dense(f *fwd, path string, x [][]float64, out, in int, act func(float64) float64) ([][]float64, error) {
	wt, err := w.vector(path+".weight", out*in)
	if err != nil {
		return nil, err
	}
	b, err := w.vector(path+".bias", out)
	if err != nil {
		return nil, err
	}
	y := make([][]float64, len(x))
	for i, row := range x {
		y[i] = make([]float64, out)
		for o := range out {
			s := b[o]
			for j, v := range row {
				s += v * wt[o*in+j]
			}
			y[i][o] = f.rnd(s)
			if act != nil {
				y[i][o] = f.rnd(act(y[i][o]))
			}
		}
	}
	return y, nil
}

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func geluErf(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// attention is the block's attention: qkv, the 2-D rotary of q and k (head
// dims [0, D/4) turn with the patch's row, [D/4, D/2) with its column, each
// paired with the dim D/2 on, base 10000), softmax(q·kᵀ/√D) over all the
// image's patches, then proj.
func (w *towerWeights) attention(f *fwd, v *visionConfig, p string, x [][]float64, rowOf, colOf []int) ([][]float64, error) {
	d := v.Hidden
	qkv, err := w.dense(f, p+"qkv", x, 3*d, d, nil)
	if err != nil {
		return nil, err
	}
	hd := d / v.Heads
	half, quarter := hd/2, hd/4
	turn := func(head []float64, n int) []float64 {
		out := make([]float64, hd)
		for i := range half {
			pos, j := rowOf[n], i
			if i >= quarter {
				pos, j = colOf[n], i-quarter
			}
			a := float64(pos) * math.Pow(10000, -float64(2*j)/float64(half))
			c, s := math.Cos(a), math.Sin(a)
			out[i] = f.rnd(head[i]*c - head[i+half]*s)
			out[i+half] = f.rnd(head[i+half]*c + head[i]*s)
		}
		return out
	}
	t := len(x)
	att := make([][]float64, t)
	for n := range att {
		att[n] = make([]float64, d)
	}
	scale := 1 / math.Sqrt(float64(hd))
	for h := range v.Heads {
		q, k := make([][]float64, t), make([][]float64, t)
		for n := range t {
			q[n] = turn(qkv[n][h*hd:(h+1)*hd], n)
			k[n] = turn(qkv[n][d+h*hd:d+(h+1)*hd], n)
		}
		scores := make([]float64, t)
		for n := range t {
			for j := range t {
				s := 0.0
				for i := range hd {
					s += q[n][i] * k[j][i]
				}
				scores[j] = s * scale
			}
			p := softmax(scores)
			for i := range hd {
				acc := 0.0
				for j := range t {
					acc += p[j] * qkv[j][2*d+h*hd+i]
				}
				att[n][h*hd+i] = f.rnd(acc)
			}
		}
	}
	return w.dense(f, p+"proj", att, d, d, nil)
}
