// Package gputest runs every kernel of kernels/README.md on a GPU backend and on
// the CPU reference (cpu/) with the same random inputs, and compares them.
//
// It takes any backend.Device, so the CUDA tests (cuda/) and the Metal tests
// (metal/) share it. For every kernel a list of cases (cases.go) gives fresh
// random inputs at several shapes: the real Qwen3.5-35B-A3B shapes, odd sizes
// and edge cases. Outputs start poisoned (all bytes 0xFF: NaN for bf16 and f32,
// −1 for i32), so an element a kernel forgets to write fails the comparison.
// The error of one output is ‖gpu−cpu‖₂ / ‖cpu‖₂ over all its elements; each
// case states its tolerance.
package gputest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"bagel/backend"
	"bagel/cpu"
	"bagel/kernels"
)

// Buffer is one buffer argument of a case.
type Buffer struct {
	Name  string
	DType backend.DType
	Data  []byte // initial contents; nil for an output, which is poisoned
	Len   int    // bytes, when Data is nil
	Out   bool   // compared after the run (outputs and in/out buffers)
	Alias string // the name of an earlier buffer this one is (in-place kernels)
	Off   int    // bytes before the argument in its allocation (an unaligned tensor); inputs only
}

// Case is one dispatch of a kernel on random inputs.
type Case struct {
	Kernel  string
	Shape   string // a label: the scalars that matter
	Buffers []Buffer
	Scalars []backend.Arg
	Tol     float64 // on ‖gpu−cpu‖/‖cpu‖ of every float output
	// IDTol is, for i32 outputs, the fraction of elements allowed to differ
	// (router ties broken differently after a one-ulp softmax difference).
	IDTol float64
}

// Result is the outcome of one case.
type Result struct {
	Kernel, Shape string
	Err           float64 // the largest error over the case's outputs
	Tol           float64
	Pass          bool
	Note          string // why it failed, or ""
	Elapsed       time.Duration
}

// Options select what Run does.
type Options struct {
	// Small skips the cases marked large (the full-vocabulary and full-expert
	// shapes), for CPU-against-CPU runs of the harness itself.
	Small bool
	// Only restricts the run to these kernels (nil: all).
	Only []string
}

// Run runs every case on dev and on the CPU reference, reports each failing case
// as a test error and logs the summary table. It returns the results.
func Run(t *testing.T, dev backend.Device, opts Options) []Result {
	t.Helper()
	ref := cpu.New(0)
	var results []Result
	for _, spec := range Specs() {
		if opts.Only != nil && !slices.Contains(opts.Only, spec.Kernel) {
			continue
		}
		if opts.Small && spec.Large {
			continue
		}
		c := spec.Make(newRand(spec.Kernel, spec.Label))
		start := time.Now()
		r := compare(dev, ref, c)
		r.Elapsed = time.Since(start)
		if !r.Pass {
			t.Errorf("%s [%s]: %s", r.Kernel, r.Shape, r.Note)
		}
		results = append(results, r)
	}
	t.Log("\n" + Table(dev.Name(), results))
	return results
}

// Table formats results as a Markdown table: one row per case.
func Table(device string, results []Result) string {
	var sb strings.Builder
	pass := 0
	for _, r := range results {
		if r.Pass {
			pass++
		}
	}
	fmt.Fprintf(&sb, "Kernel tests on %s: %d/%d cases pass (BAGEL_GPUTEST_SEED=%d)\n\n", device, pass, len(results), Seed())
	sb.WriteString("| kernel | shape | max rel err | tolerance | result |\n|---|---|---|---|---|\n")
	for _, r := range results {
		res := "pass"
		switch {
		case !r.Pass:
			res = "FAIL: " + r.Note
		case r.Note != "":
			res += " (" + r.Note + ")"
		}
		fmt.Fprintf(&sb, "| %s | %s | %.2e | %.0e | %s |\n", r.Kernel, r.Shape, r.Err, r.Tol, res)
	}
	return sb.String()
}

