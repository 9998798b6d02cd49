package cuda

import "bagel/backend"

var _ backend.MatrixUnits = (*Device)(nil)

// MatrixUnits: mma.sync needs sm_80 or later and kernels compiled for the
// GPU (NVRTC); the embedded PTX targets compute_75, where the tiled paths
// fall back to their plain loops.
func (d *Device) MatrixUnits() bool { return d.major >= 8 && d.nv != nil && !d.forcePTX }
