package kernels

import (
	"fmt"
	"slices"
	"sync"
)

// Static threadgroup memory as Metal sees it. A kernel's TG_MEM and
// TG_MEM_ALIGNED16 arrays are fixed at compile time, and Metal refuses a
// pipeline whose arrays add up to more than the device's
// maxThreadgroupMemoryLength (32 KiB on every Apple GPU). The sizes are
// macro expressions whose values differ per backend (qgemm.metal's Metal
// branch), so they are read from the source as Metal's preprocessor leaves it
// (mslscan.go) and evaluated with the #defines of that branch.

// MetalThreadgroupLimit is maxThreadgroupMemoryLength of Apple GPUs, bytes.
const MetalThreadgroupLimit = 32 << 10

// threadgroupGranule is the unit Metal allocates threadgroup memory in. The
// compiler's layout of several arrays is not documented; padding each array
// to the granule gives an upper bound that equals the true size whenever
// every array is a whole number of granules, and is at most 15 bytes per
// array above it otherwise.
const threadgroupGranule = 16

// threadgroupElementBytes are the sizes of the element types TG_MEM may use,
// as MSL defines them (bf16_t is the Metal prelude's ushort).
var threadgroupElementBytes = map[string]int{
	"char": 1, "uchar": 1,
	"short": 2, "ushort": 2, "half": 2, "bf16_t": 2,
	"int": 4, "uint": 4, "float": 4,
	"int2": 8, "uint2": 8, "float2": 8, "half4": 8,
	"int4": 16, "uint4": 16, "float4": 16, "u32x4": 16,
}

// ThreadgroupArray is one TG_MEM or TG_MEM_ALIGNED16 declaration of a kernel
// as Metal compiles it.
type ThreadgroupArray struct {
	Name  string
	Type  string
	Count int    // elements
	Bytes int    // Count × element size, rounded up to the 16-byte granule
	Pos   string // file:line
}

// MetalThreadgroupArrays lists, for every kernel, its threadgroup arrays in
// declaration order (kernels without any have an empty list). A declaration
// it cannot evaluate panics: the package tests read all of them.
var MetalThreadgroupArrays = sync.OnceValue(func() map[string][]ThreadgroupArray {
	arrays, err := metalThreadgroupArrays(MetalSource())
	if err != nil {
		panic("kernels: " + err.Error())
	}
	return arrays
})

// MetalThreadgroupBytes is each kernel's static threadgroup memory on Metal,
// in bytes: the sum of its arrays (MetalThreadgroupArrays). What a pipeline
// is refused for when it exceeds MetalThreadgroupLimit.
func MetalThreadgroupBytes(kernel string) int {
	total := 0
	for _, a := range MetalThreadgroupArrays()[kernel] {
		total += a.Bytes
	}
	return total
}

// ThreadgroupOverLimit names each kernel of arrays whose total exceeds limit,
// with its bytes, sorted by name.
func ThreadgroupOverLimit(arrays map[string][]ThreadgroupArray, limit int) []string {
	var over []string
	for kernel, list := range arrays {
		total := 0
		for _, a := range list {
			total += a.Bytes
		}
		if total > limit {
			over = append(over, fmt.Sprintf("%s: %d bytes of threadgroup memory, Metal allows %d", kernel, total, limit))
		}
	}
	slices.Sort(over)
	return over
}

