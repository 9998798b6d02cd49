package engine

// RecommendedSampling is the sampling the Qwen3 model cards advise for chat:
// with thinking, temperature 0.6, top-p 0.95, top-k 20; without, temperature
// 0.7, top-p 0.8, top-k 20; min-p 0 and no repetition penalty in both. (Greedy
// decoding can loop endlessly in thinking mode.) The app starts from it; the
// command line stays greedy by default, so its output is repeatable.
func RecommendedSampling(thinking bool) Sampling {
	if thinking {
		return Sampling{Temperature: 0.6, TopP: 0.95, TopK: 20, RepetitionPenalty: 1}
	}
	return Sampling{Temperature: 0.7, TopP: 0.8, TopK: 20, RepetitionPenalty: 1}
}
