// Package switches is the registry of engine switches: each fused GPU path, the
// Metal residency set, speculative decoding. A switch has one name, is read in one
// place (through On), and is listed by the settings screen and `bagel bench` from
// this registry, so a new switch shows up there without UI changes.
//
// A switch's value is, in order: what Set gave it, else its environment variable
// (BAGEL_NO_X=1 turns a default-on switch off; BAGEL_X=1 turns a default-off one
// on), else its default.
package switches

import (
	"fmt"
	"os"
	"sort"
	"sync"
)

// Switch describes one feature switch.
type Switch struct {
	Name        string // short, lower-case with dashes: "residency-set"
	Description string // one sentence for the settings screen
	Default     bool
	Env         string   // the environment variable that overrides the default
	Backends    []string // where it has an effect ("metal", "cuda", "cpu"); empty: all
	// Verifies marks a switch that is worth judging on speculative decoding's
	// verifies as well as on plain steps (`bagel bench` times oracle drafts
	// with it flipped too).
	Verifies bool
}

var (
	mu       sync.Mutex
	switches = map[string]Switch{}
	set      = map[string]bool{}
)

// Register adds a switch; packages call it from init. A second registration of
// one name panics (a programmer error).
func Register(s Switch) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := switches[s.Name]; dup {
		panic("switches: switch registered twice: " + s.Name)
	}
	switches[s.Name] = s
}

// All lists the registered switches by name.
func All() []Switch {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Switch, 0, len(switches))
	for _, s := range switches {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// On tells whether switch name is on. An unknown name panics: it is a typo in code.
func On(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	s, ok := switches[name]
	if !ok {
		panic("switches: unknown switch " + name)
	}
	if v, ok := set[name]; ok {
		return v
	}
	if s.Env != "" {
		if v := os.Getenv(s.Env); v != "" {
			on := v != "0" && v != "false"
			if s.Default {
				return !on // BAGEL_NO_X=1 turns it off
			}
			return on
		}
	}
	return s.Default
}

// Chosen tells whether switch name has a value someone chose: from Set
// (the settings screen, --switch) or its environment variable. Not chosen,
// it is at its default, which a command may then pick for its own use
// (bagel serve --parallel takes tiled-gemv).
func Chosen(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	s, ok := switches[name]
	if !ok {
		panic("switches: unknown switch " + name)
	}
	if _, ok := set[name]; ok {
		return true
	}
	return s.Env != "" && os.Getenv(s.Env) != ""
}

// Set gives a switch a value for this process (the settings screen); it applies
// from the next model load or generation, as the switch's description says.
func Set(name string, on bool) error {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := switches[name]; !ok {
		return fmt.Errorf("unknown engine switch %q", name)
	}
	set[name] = on
	return nil
}

// Reset forgets what Set gave the named switches, or every switch when none
// is named, so that their environment variables or defaults apply again (a
// test that changed one restores it so).
func Reset(names ...string) {
	mu.Lock()
	defer mu.Unlock()
	if len(names) == 0 {
		set = map[string]bool{}
	}
	for _, name := range names {
		delete(set, name)
	}
}
