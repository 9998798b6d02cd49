package engine

import (
	"slices"

	"bagel/qwen"
	"bagel/switches"
	"bagel/tokenizer"
)

// Message is one turn of a conversation (the UI names it through the engine).
type Message = tokenizer.Message

// Part is a piece of a message's content, text or an image (Message.Parts).
type Part = tokenizer.Part

// Switch is an engine feature switch (a fused path, the residency set, ...).
type Switch = switches.Switch

// Switches lists every registered engine switch, for the settings screen and bench.
func Switches() []Switch { return switches.All() }

// SwitchOn tells a switch's current value.
func SwitchOn(name string) bool { return switches.On(name) }

// SetSwitch changes a switch for this process; it applies from the next load or
// generation.
func SetSwitch(name string, on bool) error { return switches.Set(name, on) }

// UnsetSwitch forgets what SetSwitch gave a switch: its environment
// variable or its default applies again (from the next load or generation).
func UnsetSwitch(name string) { switches.Reset(name) }

// SupportedModelType tells whether config.json's model_type is one the engine
// runs (the model library marks the others).
func SupportedModelType(t string) bool { return slices.Contains(qwen.SupportedModelTypes, t) }
