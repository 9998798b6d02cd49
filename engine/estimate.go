package engine

import (
	"fmt"

	"bagel/qwen"
	"bagel/safetensors"
)

// Estimate checks a model folder without binding it and returns the memory it
// would take for contextLength tokens (0: the default), so the app can warn
// before a load that will not fit. Errors name the file and the problem.
func Estimate(dir string, contextLength int) (Memory, error) {
	cfg, top, err := qwen.ReadConfig(dir)
	if err != nil {
		return Memory{}, err
	}
	if _, err := safetensors.ParseQuantization(top); err != nil {
		return Memory{}, fmt.Errorf("config.json: %w", err)
	}
	ck, err := safetensors.Open(dir)
	if err != nil {
		return Memory{}, err
	}
	defer ck.Close()
	var m Memory
	for _, f := range ck.Files {
		m.Weights += int64(len(f.Data))
	}
	if contextLength <= 0 {
		contextLength = DefaultContextLength
	}
	m.Cache = cacheBytes(cfg, contextLength)
	return m, nil
}

// cacheBytes mirrors qwen.Cache's buffers: bf16 keys and values per attention
// layer, bf16 conv window and f32 state per GDN layer.
func cacheBytes(cfg *qwen.Config, n int) int64 {
	var total int64
	for i := 0; i < cfg.NumLayers; i++ {
		if cfg.IsAttention(i) {
			total += 2 * int64(cfg.NumKVHeads) * int64(n) * int64(cfg.HeadDim) * 2
		} else {
			total += int64(cfg.ConvKernel-1) * int64(cfg.GDNConvDim()) * 2
			total += int64(cfg.LinearValueHeads) * int64(cfg.LinearValueDim) * int64(cfg.LinearKeyDim) * 4
		}
	}
	return total
}