// compare runs c on both devices and compares every output.
func compare(dev, ref backend.Device, c *Case) Result {
	r := Result{Kernel: c.Kernel, Shape: c.Shape, Tol: c.Tol}
	want, err := execute(ref, c)
	if err != nil {
		r.Note = "cpu reference: " + err.Error()
		return r
	}
	got, err := execute(dev, c)
	if err != nil {
		r.Note = err.Error()
		return r
	}
	r.Pass = true
	var notes []string
	for i, b := range c.Buffers {
		if !b.Out {
			continue
		}
		if b.DType == backend.I32 || b.DType == backend.U32 {
			frac := mismatch(got[i], want[i])
			if frac == 0 {
				notes = append(notes, b.Name+" identical")
			}
			if frac > c.IDTol {
				r.Pass = false
				notes = append(notes, fmt.Sprintf("%s: %.3g%% of ids differ (allowed %.3g%%)", b.Name, 100*frac, 100*c.IDTol))
			}
			continue
		}
		gf, wf := decode(b.DType, got[i]), decode(b.DType, want[i])
		agreedNaN(b.DType, got[i], want[i], gf, wf)
		e := relErr(gf, wf)
		r.Err = math.Max(r.Err, e)
		if math.IsNaN(e) {
			r.Err = math.Inf(1)
		}
		if !(e <= c.Tol) && b.DType == backend.BF16 && c.Tol >= tolBF16 && withinOneBF16Step(got[i], want[i]) {
			notes = append(notes, fmt.Sprintf("%s: rel err %.3g, every element within one bf16 step", b.Name, e))
			continue
		}
		if !(e <= c.Tol) {
			r.Pass = false
			notes = append(notes, fmt.Sprintf("%s: rel err %.3g > %.0e%s", b.Name, e, c.Tol, firstBad(b.DType, got[i], want[i])))
		}
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

// execute allocates the case's buffers on dev, runs the dispatch and reads back
// every output. A panic in Dispatch (a bad argument) becomes an error.
func execute(dev backend.Device, c *Case) (outs [][]byte, err error) {
	bufs := make([]backend.Buffer, len(c.Buffers))
	byName := map[string]int{}
	defer func() {
		for i, b := range bufs {
			if b != nil && c.Buffers[i].Alias == "" {
				dev.Free(b)
			}
		}
	}()
	args := make([]backend.Arg, 0, len(c.Buffers)+len(c.Scalars))
	for i, b := range c.Buffers {
		byName[b.Name] = i
		if b.Alias != "" {
			bufs[i] = bufs[byName[b.Alias]]
			args = append(args, backend.Buf(bufs[i], 0))
			continue
		}
		data := b.Data
		if data == nil {
			data = poison(b.Len)
		}
		buf, err := dev.Alloc(b.Off + len(data))
		if err != nil {
			return nil, err
		}
		bufs[i] = buf
		if err := dev.Write(buf, b.Off, data); err != nil {
			return nil, err
		}
		args = append(args, backend.Buf(buf, b.Off))
	}
	args = append(args, c.Scalars...)
	grid, group := kernels.Launch(c.Kernel, args)
	if err := dispatch(dev, c.Kernel, grid, group, args); err != nil {
		return nil, err
	}
	outs = make([][]byte, len(c.Buffers))
	for i, b := range c.Buffers {
		if !b.Out {
			continue
		}
		outs[i] = make([]byte, bufs[i].Len())
		if err := dev.Read(bufs[i], 0, outs[i]); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

func dispatch(dev backend.Device, kernel string, grid, group backend.Dim3, args []backend.Arg) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("dispatch panicked: %v", r)
		}
	}()
	enc := dev.Encoder()
	enc.Dispatch(kernel, grid, group, args...)
	return enc.Submit()
}

func poison(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xFF
	}
	return b
}
