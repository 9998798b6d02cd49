// Package kernels holds the GPU kernels in one portable dialect (*.metal, compiled
// as MSL through prelude_metal.h and as CUDA C++ through prelude_cuda.h). Each
// kernel's KERNEL(...) declaration is its single contract: the argument names,
// types and order (Signatures), and, in the comment lines right above it, its
// launch geometry:
//
//	// launch: elements(T * H)              one thread per element, 256 per threadgroup
//	// launch: rows(Out, T)                 one SIMD-group per row, 8 rows per threadgroup, × T
//	// launch: grid(T * Hq) group(256)      grid threadgroups of group threads
//	// requires: D <= ATTN_MAX_D            a shape the kernel's fixed arrays refuse
//
// over the kernel's scalar arguments and the files' integer #defines (expr.go).
// The CPU reference (cpu/), the GPU backends' argument checks, ops' launches and
// the kernel tests all read this one declaration; kernels/README.md documents
// the math, and a test holds its table to the declarations.
package kernels

import (
	"fmt"
	"strings"
	"sync"

	"bagel/backend"
)

// elementGroup is the threadgroup size of the one-thread-per-element kernels.
const elementGroup = 256

// rowsPerGroup is how many SIMD-groups (one per output row) a threadgroup of a
// rows(...) launch holds.
const rowsPerGroup = 8

// launchPlan is a kernel's compiled launch annotation.
type launchPlan struct {
	grid, group intExpr
	requires    []requirement
}

// requirement is one "requires: lhs <= rhs" line.
type requirement struct {
	text     string
	lhs, rhs intExpr
}

// Launch returns the grid (in threadgroups) and threadgroup size for kernel name
// called with args (buffers then scalars, as its declaration orders them). A
// shape the kernel refuses (a "requires" line) or an unknown kernel panics: the
// caller chose the kernel, so either is a programmer error. The CPU backend
// ignores the result.
func Launch(name string, args []backend.Arg) (grid, group backend.Dim3) {
	sig, ok := Signatures()[name]
	if !ok {
		panic(fmt.Sprintf("kernels: unknown kernel %q", name))
	}
	if len(args) != len(sig.Params) {
		panic(fmt.Sprintf("kernels: %s: %d arguments, want %d", name, len(args), len(sig.Params)))
	}
	buf := scalarBufs.Get().(*[]int)
	defer scalarBufs.Put(buf)
	scalars := append((*buf)[:0], make([]int, len(args))...)
	*buf = scalars
	for i, a := range args {
		if a.Kind == backend.ArgInt {
			scalars[i] = int(a.Int)
		}
	}
	for _, r := range sig.launch.requires {
		if l, rr := r.lhs(scalars), r.rhs(scalars); l > rr {
			panic(fmt.Sprintf("kernels: %s: %s fails (%d > %d): the kernel cannot take this shape", name, r.text, l, rr))
		}
	}
	return dim1(sig.launch.grid(scalars)), dim1(sig.launch.group(scalars))
}

// scalarBufs recycles Launch's scalar lists: a decode step makes hundreds of
// launches, and a fresh list each was a fifth of the host's allocations.
var scalarBufs = sync.Pool{New: func() any { return new([]int) }}

// dim1 is a 1-D launch size.
func dim1(x int) backend.Dim3 { return backend.Dim3{X: x, Y: 1, Z: 1} }

// compileLaunch reads the launch and requires lines of one declaration.
func compileLaunch(sig Signature, defines map[string]int) (launchPlan, error) {
	env := exprEnv{params: map[string]int{}, defines: defines}
	for i, p := range sig.Params {
		if !p.Buffer && p.Type == "int" {
			env.params[p.Name] = i
		}
	}
	var plan launchPlan
	if sig.LaunchText == "" {
		return plan, fmt.Errorf("no \"// launch:\" line above the KERNEL declaration")
	}
	if err := plan.parse(sig.LaunchText, env); err != nil {
		return plan, fmt.Errorf("launch: %w", err)
	}
	for _, text := range sig.RequiresText {
		lhs, rhs, ok := strings.Cut(text, "<=")
		if !ok {
			return plan, fmt.Errorf("requires: %q: want A <= B", text)
		}
		l, err := compileExpr(strings.TrimSpace(lhs), env)
		if err != nil {
			return plan, fmt.Errorf("requires: %w", err)
		}
		r, err := compileExpr(strings.TrimSpace(rhs), env)
		if err != nil {
			return plan, fmt.Errorf("requires: %w", err)
		}
		plan.requires = append(plan.requires, requirement{text: text, lhs: l, rhs: r})
	}
	return plan, nil
}

// parse reads one of the three launch forms.
func (plan *launchPlan) parse(text string, env exprEnv) error {
	form, rest, ok := strings.Cut(text, "(")
	if !ok || !strings.HasSuffix(text, ")") {
		return fmt.Errorf("%q: want elements(N), rows(ROWS, COUNT) or grid(G) group(T)", text)
	}
	form = strings.TrimSpace(form)
	switch form {
	case "elements":
		n, err := compileExpr(strings.TrimSuffix(rest, ")"), env)
		if err != nil {
			return err
		}
		plan.grid = func(s []int) int { return ceilDiv(n(s), elementGroup) }
		plan.group = func([]int) int { return elementGroup }
	case "rows":
		// The comma at depth zero splits ROWS from COUNT.
		args := splitTop(strings.TrimSuffix(rest, ")"))
		if len(args) != 2 {
			return fmt.Errorf("%q: rows takes (ROWS, COUNT)", text)
		}
		rows, err := compileExpr(args[0], env)
		if err != nil {
			return err
		}
		count, err := compileExpr(args[1], env)
		if err != nil {
			return err
		}
		plan.grid = func(s []int) int { return ceilDiv(rows(s), rowsPerGroup) * count(s) }
		plan.group = func([]int) int { return rowsPerGroup * 32 }
	case "grid":
		gridText, groupText, ok := strings.Cut(rest, ") group(")
		if !ok {
			return fmt.Errorf("%q: want grid(G) group(T)", text)
		}
		var err error
		if plan.grid, err = compileExpr(gridText, env); err != nil {
			return err
		}
		if plan.group, err = compileExpr(strings.TrimSuffix(groupText, ")"), env); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%q: unknown form %s (elements, rows, grid)", text, form)
	}
	return nil
}

// ceilDiv is ⌈n/d⌉ for n ≥ 0.
func ceilDiv(n, d int) int { return (n + d - 1) / d }