// metalThreadgroupArrays scans src (a MetalSource-like text) and evaluates
// every kernel's threadgroup arrays. A TG_MEM outside a kernel body, or a
// threadgroup array declared without TG_MEM, is an error: it would be
// threadgroup memory this count misses.
func metalThreadgroupArrays(src string) (map[string][]ThreadgroupArray, error) {
	s, err := scanMetal(src)
	if err != nil {
		return nil, err
	}
	defines := integerMacros(s.macros)
	arrays := map[string][]ThreadgroupArray{}
	counted := 0
	for _, fn := range functions(s.code) {
		if fn.kernel {
			arrays[fn.name] = []ThreadgroupArray{}
		}
		for i, t := range fn.body {
			if raw := rawThreadgroupArray(fn.body, i); raw != "" {
				return nil, fmt.Errorf("%s: threadgroup array %s declared without TG_MEM", t.pos, raw)
			}
			if t.text != "TG_MEM" && t.text != "TG_MEM_ALIGNED16" {
				continue
			}
			if !fn.kernel {
				return nil, fmt.Errorf("%s: %s in %s, which is not a kernel", t.pos, t.text, fn.name)
			}
			a, err := threadgroupArray(fn.body, i, defines)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %v", t.pos, fn.name, err)
			}
			arrays[fn.name] = append(arrays[fn.name], a)
			counted++
		}
	}
	if all := countTokens(s.code, "TG_MEM") + countTokens(s.code, "TG_MEM_ALIGNED16"); all != counted {
		return nil, fmt.Errorf("%d TG_MEM declarations in the source, %d inside kernel bodies", all, counted)
	}
	return arrays, nil
}

// threadgroupArray reads TG_MEM(type, name, n) at body[i].
func threadgroupArray(body []token, i int, defines map[string]int) (ThreadgroupArray, error) {
	if i+1 >= len(body) || body[i+1].text != "(" {
		return ThreadgroupArray{}, fmt.Errorf("%s without (", body[i].text)
	}
	end := matching(body, i+1)
	if end < 0 {
		return ThreadgroupArray{}, fmt.Errorf("unbalanced %s(", body[i].text)
	}
	args := splitParams(body[i+2 : end])
	if len(args) != 3 || len(args[1]) != 1 {
		return ThreadgroupArray{}, fmt.Errorf("%s(%s): want (type, name, n)", body[i].text, joinTokens(body[i+2:end]))
	}
	typ, name, size := joinTokens(args[0]), args[1][0].text, joinTokens(args[2])
	elem, ok := threadgroupElementBytes[typ]
	if !ok {
		return ThreadgroupArray{}, fmt.Errorf("%s: element type %q of unknown size", name, typ)
	}
	expr, err := compileExpr(size, exprEnv{defines: defines})
	if err != nil {
		return ThreadgroupArray{}, fmt.Errorf("%s: size: %v", name, err)
	}
	n := expr(nil)
	if n <= 0 {
		return ThreadgroupArray{}, fmt.Errorf("%s: %s = %d elements", name, size, n)
	}
	bytes := (n*elem + threadgroupGranule - 1) / threadgroupGranule * threadgroupGranule
	return ThreadgroupArray{Name: name, Type: typ, Count: n, Bytes: bytes, Pos: body[i].pos}, nil
}

// integerMacros evaluates the active object-like #defines whose bodies are
// integer expressions (over earlier such defines), in source order: the
// values a TG_MEM size may name on Metal. Other macros (function-like, float
// or string bodies) do not evaluate and are left out.
func integerMacros(macros []macro) map[string]int {
	values := map[string]int{}
	for _, m := range macros {
		if len(m.body) == 0 {
			continue
		}
		e, err := compileExpr(joinTokens(m.body), exprEnv{defines: values})
		if err != nil {
			delete(values, m.name) // redefined as something else
			continue
		}
		values[m.name] = e(nil)
	}
	return values
}

// rawThreadgroupArray returns the name of a `threadgroup T name[` array
// declaration at body[i], or "". (A helper's `threadgroup T *p` parameter is
// not in a body, and a cast `(threadgroup T *)` has no `[`.)
func rawThreadgroupArray(body []token, i int) string {
	if body[i].text != "threadgroup" {
		return ""
	}
	for j := i + 1; j+1 < len(body) && body[j].isIdent(); j++ {
		if body[j+1].text == "[" && j > i+1 {
			return body[j].text
		}
	}
	return ""
}

func countTokens(code []token, text string) int {
	n := 0
	for _, t := range code {
		if t.text == text {
			n++
		}
	}
	return n
}
