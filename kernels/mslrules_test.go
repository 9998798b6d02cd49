package kernels

// Rules of the Metal Shading Language that CUDA does not share, checked on the
// Metal source (MetalSource) without Apple's compiler: what NVRTC accepts and
// Metal would reject must fail here, on Linux, before anyone runs it on a Mac.
// tools/metalcheck.sh (clang against the <metal_stdlib> stub) checks syntax and
// types; these rules read the tokens (mslscan.go) for what clang with the
// stub cannot see, because the stub empties the address-space keywords.
//
// What they cannot prove: anything that needs macro expansion or types (a
// pointer hidden behind a typedef, a call or recursion made through a macro
// other than a #define's direct calls, a double reached through a template),
// local pointer variables (only parameters are checked), and everything Apple's
// compiler checks beyond these rules (run `make test` on a Mac).

import (
	"fmt"
	"slices"
	"strings"
)

// violation is one broken rule at a source position.
type violation struct {
	rule string
	pos  string
	msg  string
}

func (v violation) String() string { return fmt.Sprintf("%s: [%s] %s", v.pos, v.rule, v.msg) }

// mslRules are the rules, by name (the name appears in each violation).
var mslRules = []struct {
	name  string
	check func(s scanned, fns []function) []violation
}{
	{"address-space", checkAddressSpaces},
	{"no-double", checkNoDouble},
	{"float-literal", checkFloatLiterals},
	{"no-recursion", checkNoRecursion},
	{"no-function-pointer", checkNoFunctionPointers},
	{"attribute", checkAttributes},
	{"type-name", checkTypeNamesAsIdentifiers},
}

// checkMSL scans src and applies every rule.
func checkMSL(src string) ([]violation, error) {
	s, err := scanMetal(src)
	if err != nil {
		return nil, err
	}
	fns := functions(s.code)
	var out []violation
	for _, r := range mslRules {
		out = append(out, r.check(s, fns)...)
	}
	return out, nil
}

// addressSpaces are MSL's address spaces. Every pointer or reference parameter
// needs one in Metal; the CUDA prelude defines device, constant, thread and
// threadgroup empty, so a missing one goes unnoticed there.
var addressSpaces = []string{"device", "constant", "thread", "threadgroup", "threadgroup_imageblock", "object_data", "ray_data"}

// checkAddressSpaces: every pointer or reference parameter of a helper or a
// kernel names an address space. A kernel's BUFFER and PARAM arguments get
// theirs from the prelude's macros, so those macros' bodies are held to the
// same rule.
func checkAddressSpaces(s scanned, fns []function) []violation {
	var out []violation
	check := func(where, pos string, param []token) {
		if pointerOrReference(param) && !slices.ContainsFunc(param, func(t token) bool { return slices.Contains(addressSpaces, t.text) }) {
			out = append(out, violation{"address-space", pos, fmt.Sprintf("%s: pointer or reference %q has no address space (device, threadgroup, thread, constant)", where, joinTokens(param))})
		}
	}
	for _, fn := range fns {
		for _, p := range fn.params {
			if fn.kernel && len(p) > 0 && (p[0].text == "BUFFER" || p[0].text == "PARAM") {
				continue // the macro's body is checked below
			}
			pos := fn.pos
			if len(p) > 0 {
				pos = p[0].pos
			}
			check(fn.name, pos, p)
		}
	}
	for _, m := range s.macros {
		if m.name == "BUFFER" || m.name == "PARAM" {
			check("#define "+m.name, m.pos, m.body)
		}
	}
	return out
}

func pointerOrReference(toks []token) bool {
	return slices.ContainsFunc(toks, func(t token) bool { return t.text == "*" || t.text == "&" })
}

// checkNoDouble: Apple GPUs have no double; CUDA has it (slowly).
func checkNoDouble(s scanned, _ []function) []violation {
	var out []violation
	for _, t := range allTokens(s) {
		if t.text == "double" {
			out = append(out, violation{"no-double", t.pos, "Metal has no double"})
		}
	}
	return out
}

