package cpu

import (
	"fmt"
	"slices"
	"unsafe"

	"bagel/backend"
	"bagel/internal/par"
	"bagel/kernels"
)

// registry maps every kernel of kernels/*.metal to its Go reference. The
// arguments' names, types and order come from the kernel's KERNEL(...)
// declaration (kernels.Signatures), which the functions read by name.
var registry = map[string]func(a *args){
	"embed_dequant_bf16":                embedDequant,
	"qmatmul_bf16":                      qmatmulBF16,
	"qmatmul_bf16_f32":                  qmatmulF32,
	"qmatmul_mma_bf16":                  qmatmulBF16, // the same product; only the GPUs' order of sums differs
	"qmatmul_mma_bf16_f32":              qmatmulF32,
	"qmatmul_mma_multi_bf16":            qmatmulMulti,
	"qmatmul_mma_multi_conv_bf16":       qmatmulMmaMultiConv,
	"qmatmul_mma_multi_conv_batch_bf16": qmatmulMmaMultiConvBatch,
	"qmatmul_gather_bf16":               qmatmulGather,
	"qmatmul_multi_bf16":                qmatmulMulti,
	"qmatmul_gather_swiglu_bf16":        qmatmulGatherSwiglu,
	"moe_down_bf16":                     moeDown,
	"moe_down_warp_bf16":                moeDown, // moe_down_bf16 at halves 1, an item a SIMD-group
	"moe_down_mma_bf16":                 moeDown, // the same products; only the GPUs' order of sums differs
	"moe_up_bf16":                       moeUp,
	"moe_up_mma_bf16":                   moeUp, // the same products; only the GPUs' order of sums differs
	"qmatmul_multi_conv_bf16":           qmatmulMultiConv,
	"qgemm_bf16":                        qgemmBF16,
	"qgemm_multi_bf16":                  qgemmMulti,
	"moe_sort_i32":                      moeSort,
	"qgemm_gather_bf16":                 qgemmGather,
	"rms_norm_bf16":                     rmsNorm,
	"rms_norm_gated_bf16":               rmsNormGated,
	"add_rms_norm_bf16":                 addRMSNorm,
	"split_qgate_bf16":                  splitQGate,
	"rope_neox_bf16":                    ropeNeox,
	"kv_append_bf16":                    kvAppend,
	"attn_prep_bf16":                    attnPrep,
	"attn_prep_batch_bf16":              attnPrepBatch,
	"attn_prep_tree_bf16":               attnPrepTree,
	"attn_prep_mrope_bf16":              attnPrepMRoPE,
	"attention_tree_bf16":               attentionTree,
	"attention_bf16":                    attention,
	"attention_batch_bf16":              attentionBatch,
	"attention_split_batch_f32":         attentionSplitBatch,
	"attention_split_mma_batch_f32":     attentionSplitMMABatch,
	"attention_merge_batch_bf16":        attentionMergeBatch,
	"attention_flash_bf16":              attention, // the same result up to bf16 softmax weights (kernels/tiled_attention.metal)
	"attention_split_f32":               attentionSplit,
	"attention_split_mma_f32":           attentionSplitMMA,
	"attention_merge_bf16":              attentionMerge,
	"sigmoid_mul_bf16":                  sigmoidMul,
	"add_bf16":                          add,
	"copy_u32":                          copyU32,
	"copy_u32x4":                        copyU32,
	"fill_u32":                          fillU32,
	"swiglu_bf16":                       swiglu,
	"add_sigmoid_scaled_bf16":           addSigmoidScaled,
	"conv1d_silu_bf16":                  conv1dSilu,
	"conv1d_silu_batch_bf16":            conv1dSiluBatch,
	"conv1d_silu_tree_bf16":             conv1dSiluTree,
	"gdn_recurrence_tree_bf16":          gdnRecurrenceTree,
	"gdn_gates_bf16":                    gdnGates,
	"gdn_qk_norm_bf16":                  gdnQKNorm,
	"gdn_recurrence_bf16":               gdnRecurrence,
	"gdn_recurrence_batch_bf16":         gdnRecurrenceBatch,
	"gdn_chunk_prep_f32":                gdnChunkPrep,
	"gdn_chunk_bf16":                    gdnChunked,
	"router_topk_bf16":                  routerTopK,
	"moe_combine_bf16":                  moeCombine,
	"topk_partial_f32":                  topkPartial,
	"topk_merge_f32":                    topkMerge,
	"repetition_penalty_f32":            repetitionPenalty,
	"sample_top_f32":                    sampleTop,
	"linear_bf16":                       linearBF16,
	"layer_norm_bf16":                   layerNorm,
	"vision_attn_prep_bf16":             visionAttnPrep,
	"attention_full_bf16":               attentionFull,
}

