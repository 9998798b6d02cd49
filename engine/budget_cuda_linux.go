package engine

import "bagel/cuda"

// On CUDA the budget is the first GPU's memory (the one Load opens).
func init() {
	gpuBudgets["cuda"] = func() (uint64, string, error) {
		n, name, err := cuda.TotalMemory(0)
		return n, "CUDA device memory (" + name + ")", err
	}
}
