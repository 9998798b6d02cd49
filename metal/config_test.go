package metal

import (
	"testing"

	"bagel/switches"
)

func TestParseMaxCommandBuffers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"", 64, true}, {"1", 1, true}, {"128", 128, true},
		{"0", 0, false}, {"-3", 0, false}, {"many", 0, false},
	} {
		got, err := parseMaxCommandBuffers(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseMaxCommandBuffers(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestLanguageVersion(t *testing.T) {
	if got := languageVersionString(languageVersion3_1); got != "3.1" {
		t.Errorf("MTLLanguageVersion3_1 reads %q", got)
	}
	if languageVersion3_1 != 196609 { // MTLLanguageVersion3_1 in MTLLibrary.h
		t.Errorf("MTLLanguageVersion3_1 = %d, want 196609", languageVersion3_1)
	}
	if got := languageVersionString(2<<16 | 4); got != "2.4" {
		t.Errorf("2.4 reads %q", got)
	}
}

// TestResidencySwitch checks the switch is registered under its name and
// environment variable, and that the variable turns it off.
func TestResidencySwitch(t *testing.T) {
	var found *switches.Switch
	for _, s := range switches.All() {
		if s.Name == residencySwitch {
			found = &s
		}
	}
	if found == nil {
		t.Fatal("switch residency-set is not registered")
	}
	if found.Env != "BAGEL_NO_RESIDENCY_SET" || !found.Default {
		t.Errorf("switch %+v: want default on, env BAGEL_NO_RESIDENCY_SET", *found)
	}
	t.Setenv("BAGEL_NO_RESIDENCY_SET", "1")
	if switches.On(residencySwitch) {
		t.Error("BAGEL_NO_RESIDENCY_SET=1 does not turn the switch off")
	}
}
