package engine

import "bagel/metal"

// On Metal the budget is what Metal recommends keeping in use on the GPU, a
// share of the unified memory that depends on the machine, not a fixed ¾.
func init() {
	gpuBudgets["metal"] = func() (uint64, string, error) {
		n, name, err := metal.RecommendedWorkingSet()
		return n, "Metal's recommended working set (" + name + ")", err
	}
}
