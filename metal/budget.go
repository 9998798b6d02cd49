package metal

import (
	"fmt"

	"bagel/metal/mtl"
)

// RecommendedWorkingSet returns the default GPU's recommendedMaxWorkingSetSize
// (the memory Metal advises one process to keep in use on it, in bytes; on
// Apple silicon a share of the unified memory that depends on the machine)
// and the GPU's name. It opens no queue and compiles nothing, so the app can
// check that a model fits before it opens the device (New).
func RecommendedWorkingSet() (bytes uint64, name string, err error) {
	if err := mtl.Load(); err != nil {
		return 0, "", err
	}
	mtl.WithPool(func() {
		dev := mtl.CreateSystemDefaultDevice()
		if dev.IsNil() {
			err = fmt.Errorf("metal: MTLCreateSystemDefaultDevice found no GPU")
			return
		}
		defer dev.Release() // created: +1
		bytes, name = dev.RecommendedMaxWorkingSetSize(), dev.Name()
	})
	return bytes, name, err
}