// Kernels lists the names of all kernels, sorted, so that other backends' tests
// can check they cover the same set.
func Kernels() []string {
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// args is one dispatch's arguments, read by name. Every reader checks what it
// reads and panics with the kernel and argument named.
type args struct {
	kernel  string
	sig     kernels.Signature
	list    []backend.Arg
	threads int
}

// newArgs checks the count and kind of every argument against the kernel's
// declaration (as the GPU backends do), then that each buffer is a live cpu
// buffer and its offset lies inside it.
func newArgs(name string, sig kernels.Signature, list []backend.Arg, threads int) *args {
	kernels.CheckArgs("cpu", name, sig, list)
	a := &args{kernel: name, sig: sig, list: list, threads: threads}
	for i, arg := range list {
		if arg.Kind != backend.ArgBuffer {
			continue
		}
		buf, ok := arg.Buf.(*buffer)
		if !ok || buf == nil {
			a.fail(i, "buffer %T is not a cpu buffer", arg.Buf)
		}
		if buf.freed {
			a.fail(i, "buffer was freed")
		}
		if arg.Off < 0 || arg.Off > len(buf.data) {
			a.fail(i, "offset %d outside a buffer of %d bytes", arg.Off, len(buf.data))
		}
	}
	return a
}

// name is argument i's name in the signature.
func (a *args) name(i int) string { return a.sig.Params[i].Name }

func (a *args) fail(i int, format string, v ...any) {
	panic(fmt.Sprintf("cpu: %s: argument %d (%s): %s", a.kernel, i, a.name(i), fmt.Sprintf(format, v...)))
}

// index finds the argument called name; a name missing from the signature is a
// bug in this package.
func (a *args) index(name string) int {
	if i := a.sig.Param(name); i >= 0 {
		return i
	}
	panic(fmt.Sprintf("cpu: %s: no argument named %q", a.kernel, name))
}

// view is n elements of size bytes of buffer argument name, from its offset.
func (a *args) view(name string, n, size int) unsafe.Pointer {
	i := a.index(name)
	arg := a.list[i]
	data := arg.Buf.(*buffer).data
	if n < 0 || n > (len(data)-arg.Off)/size {
		a.fail(i, "needs %d elements of %d bytes, buffer has %d bytes from offset %d", n, size, len(data), arg.Off)
	}
	if n == 0 {
		return nil
	}
	return unsafe.Pointer(&data[arg.Off])
}

// avail is how many whole elements of size bytes buffer argument name holds
// from its offset to the end of the buffer.
func (a *args) avail(name string, size int) int {
	arg := a.list[a.index(name)]
	return (len(arg.Buf.(*buffer).data) - arg.Off) / size
}

// bf16s is n bf16 bit patterns of buffer argument name.
func (a *args) bf16s(name string, n int) []uint16 {
	return unsafe.Slice((*uint16)(a.view(name, n, 2)), n)
}

// f32s is n float32 of buffer argument name.
func (a *args) f32s(name string, n int) []float32 {
	return unsafe.Slice((*float32)(a.view(name, n, 4)), n)
}

// u32s is n uint32 of buffer argument name.
func (a *args) u32s(name string, n int) []uint32 {
	return unsafe.Slice((*uint32)(a.view(name, n, 4)), n)
}

// i32s is n int32 of buffer argument name.
func (a *args) i32s(name string, n int) []int32 {
	return unsafe.Slice((*int32)(a.view(name, n, 4)), n)
}

// intArg is the int32 scalar name. Every int scalar of the contract is a count,
// a size, a position or a flag, so a negative one panics.
func (a *args) intArg(name string) int {
	i := a.index(name)
	v := int(a.list[i].Int)
	if v < 0 {
		a.fail(i, "negative value %d", v)
	}
	return v
}

// floatArg is the f32 scalar name.
func (a *args) floatArg(name string) float32 { return a.list[a.index(name)].F32 }

// check panics naming argument name when ok is false.
func (a *args) check(ok bool, name string, format string, v ...any) {
	if !ok {
		a.fail(a.index(name), format, v...)
	}
}

// parallel runs fn over [0, n) in contiguous chunks, one per goroutine, up to the
// device's thread count. cost is the rough work of one item (multiply-adds); small
// jobs run on the calling goroutine, where a goroutine would cost more than it saves.
func (a *args) parallel(n, cost int, fn func(lo, hi int)) {
	if n*cost < 1<<14 {
		fn(0, n)
		return
	}
	par.For(a.threads, n, fn)
}
