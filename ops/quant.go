package ops

import (
	"bagel/backend"
)

// Embed gathers and dequantizes rows of a quantized embedding.
// ids i32 [T] → out bf16 [T, In].
func Embed(c *Ctx, ids Tensor, emb QLinear, out Tensor) {
	checkDType("embed ids", ids, backend.I32)
	checkDType("embed out", out, backend.BF16)
	t := ids.Elements()
	check(out.Elements() == t*emb.In, "embed: out %v for %d ids of width %d", out, t, emb.In)
	c.dispatch("embed_dequant_bf16", append([]backend.Arg{ids.Arg()},
		append(emb.args(), out.Arg(), backend.Int(t), backend.Int(emb.In), backend.Int(emb.Bits), backend.Int(emb.GroupSize))...)...)
}

// QMatmul computes out = x · Wᵀ for a 2-D quantized weight.
// x bf16 [T, In] → out [T, Out], bf16 or f32.
func QMatmul(c *Ctx, x Tensor, w QLinear, out Tensor) {
	checkDType("qmatmul x", x, backend.BF16)
	check(w.Experts == 0, "qmatmul: %s is a stacked expert weight", w.Name)
	check(x.Elements()%w.In == 0, "qmatmul %s: x %v, In %d", w.Name, x, w.In)
	check(x.Off%4 == 0, "qmatmul %s: x at byte offset %d: the kernel reads x as 4-byte words", w.Name, x.Off)
	t := x.Elements() / w.In
	check(out.Elements() == t*w.Out, "qmatmul %s: out %v, want [%d,%d]", w.Name, out, t, w.Out)
	name := "qmatmul_bf16"
	switch out.DType {
	case backend.BF16:
	case backend.F32:
		name = "qmatmul_bf16_f32"
	default:
		check(false, "qmatmul %s: out dtype %v", w.Name, out.DType)
	}
	args := append([]backend.Arg{x.Arg()}, w.args()...)
	args = append(args, out.Arg(), backend.Int(t), backend.Int(w.In), backend.Int(w.Out), backend.Int(w.Bits), backend.Int(w.GroupSize))
	c.dispatch(name, args...)
}

// QMatmulGather applies, for each token t and slot s, expert ids[t,s] of a stacked
// weight [E, Out, In]. x is bf16 [T, In] shared by the slots (perSlot false) or
// [T, K, In] (perSlot true); ids i32 [T, K]; out bf16 [T, K, Out].
func QMatmulGather(c *Ctx, x, ids Tensor, w QLinear, out Tensor, perSlot bool) {
	checkDType("gather x", x, backend.BF16)
	checkDType("gather ids", ids, backend.I32)
	checkDType("gather out", out, backend.BF16)
	check(w.Experts > 0, "gather: %s is not a stacked expert weight", w.Name)
	check(len(ids.Shape) == 2, "gather: ids %v", ids)
	t, k := ids.Shape[0], ids.Shape[1]
	xRows := t
	xPerSlot := 0
	if perSlot {
		xRows, xPerSlot = t*k, 1
	}
	check(x.Elements() == xRows*w.In, "gather %s: x %v", w.Name, x)
	check(x.Off%4 == 0, "gather %s: x at byte offset %d: the kernel reads x as 4-byte words", w.Name, x.Off)
	check(out.Elements() == t*k*w.Out, "gather %s: out %v", w.Name, out)
	args := append([]backend.Arg{x.Arg(), ids.Arg()}, w.args()...)
	args = append(args, out.Arg(), backend.Int(t), backend.Int(k), backend.Int(w.In), backend.Int(w.Out),
		backend.Int(w.Bits), backend.Int(w.GroupSize), backend.Int(xPerSlot))
	c.dispatch("qmatmul_gather_bf16", args...)
}
