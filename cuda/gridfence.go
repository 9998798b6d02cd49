package cuda

import "bagel/backend"

var _ backend.GridFencer = (*Device)(nil)

// GridFence: CUDA kernels fence device memory across a grid (__threadfence)
// and take atomic tickets, so the last-threadgroup kernels run here.
func (d *Device) GridFence() bool { return true }
