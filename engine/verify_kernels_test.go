package engine

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/internal/testmodel"
	"bagel/switches"
)

// TestVerifyTakesTheStepsMatrixUnitKernels: a verify's forward runs the
// matrix-unit kernels a decode step's runs, no more and no fewer, with
// tiled-gemv on (on a device with matrix units), and none with it off. A
// kernel chosen for one and not the other would break the bit equality that
// TestVerifyLogitsAreDecodeLogits checks on a GPU; on the CPU both run one
// reference, so only the kernels' names tell. The wide MoE (4-bit in groups
// of 64) takes the matrix-unit experts with tiled-experts on, and the plain
// ones without.
func TestVerifyTakesTheStepsMatrixUnitKernels(t *testing.T) {
	dirs := map[string]string{"wide-moe": t.TempDir()}
	testmodel.WriteRandom(t, dirs["wide-moe"], wideMoE)
	for _, name := range testmodel.Names {
		dirs[name] = testmodel.Weights(t, name)
	}
	for name, dir := range dirs {
		withTiledGEMV(t, name, func(t *testing.T) {
			e := loadGPU(t, dir, "cpu", 256)
			var names []string
			if err := e.loop.do(func() error {
				e.ctx.Dev = recordingDevice{e.ctx.Dev, &names}
				e.ctx.Enc = recordingEncoder{e.ctx.Enc, &names}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			// The matrix-unit kernels of one forward (a verify's GDN
			// in-projection runs with its conv as a step's does).
			tiled := func(ids []int32, all bool) map[string]bool {
				names = names[:0]
				if _, err := e.forward(ids, all); err != nil {
					t.Fatal(err)
				}
				set := map[string]bool{}
				for _, n := range names {
					if strings.Contains(n, "_mma") {
						set[n] = true
					}
				}
				return set
			}
			tiled(otherIDs[:3], false) // the prompt
			step := tiled(otherIDs[3:4], false)
			verify := tiled(otherIDs[4:9], true)
			if !maps.Equal(step, verify) {
				t.Errorf("a step runs matrix-unit kernels %v, a verify %v", slices.Sorted(maps.Keys(step)), slices.Sorted(maps.Keys(verify)))
			}
			on, experts := switches.On(SwitchTiledGEMV), switches.On(SwitchTiledExperts)
			if !on && !experts && len(step) > 0 {
				t.Errorf("tiled-gemv and tiled-experts off, yet a step runs %v", slices.Sorted(maps.Keys(step)))
			}
			if on && name == "wide-moe" && !step["qmatmul_mma_bf16_f32"] {
				t.Errorf("tiled-gemv on: the wide MoE's step runs %v, without the matrix-unit logits", slices.Sorted(maps.Keys(step)))
			}
			if tiledExperts := step["moe_up_mma_bf16"] && step["moe_down_mma_bf16"]; name == "wide-moe" && tiledExperts != experts {
				t.Errorf("tiled-gemv %v, tiled-experts %v: the wide MoE's step runs %v", on, experts, slices.Sorted(maps.Keys(step)))
			}
		})
	}
}

// recordingDevice is a device whose encoders note each kernel they launch in
// names. It keeps the wrapped device's matrix units (the choice of the tiled
// kernels) and hides its other optional interfaces (their ops take their
// portable paths, alike for a step and a verify).
type recordingDevice struct {
	backend.Device
	names *[]string
}

func (d recordingDevice) Encoder() backend.Encoder {
	return recordingEncoder{d.Device.Encoder(), d.names}
}

func (d recordingDevice) MatrixUnits() bool {
	m, ok := d.Device.(backend.MatrixUnits)
	return ok && m.MatrixUnits()
}

type recordingEncoder struct {
	backend.Encoder
	names *[]string
}

func (e recordingEncoder) Dispatch(kernel string, grid, group backend.Dim3, args ...backend.Arg) {
	*e.names = append(*e.names, kernel)
	e.Encoder.Dispatch(kernel, grid, group, args...)
}
