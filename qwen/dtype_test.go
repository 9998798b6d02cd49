package qwen

import (
	"strings"
	"testing"

	"bagel/ops"
	"bagel/safetensors"
)

func TestDTypeOf(t *testing.T) {
	supported := map[string]ops.DType{"BF16": ops.BF16, "F32": ops.F32, "U32": ops.U32, "F16": ops.F16, "I32": ops.I32}
	for _, name := range []string{"BF16", "F32", "U32", "F16", "I32", "I8", "U8", "F4", "F64"} {
		tn := &safetensors.Tensor{Name: "w." + name, File: "/m/model.safetensors", DType: name}
		dt, err := dtypeOf(tn)
		if want, ok := supported[name]; ok {
			if err != nil || dt != want {
				t.Errorf("%s: dtypeOf = %v, %v; want %v", name, dt, err, want)
			}
			continue
		}
		for _, w := range []string{"model.safetensors", tn.Name, "dtype " + name + " is not supported"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v does not mention %q", name, err, w)
			}
		}
	}
}
