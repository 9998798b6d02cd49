package safetensors

import (
	"testing"
)

// qspecs is the three tensors of a quantized module: weight U32 [lead..., out,
// packedCols], scales and biases [lead..., out, scaleCols] of dtype sdt.
func qspecs(path string, lead []int, out, packedCols, scaleCols int, sdt string) []spec {
	shape := func(cols int) []int { return append(append([]int{}, lead...), out, cols) }
	return []spec{
		{name: path + ".weight", dtype: "U32", shape: shape(packedCols)},
		{name: path + ".scales", dtype: sdt, shape: shape(scaleCols)},
		{name: path + ".biases", dtype: sdt, shape: shape(scaleCols)},
	}
}

func TestLinear(t *testing.T) {
	const router = "m.layers.0.mlp.gate"
	var specs []spec
	// 4-bit gs64 default: in 128 -> 16 packed columns, 2 groups.
	specs = append(specs, qspecs("m.layers.0.mlp.up_proj", nil, 16, 16, 2, "BF16")...)
	// 8-bit router override: in 64 -> 16 packed columns, 1 group.
	specs = append(specs, qspecs(router, nil, 8, 16, 1, "BF16")...)
	// 4 experts of [8, 128] at 4-bit.
	specs = append(specs, qspecs("m.layers.0.mlp.switch_mlp.gate_proj", []int{4}, 8, 16, 2, "F16")...)
	// Packed as 8-bit, but config.json says 4-bit (a missing override).
	specs = append(specs, qspecs("m.bad_packed", nil, 16, 32, 2, "BF16")...)
	// Scales for group size 32 where config.json says 64.
	specs = append(specs, qspecs("m.bad_scales", nil, 16, 16, 4, "BF16")...)
	mixed := qspecs("m.mixed_dtypes", nil, 16, 16, 2, "BF16")
	mixed[2].dtype = "F16"
	specs = append(specs, mixed...)
	f32codes := qspecs("m.f32_codes", nil, 16, 16, 2, "BF16")
	f32codes[0].dtype = "F32"
	specs = append(specs, f32codes...)
	specs = append(specs, qspecs("m.no_biases", nil, 16, 16, 2, "BF16")[:2]...)
	specs = append(specs, spec{name: "m.norm.weight", dtype: "BF16", shape: []int{128}})

	dir := t.TempDir()
	writeFile(t, dir, "model.safetensors", specs...)
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := &Quantization{Default: QuantParams{4, 64, "affine"}, PerLayer: map[string]QuantParams{router: {8, 64, "affine"}}}

	cases := []struct {
		name                string
		q                   *Quantization
		path                string
		out, in, experts    int
		wantBits, wantGroup int
		wantErr             []string
	}{
		{name: "2-D default", q: q, path: "m.layers.0.mlp.up_proj", out: 16, in: 128, wantBits: 4, wantGroup: 64},
		{name: "8-bit router override", q: q, path: router, out: 8, in: 64, wantBits: 8, wantGroup: 64},
		{name: "3-D experts", q: q, path: "m.layers.0.mlp.switch_mlp.gate_proj", out: 8, in: 128, experts: 4,
			wantBits: 4, wantGroup: 64},

		{name: "router without its override", q: &Quantization{Default: q.Default}, path: router, out: 8, in: 64,
			wantErr: []string{"model.safetensors", router + ".weight", "shape [8 16], want [8 8]",
				"4-bit, group size 64", "imply 8-bit"}},
		{name: "packed columns disagree with bits", q: q, path: "m.bad_packed", out: 16, in: 128,
			wantErr: []string{"m.bad_packed.weight", "shape [16 32], want [16 16]", "4-bit", "imply 8-bit"}},
		{name: "scale columns disagree with group size", q: q, path: "m.bad_scales", out: 16, in: 128,
			wantErr: []string{"m.bad_scales.scales", "shape [16 4], want [16 2]", "group size 64", "imply group size 32"}},
		{name: "wrong out", q: q, path: "m.layers.0.mlp.up_proj", out: 32, in: 128,
			wantErr: []string{"m.layers.0.mlp.up_proj.weight", "shape [16 16], want [32 16]"}},
		{name: "experts expected, 2-D stored", q: q, path: "m.layers.0.mlp.up_proj", out: 16, in: 128, experts: 4,
			wantErr: []string{"shape [16 16], want [4 16 16]"}},
		{name: "3-D stored, 2-D expected", q: q, path: "m.layers.0.mlp.switch_mlp.gate_proj", out: 8, in: 128,
			wantErr: []string{"gate_proj.weight", "shape [4 8 16], want [8 16]"}},
		{name: "wrong expert count", q: q, path: "m.layers.0.mlp.switch_mlp.gate_proj", out: 8, in: 128, experts: 8,
			wantErr: []string{"shape [4 8 16], want [8 8 16]"}},
		{name: "biases dtype differs from scales", q: q, path: "m.mixed_dtypes", out: 16, in: 128,
			wantErr: []string{"m.mixed_dtypes.biases", "dtype F16", "scales are BF16"}},
		{name: "codes not U32", q: q, path: "m.f32_codes", out: 16, in: 128,
			wantErr: []string{"m.f32_codes.weight", "dtype F32, want U32"}},
		{name: "missing biases", q: q, path: "m.no_biases", out: 16, in: 128,
			wantErr: []string{"m.no_biases.biases not found"}},
		{name: "missing weight", q: q, path: "m.absent", out: 16, in: 128,
			wantErr: []string{"m.absent.weight not found"}},
		{name: "unquantized", q: q, path: "m.norm", out: 128, in: 1,
			wantErr: []string{"m.norm: tensor m.norm.scales not found", "unquantized linear layers are not supported yet"}},
		{name: "no quantization block", q: nil, path: "m.layers.0.mlp.up_proj", out: 16, in: 128,
			wantErr: []string{"config.json has no quantization block"}},
		{name: "input not a multiple of the group", q: q, path: "m.layers.0.mlp.up_proj", out: 16, in: 96,
			wantErr: []string{"input size 96 does not fit 4-bit, group size 64"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.Linear(tc.q, tc.path, tc.out, tc.in, tc.experts)
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Path != tc.path || l.Bits != tc.wantBits || l.GroupSize != tc.wantGroup ||
				l.Out != tc.out || l.In != tc.in || l.Experts != tc.experts {
				t.Errorf("got %+v", l)
			}
			if l.Weight.Name != tc.path+".weight" || l.Scales.Name != tc.path+".scales" || l.Biases.Name != tc.path+".biases" {
				t.Errorf("tensors %s %s %s", l.Weight.Name, l.Scales.Name, l.Biases.Name)
			}
		})
	}
}
