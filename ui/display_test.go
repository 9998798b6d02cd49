package ui

import (
	"runtime"
	"strings"
	"testing"
)

func TestNoDisplaySaysSo(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("a desktop OS always has its display")
	}
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	if err := displayAvailable(); err == nil || !strings.Contains(err.Error(), "no display") {
		t.Errorf("error %v", err)
	}
	t.Setenv("DISPLAY", ":0")
	if err := displayAvailable(); err != nil {
		t.Errorf("with DISPLAY set: %v", err)
	}
}
