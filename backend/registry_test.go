package backend

import (
	"slices"
	"testing"
)

func TestRegister(t *testing.T) {
	open := func(Options) (Device, error) { return nil, nil }
	Register("test-registry", open)
	if _, ok := Lookup("test-registry"); !ok {
		t.Fatal("Lookup does not find a registered backend")
	}
	if _, ok := Lookup("absent"); ok {
		t.Error("Lookup finds a backend nobody registered")
	}
	if !slices.Contains(Registered(), "test-registry") {
		t.Errorf("Registered() = %v", Registered())
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of one name did not panic")
		}
	}()
	Register("test-registry", open)
}
