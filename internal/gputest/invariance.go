package gputest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"bagel/backend"
)

// TokenInvariance checks, for each kernel of the qmatmul_bf16 family (its
// buffers and scalars: x, w, scales, biases, out | T, In, Out, bits, gs), that a
// launch of several tokens gives every token the bits of a launch of that
// token alone: what a speculative verify needs to agree with the decode steps
// it replaces. Each shape is T, In, Out, bits, gs.
func TokenInvariance(t *testing.T, dev backend.Device, kernel string, shapes [][5]int) {
	t.Helper()
	for _, s := range shapes {
		T, In, Out, bits, gs := s[0], s[1], s[2], s[3], s[4]
		g := gen{newRand(kernel, fmt.Sprint("invariance", s))}
		w, sc, bi := g.quant(Out, In, bits, gs)
		x := g.bf16(T*In, 1)
		outType, size := backend.BF16, 2
		if strings.HasSuffix(kernel, "_f32") {
			outType, size = backend.F32, 4
		}
		run := func(x []byte, tokens int) []byte {
			c := &Case{Kernel: kernel, Buffers: []Buffer{
				in("x", backend.BF16, x), in("w", backend.U32, w), in("scales", backend.BF16, sc),
				in("biases", backend.BF16, bi), out("out", outType, tokens*Out),
			}, Scalars: ints(tokens, In, Out, bits, gs)}
			outs, err := execute(dev, c)
			if err != nil {
				t.Fatalf("%s %v: %v", kernel, s, err)
			}
			return outs[4]
		}
		all := run(x, T)
		for tok := 0; tok < T; tok++ {
			alone := run(x[tok*In*2:(tok+1)*In*2], 1)
			row := all[tok*Out*size : (tok+1)*Out*size]
			if !bytes.Equal(alone, row) {
				diff := 0
				for i := 0; i < Out; i++ {
					if !bytes.Equal(alone[i*size:(i+1)*size], row[i*size:(i+1)*size]) {
						diff++
					}
				}
				t.Errorf("%s T=%d %d→%d bits=%d gs=%d: token %d's %d of %d outputs differ from a launch of it alone", kernel, T, In, Out, bits, gs, tok, diff, Out)
			}
		}
	}
}
