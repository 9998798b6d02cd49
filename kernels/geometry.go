package kernels

import (
	"fmt"

	"bagel/backend"
)

// Shared launch shapes. Every kernel's geometry reads its scalars by argument
// index (buffers first, then scalars, as kernels/README.md orders them).

// elementGroup is the threadgroup size of the one-thread-per-element kernels.
const elementGroup = 256

// rowGroup is the threadgroup size of the one-SIMD-group-per-row matmuls: 8 rows
// per threadgroup.
const rowGroup = 256

// intArg is scalar argument i as an int; a missing or non-int argument panics
// with the kernel named (a programmer error, as in Dispatch).
func intArg(kernel string, args []backend.Arg, i int) int {
	if i >= len(args) || args[i].Kind != backend.ArgInt {
		panic(fmt.Sprintf("kernels: %s: argument %d is not an int scalar (%d arguments)", kernel, i, len(args)))
	}
	return int(args[i].Int)
}

// ceilDiv is ⌈n/d⌉ for n ≥ 0.
func ceilDiv(n, d int) int { return (n + d - 1) / d }

// dim1 is a 1-D launch size.
func dim1(x int) backend.Dim3 { return backend.Dim3{X: x, Y: 1, Z: 1} }

// perElement launches one thread per element of an n-element output.
func perElement(n int) (grid, group backend.Dim3) {
	return dim1(ceilDiv(n, elementGroup)), dim1(elementGroup)
}

// perRow launches one SIMD-group per output row, rows blocks of 8 per matrix
// and count matrices (tokens, or token-slots for the gather).
func perRow(rows, count int) (grid, group backend.Dim3) {
	return dim1(ceilDiv(rows, rowGroup/32) * count), dim1(rowGroup)
}

// limit panics when v > max: the kernel holds that many values in fixed arrays.
func limit(kernel, what string, v, max int) {
	if v > max {
		panic(fmt.Sprintf("kernels: %s: %s = %d exceeds the kernel's limit of %d", kernel, what, v, max))
	}
}

func init() {
	// quant.metal: ids|x, w, scales, biases, out, then scalars.
	geometry["embed_dequant_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		return perElement(intArg("embed_dequant_bf16", a, 5) * intArg("embed_dequant_bf16", a, 6))
	}
	for _, name := range []string{"qmatmul_bf16", "qmatmul_bf16_f32"} {
		geometry[name] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
			return perRow(intArg(name, a, 7), intArg(name, a, 5)) // Out rows, T tokens
		}
	}
	geometry["qmatmul_gather_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "qmatmul_gather_bf16"
		return perRow(intArg(k, a, 9), intArg(k, a, 6)*intArg(k, a, 7)) // Out rows, T·K slots
	}

	// norm.metal: one threadgroup per row, up to 256 threads.
	norm := func(name string, rIdx int) {
		geometry[name] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
			R, N := intArg(name, a, rIdx), intArg(name, a, rIdx+1)
			return dim1(R), dim1(min(256, max(32, ceilDiv(N, 32)*32)))
		}
	}
	norm("rms_norm_bf16", 3)
	norm("rms_norm_gated_bf16", 4)

	// elementwise.metal
	geometry["sigmoid_mul_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		return perElement(intArg("sigmoid_mul_bf16", a, 3))
	}
	geometry["add_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		return perElement(intArg("add_bf16", a, 3))
	}
	geometry["swiglu_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		return perElement(intArg("swiglu_bf16", a, 3))
	}
	geometry["add_sigmoid_scaled_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "add_sigmoid_scaled_bf16"
		return perElement(intArg(k, a, 4) * intArg(k, a, 5))
	}
	geometry["split_qgate_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "split_qgate_bf16"
		return perElement(intArg(k, a, 3) * intArg(k, a, 4) * intArg(k, a, 5))
	}
	geometry["moe_combine_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "moe_combine_bf16"
		return perElement(intArg(k, a, 3) * intArg(k, a, 5)) // T·H outputs
	}

	// attention.metal
	geometry["rope_neox_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "rope_neox_bf16"
		return perElement(intArg(k, a, 1) * intArg(k, a, 2) * (intArg(k, a, 4) / 2)) // T·H·rotDims/2
	}
	geometry["kv_append_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "kv_append_bf16"
		return perElement(intArg(k, a, 4) * intArg(k, a, 5) * intArg(k, a, 6)) // T·Hkv·D
	}
	geometry["attention_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "attention_bf16"
		limit(k, "D", intArg(k, a, 7), AttentionMaxHeadDim)
		return dim1(intArg(k, a, 4) * intArg(k, a, 5)), dim1(AttentionSimdGroups * 32) // T·Hq
	}

	// gdn.metal
	geometry["conv1d_silu_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "conv1d_silu_bf16"
		limit(k, "K", intArg(k, a, 6), ConvMaxKernel)
		return perElement(intArg(k, a, 5)) // one thread per channel
	}
	geometry["gdn_gates_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "gdn_gates_bf16"
		return perElement(intArg(k, a, 6) * intArg(k, a, 7))
	}
	geometry["gdn_recurrence_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "gdn_recurrence_bf16"
		limit(k, "Dk", intArg(k, a, 8), GDNMaxKeyDim)
		Hv, Dv := intArg(k, a, 7), intArg(k, a, 9)
		return dim1(Hv * ceilDiv(Dv, gdnRowsPerGroup)), dim1(gdnRowsPerGroup * 32)
	}

	// router.metal: one SIMD-group per token.
	geometry["router_topk_bf16"] = func(a []backend.Arg) (backend.Dim3, backend.Dim3) {
		const k = "router_topk_bf16"
		limit(k, "E", intArg(k, a, 4), RouterMaxExperts)
		return dim1(intArg(k, a, 3)), dim1(32)
	}
}

// Limits of the kernels' fixed-size arrays; the #defines of the same value in the
// .metal files are checked against these by the package tests.
const (
	AttentionMaxHeadDim = 256  // ATTN_MAX_D
	AttentionSimdGroups = 8    // ATTN_SIMDGROUPS
	ConvMaxKernel       = 8    // CONV_MAX_K
	GDNMaxKeyDim        = 256  // GDN_MAX_DK
	RouterMaxExperts    = 1024 // ROUTER_MAX_E
	gdnRowsPerGroup     = 4    // state rows (SIMD-groups) per threadgroup
)