// mslTypeNames are Metal's built-in type names that CUDA lacks (half, bfloat
// and the vector types): Metal reserves them, so a variable, parameter or field
// named half builds with NVRTC and with the stub, whose half is a typedef
// another name may hide, and not with Apple's compiler.
var mslTypeNames = func() map[string]bool {
	names := map[string]bool{"half": true, "bfloat": true}
	for _, base := range []string{"bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float", "bfloat"} {
		for _, n := range []string{"2", "3", "4"} {
			names[base+n] = true
		}
	}
	return names
}()

// checkTypeNamesAsIdentifiers: no declaration names a variable, parameter or
// field after one of Metal's type names: such a name after a type (a word, or
// the * or & of a pointer) and before =, ;, ,, ), [ or :.
func checkTypeNamesAsIdentifiers(s scanned, _ []function) []violation {
	var out []violation
	code := s.code
	for i := 1; i+1 < len(code); i++ {
		t, prev, next := code[i], code[i-1], code[i+1]
		if !mslTypeNames[t.text] || !(prev.isIdent() || prev.text == "*" || prev.text == "&") || prev.text == "return" {
			continue
		}
		if slices.Contains([]string{"=", ";", ",", ")", "[", ":"}, next.text) {
			out = append(out, violation{"type-name", t.pos, fmt.Sprintf("%q is a Metal type and cannot name a variable, parameter or field", t.text)})
		}
	}
	return out
}

// checkFloatLiterals: the dialect writes float literals with an f suffix
// (docs/kernels.md). Unsuffixed, a literal is a double in CUDA (computed in
// double precision, the result then differing from Metal's and the CPU's) and
// a double Metal does not have.
func checkFloatLiterals(s scanned, _ []function) []violation {
	var out []violation
	for _, t := range allTokens(s) {
		n := strings.ToLower(t.text)
		if !t.isNumber() || strings.HasPrefix(n, "0x") {
			continue
		}
		if (strings.Contains(n, ".") || strings.Contains(n, "e")) && !strings.HasSuffix(n, "f") && !strings.HasSuffix(n, "h") {
			out = append(out, violation{"float-literal", t.pos, fmt.Sprintf("float literal %s has no f suffix (a double)", t.text)})
		}
	}
	return out
}

func allTokens(s scanned) []token {
	toks := slices.Clone(s.code)
	for _, m := range s.macros {
		toks = append(toks, m.body...)
	}
	return toks
}

// checkNoRecursion: Metal forbids recursive calls (CUDA allows them, with a
// stack). The call graph joins functions of one name (overloads) and
// function-like macros (a #define's body calls what it names).
func checkNoRecursion(s scanned, fns []function) []violation {
	calls := map[string][]string{}
	pos := map[string]string{}
	add := func(name, at string, body []token) {
		pos[name] = at
		for i, t := range body {
			if t.isIdent() && (i+1 < len(body) && body[i+1].text == "(" || isMacro(s, t.text)) {
				calls[name] = append(calls[name], t.text)
			}
		}
	}
	for _, fn := range fns {
		add(fn.name, fn.pos, fn.body)
	}
	for _, m := range s.macros {
		add(m.name, m.pos, m.body)
	}
	var out []violation
	const (
		unvisited = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = onPath
		path = append(path, name)
		for _, callee := range calls[name] {
			if _, known := pos[callee]; !known {
				continue // a Metal library function
			}
			switch state[callee] {
			case onPath:
				cycle := append(slices.Clone(path[slices.Index(path, callee):]), callee)
				out = append(out, violation{"no-recursion", pos[callee], "recursive call " + strings.Join(cycle, " → ")})
			case unvisited:
				visit(callee)
			}
		}
		path = path[:len(path)-1]
		state[name] = done
	}
	names := make([]string, 0, len(pos))
	for name := range pos {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if state[name] == unvisited {
			visit(name)
		}
	}
	return out
}

func isMacro(s scanned, name string) bool {
	return slices.ContainsFunc(s.macros, func(m macro) bool { return m.name == name })
}

