package ops

import "bagel/backend"

// Argmax writes, for each row of x f32 [R, N], the index of its largest value
// into out i32 [R] (greedy sampling on the device: the host then reads 4 bytes
// per row instead of N logits).
func Argmax(c *Ctx, x, out Tensor) {
	checkDType("argmax x", x, backend.F32)
	checkDType("argmax out", out, backend.I32)
	r := out.Elements()
	check(r > 0 && x.Elements()%r == 0, "argmax: x %v out %v", x, out)
	c.dispatch("argmax_f32", x.Arg(), out.Arg(), backend.Int(r), backend.Int(x.Elements()/r))
}
