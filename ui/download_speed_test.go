package ui

import (
	"testing"
	"time"
)

// TestDownloadSpeed: a steady 50 MB/s reads as such with the time left; a stall
// pulls the speed down without zeroing it; nothing is said before two samples.
func TestDownloadSpeed(t *testing.T) {
	var m downloadSpeed
	t0 := time.Unix(1000, 0)
	m.add(t0, 0)
	if got := m.describe(1e9); got != "" {
		t.Errorf("one sample: %q, want nothing", got)
	}
	for i := 1; i <= 8; i++ {
		m.add(t0.Add(time.Duration(i)*250*time.Millisecond), int64(i)*12_500_000)
	}
	if got := m.describe(1e9 + 100e6); got != "50 MB/s · 20 s left" {
		t.Errorf("steady 50 MB/s with 1 GB left: %q", got)
	}
	m.add(t0.Add(3*time.Second), 100e6) // a stalled second
	if m.speed <= 0 || m.speed >= 50e6 {
		t.Errorf("after a stall: %.0f B/s, want between 0 and 50 MB/s", m.speed)
	}
	if got := humanDuration(90 * time.Minute); got != "1.5 h" {
		t.Errorf("humanDuration(90 min) = %q", got)
	}
}
