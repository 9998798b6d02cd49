package engine

import "bagel/feature"

// SwitchDeviceArgmax lets greedy decoding pick the token on the device.
const SwitchDeviceArgmax = "device-argmax"

func init() {
	feature.Register(feature.Switch{
		Name:        SwitchDeviceArgmax,
		Description: "Greedy decoding picks the token on the device and reads back its id, not the logits (applies at the next generation).",
		Default:     true,
		Env:         "BAGEL_NO_DEVICE_ARGMAX",
	})
}
