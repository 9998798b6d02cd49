package engine

import (
	"testing"

	"bagel/internal/testmodel"
)

// Estimate and a loaded engine agree on the footprint: both take the cache
// layout from qwen (CacheBytes and NewCache share it).
func TestEstimateMatchesLoad(t *testing.T) {
	for _, name := range testmodel.Names {
		t.Run(name, func(t *testing.T) {
			dir := testmodel.Weights(t, name)
			est, err := Estimate(dir, 48)
			if err != nil {
				t.Fatal(err)
			}
			e, err := Load(dir, Options{Backend: "cpu", ContextLength: 48})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			// What the model takes; the prompt cache's and the scratch's
			// figures are what the engine holds later.
			if got := e.Memory(); got.Weights != est.Weights || got.Cache != est.Cache {
				t.Errorf("loaded %+v, estimated %+v", got, est)
			}
		})
	}
}
