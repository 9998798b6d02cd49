package engine

import (
	"bagel/feature"
	"bagel/tokenizer"
)

// Message is one turn of a conversation (the UI names it through the engine).
type Message = tokenizer.Message

// Switch is an engine feature switch (a fused path, the residency set, ...).
type Switch = feature.Switch

// Switches lists every registered engine switch, for the settings screen and bench.
func Switches() []Switch { return feature.All() }

// SwitchOn tells a switch's current value.
func SwitchOn(name string) bool { return feature.On(name) }

// SetSwitch changes a switch for this process; it applies from the next load or
// generation.
func SetSwitch(name string, on bool) error { return feature.Set(name, on) }
