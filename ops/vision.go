package ops

import (
	"math"

	"bagel/backend"
)

// The vision tower's operations (kernels/vision.metal): its weights are bf16
// as mlx-vlm keeps them, so its linears are dense, not QLinear.

// Dense is a bf16 linear layer with a bias: W [Out, In], B [Out].
type Dense struct {
	Name    string // checkpoint module path, for messages
	W, B    Tensor
	Out, In int
}

// Activation is what a DenseLinear applies to its rounded output.
type Activation int

// The activations of the vision tower: its blocks' MLP takes GELU's tanh
// form (gelu_pytorch_tanh), its merger the exact one (nn.GELU()).
const (
	NoActivation Activation = 0
	GELUTanh     Activation = 1
	GELU         Activation = 2
)

// DenseLinear is out = act(x·Wᵀ + B), rounded to bf16 before the activation
// and after it. x bf16 [T, In], out bf16 [T, Out].
func DenseLinear(c *Ctx, x Tensor, w Dense, out Tensor, act Activation) {
	checkDType("linear x", x, backend.BF16)
	checkDType("linear w", w.W, backend.BF16)
	checkDType("linear bias", w.B, backend.BF16)
	checkDType("linear out", out, backend.BF16)
	if w.In <= 0 || x.Elements()%w.In != 0 || w.W.Elements() != w.Out*w.In || w.B.Elements() != w.Out {
		fail("linear %s: x %v w %v bias %v, want [T, %d] · [%d, %d]", w.Name, x, w.W, w.B, w.In, w.Out, w.In)
	}
	t := x.Elements() / w.In
	if out.Elements() != t*w.Out {
		fail("linear %s: out %v, want [%d, %d]", w.Name, out, t, w.Out)
	}
	c.dispatch("linear_bf16", x.Arg(), w.W.Arg(), w.B.Arg(), out.Arg(),
		backend.Int(t), backend.Int(w.In), backend.Int(w.Out), backend.Int(int(act)))
}

// LayerNorm is out = (x − μ)/σ ⊙ w + b over rows of the width of w.
// x, out bf16 [R, N] (out may be x); w, b bf16 [N].
func LayerNorm(c *Ctx, x, w, b, out Tensor, eps float32) {
	checkDType("layer_norm x", x, backend.BF16)
	n := w.Elements()
	if !(n > 0 && x.Elements()%n == 0 && b.Elements() == n && out.Elements() == x.Elements()) {
		fail("layer_norm: x %v w %v b %v out %v", x, w, b, out)
	}
	c.dispatch("layer_norm_bf16", x.Arg(), w.Arg(), b.Arg(), out.Arg(),
		backend.Int(x.Elements()/n), backend.Int(n), backend.Float(eps))
}

// ImageAttention is the vision blocks' attention over one image's patches
// before its out-projection: qkv bf16 [T, 3·H·D] (the qkv linear's output),
// pos i32 [T, 2] (each patch's row and column on the patch grid, for the
// 2-D rotary of base theta), out bf16 [T, H·D]; every patch sees every other.
// The scratch holds q, k and v.
func ImageAttention(c *Ctx, qkv, pos, out Tensor, heads int, theta float32) {
	checkDType("image attention qkv", qkv, backend.BF16)
	checkDType("image attention pos", pos, backend.I32)
	t := pos.Elements() / 2
	if heads <= 0 || t == 0 || qkv.Elements()%(3*t*heads) != 0 || out.Elements()*3 != qkv.Elements() {
		fail("image attention: qkv %v pos %v out %v with %d heads", qkv, pos, out, heads)
	}
	d := qkv.Elements() / (3 * t * heads)
	if d%4 != 0 {
		fail("image attention: heads of %d dims, want a multiple of 4", d)
	}
	// Heads padded with zeros to the matrix units' 16 (the released tower's
	// 72 to 80), which attention_full_bf16's tiles take.
	dp := (d + 15) / 16 * 16
	q := c.Scratch.Get("vision.q", backend.BF16, t, heads, dp)
	k := c.Scratch.Get("vision.k", backend.BF16, heads, t, dp)
	v := c.Scratch.Get("vision.v", backend.BF16, heads, t, dp)
	c.dispatch("vision_attn_prep_bf16", qkv.Arg(), pos.Arg(), q.Arg(), k.Arg(), v.Arg(),
		backend.Int(t), backend.Int(heads), backend.Int(d), backend.Int(dp), backend.Float(theta))
	c.dispatch("attention_full_bf16", q.Arg(), k.Arg(), v.Arg(), out.Arg(),
		backend.Int(t), backend.Int(heads), backend.Int(d), backend.Int(dp), backend.Float(float32(1/math.Sqrt(float64(d)))))
}
