package qwen

import (
	"fmt"

	"bagel/ops"
	"bagel/safetensors"
)

// dtypeOf maps a checkpoint tensor's header dtype ("BF16", "U32", ...) to the
// element types kernels take. safetensors is only a file format and names dtypes
// as strings; this binder is where they meet the kernels. Other dtypes (I8, F64,
// F8_*, ...) exist in the wild but no kernel reads them.
func dtypeOf(t *safetensors.Tensor) (ops.DType, error) {
	switch t.DType {
	case "BF16":
		return ops.BF16, nil
	case "F16":
		return ops.F16, nil
	case "F32":
		return ops.F32, nil
	case "U32":
		return ops.U32, nil
	case "I32":
		return ops.I32, nil
	}
	return 0, fmt.Errorf("%s: tensor %s: dtype %s is not supported", baseName(t.File), t.Name, t.DType)
}
