package engine

import "bagel/qwen"

// Estimate checks a model folder without binding it and returns the memory it
// would take for contextLength tokens (0: the default), so the app can warn
// before a load that will not fit. Errors name the file and the problem.
func Estimate(dir string, contextLength int) (Memory, error) {
	cfg, ck, err := qwen.Open(dir)
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
	m.Cache = qwen.CacheBytes(cfg, contextLength)
	return m, nil
}

// EstimateConfig is Estimate before a download: the memory a model of this
// config.json takes with weightBytes of files, for contextLength tokens (0:
// the default). Errors say what config.json lacks.
func EstimateConfig(config []byte, weightBytes int64, contextLength int) (Memory, error) {
	cfg, err := qwen.ParseConfig(config)
	if err != nil {
		return Memory{}, err
	}
	if contextLength <= 0 {
		contextLength = DefaultContextLength
	}
	return Memory{Weights: weightBytes, Cache: qwen.CacheBytes(cfg, contextLength)}, nil
}