// checkNoFunctionPointers: Metal has no function pointers outside its
// visible-function tables (CUDA has them). Caught: a `(*name)(` or `(*)(`
// declarator or call, and a function's name used other than to call it
// (which takes its address).
func checkNoFunctionPointers(s scanned, fns []function) []violation {
	var out []violation
	defined := map[string]bool{}
	for _, fn := range fns {
		defined[fn.name] = true
	}
	scan := func(toks []token) {
		for i, t := range toks {
			next := func(k int) string {
				if i+k < len(toks) {
					return toks[i+k].text
				}
				return ""
			}
			if t.text == "(" && next(1) == "*" && (next(2) == ")" && next(3) == "(" || next(3) == ")" && next(4) == "(") {
				out = append(out, violation{"no-function-pointer", t.pos, "function pointer " + joinTokens(toks[i:min(i+5, len(toks))])})
			}
			prev := ""
			if i > 0 {
				prev = toks[i-1].text
			}
			if t.isIdent() && defined[t.text] && next(1) != "(" && !templateCall(toks[i+1:]) && prev != "." && prev != "->" {
				out = append(out, violation{"no-function-pointer", t.pos, fmt.Sprintf("function %s used as a value (its address)", t.text)})
			}
		}
	}
	for _, fn := range fns {
		scan(fn.body)
		for _, p := range fn.params {
			scan(p)
		}
	}
	// File-scope code outside functions (initializers, typedefs).
	scan(outsideFunctions(s.code))
	return out
}

// templateCall says whether toks (what follows a function's name) is a
// template argument list and a call: `<1>(`, `<R, (A > B)>(`.
func templateCall(toks []token) bool {
	if len(toks) == 0 || toks[0].text != "<" {
		return false
	}
	depth, parens := 0, 0 // a > inside parentheses compares
	for i, t := range toks {
		switch t.text {
		case "(":
			parens++
		case ")":
			parens--
		case "<":
			if parens == 0 {
				depth++
			}
		case ">":
			if parens > 0 {
				continue
			}
			depth--
			if depth == 0 {
				return i+1 < len(toks) && toks[i+1].text == "("
			}
		case ";", "{", "}":
			return false
		}
	}
	return false
}

// outsideFunctions returns code without the function definitions and
// declarations (heads, parameters and bodies: scanned on their own), so that a
// typedef or initializer at file scope is seen.
func outsideFunctions(code []token) []token {
	var out []token
	for i := 0; i < len(code); i++ {
		if code[i].isIdent() && i+1 < len(code) && code[i+1].text == "(" {
			if end := functionEnd(code, i); end > 0 {
				i = end
				continue
			}
		}
		out = append(out, code[i])
	}
	return out
}

// metalAttributes are the [[...]] attributes the kernels may use: MSL's kernel
// argument attributes (Metal Shading Language Specification, "Attributes for
// Kernel Function Input Arguments") and the resource bindings. A misspelt one
// or a GNU/CUDA one ([[gnu::...]]) is refused.
var metalAttributes = []string{
	"buffer", "texture", "sampler", "threadgroup", "stage_in", "function_constant",
	"thread_position_in_grid", "thread_position_in_threadgroup", "thread_index_in_threadgroup",
	"threadgroup_position_in_grid", "threads_per_grid", "threads_per_threadgroup", "threadgroups_per_grid",
	"thread_index_in_simdgroup", "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup",
	"threads_per_simdgroup", "thread_execution_width", "dispatch_threads_per_threadgroup",
	"thread_index_in_quadgroup", "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup",
	"grid_origin", "grid_size", "max_total_threads_per_threadgroup",
}

// checkAttributes: every [[attribute]] is one of Metal's, and no CUDA or GNU
// spelling (__global__, __shared__, __attribute__, __forceinline__, asm, ...:
// any identifier starting with two underscores) is left in the code Metal
// compiles. #define bodies may use them only if they are Metal's (the
// prelude's _Pragma is C++).
func checkAttributes(s scanned, _ []function) []violation {
	var out []violation
	toks := allTokens(s)
	for i, t := range toks {
		if t.text == "[" && i+2 < len(toks) && toks[i+1].text == "[" && !slices.Contains(metalAttributes, toks[i+2].text) {
			out = append(out, violation{"attribute", t.pos, fmt.Sprintf("[[%s...]] is not a Metal attribute", toks[i+2].text)})
		}
	}
	for _, t := range s.code {
		if t.isIdent() && (strings.HasPrefix(t.text, "__") || t.text == "asm") && !isMetalPredefined(t.text) {
			out = append(out, violation{"attribute", t.pos, fmt.Sprintf("%s is CUDA or GNU, not Metal", t.text)})
		}
	}
	return out
}

func isMetalPredefined(name string) bool {
	_, ok := metalPredefined[name]
	return ok
}
