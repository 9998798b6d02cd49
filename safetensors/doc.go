// Package safetensors maps safetensors checkpoints into memory and reads the MLX
// quantization metadata that says how each linear layer is packed.
//
// We parse the format by hand instead of using a library because Bagel never copies
// weights: a file is mapped read-only once (OpenFile) and every Tensor is a view into
// that mapping, with its byte Offset in the file. The GPU backends wrap the whole
// mapping without a copy (Metal newBufferWithBytesNoCopy over the page-aligned mmap)
// and bind tensors by offset, so load time is the time to read a JSON header. A
// library that decodes into Go slices, or that owns the file, would break that.
//
// The format is small: an 8-byte little-endian header length N, N bytes of JSON
// naming each tensor's dtype, shape and [begin, end) byte range relative to byte 8+N,
// then the tensor bytes. Everything in the header is checked against the file size
// before a view is made, so a corrupt or hostile file gives an error, never a panic
// or an out-of-range view.
//
// On top of the files sit Checkpoint (every shard of a model folder, found through
// model.safetensors.index.json or by listing the folder) and Linear, which resolves a
// quantized layer's weight, scales and biases and cross-checks their shapes against
// the bits and group size from config.json (docs/MLX_QWEN35.md §1, §2).
package safetensors
