package engine

import "bagel/switches"

const (
	// SwitchDeviceArgmax lets greedy decoding pick the token on the device.
	SwitchDeviceArgmax = "device-argmax"
	// SwitchDeviceTopK lets sampling with a top-k take the k best logits (and
	// the repetition penalty) on the device; the host draws from those. With
	// top-p or min-p and no top-k it takes the ops.TopKMax best, and the
	// logits only when the filters keep more (engine.forwardFiltered).
	SwitchDeviceTopK = "device-topk"
)

func init() {
	switches.Register(switches.Switch{
		Name:        SwitchDeviceArgmax,
		Description: "Greedy decoding picks the token on the device and reads back its id, not the logits (applies at the next generation).",
		Default:     true,
		Env:         "BAGEL_NO_DEVICE_ARGMAX",
	})
	switches.Register(switches.Switch{
		Name:        SwitchDeviceTopK,
		Description: "Sampling with a top-k (or top-p or min-p without one) picks the best tokens on the device and reads back only those (applies at the next generation).",
		Default:     true,
		Env:         "BAGEL_NO_DEVICE_TOPK",
	})
}
