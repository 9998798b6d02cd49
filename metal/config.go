package metal

import (
	"fmt"
	"os"
	"strconv"

	"bagel/switches"
)

// residencySwitch is the feature switch of the residency set; it is read in one
// place, Device.openResidencySet.
const residencySwitch = "residency-set"

func init() {
	switches.Register(switches.Switch{
		Name: residencySwitch,
		Description: "Keep the weights and caches resident on the GPU with one Metal residency set " +
			"(macOS 15 and later); applies from the next model load.",
		Default:  true,
		Env:      "BAGEL_NO_RESIDENCY_SET",
		Backends: []string{"metal"},
	})
}

// defaultMaxCommandBuffers is how many command buffers may be in flight before
// Submit waits for the oldest: enough to keep the GPU fed across several
// tokens' work, bounded so the host cannot run arbitrarily far ahead.
const defaultMaxCommandBuffers = 64

// maxCommandBuffers reads BAGEL_MAX_COMMAND_BUFFERS (a positive integer) or
// returns the default.
func maxCommandBuffers() (int, error) {
	return parseMaxCommandBuffers(os.Getenv("BAGEL_MAX_COMMAND_BUFFERS"))
}

func parseMaxCommandBuffers(v string) (int, error) {
	if v == "" {
		return defaultMaxCommandBuffers, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("BAGEL_MAX_COMMAND_BUFFERS=%q: want a positive integer", v)
	}
	return n, nil
}

// MSL language versions are MTLLanguageVersion values: major<<16 | minor.
// 3.1 is the first with bfloat; a Go binary without cgo would otherwise be
// compiled as MSL 2.4, so the version is always set and read back.
const languageVersion3_1 = 3<<16 | 1

// languageVersionString is "3.1" for MTLLanguageVersion3_1.
func languageVersionString(v uint64) string {
	return fmt.Sprintf("%d.%d", v>>16, v&0xffff)
}
