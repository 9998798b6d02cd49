package metal

import "bagel/kernels"

// librarySource is the text compiled into the one Metal library: prelude_metal.h
// (which defines KERNEL as an MSL `kernel void`), common.h and every kernel file.
func librarySource() string { return kernels.MetalSource() }
