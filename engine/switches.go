package engine

import "bagel/switches"

const (
	// SwitchDeviceArgmax lets greedy decoding pick the token on the device.
	SwitchDeviceArgmax = "device-argmax"
	// SwitchDeviceTopK lets sampling with a top-k take the k best logits (and
	// the repetition penalty) on the device; the host draws from those.
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
		Description: "Sampling with a top-k picks the k best tokens on the device and reads back only those (applies at the next generation).",
		Default:     true,
		Env:         "BAGEL_NO_DEVICE_TOPK",
	})
}
