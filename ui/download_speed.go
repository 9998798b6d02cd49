package ui

import (
	"fmt"
	"time"
)

// downloadSpeed turns a download's running byte count into a speed and the time
// left: the speed is an exponential average of the rates between samples
// (half weight on the last ~2 s), so that one slow tick does not swing it.
type downloadSpeed struct {
	at    time.Time
	done  int64
	speed float64 // bytes per second; 0 before two samples
}

// add records done bytes at time now.
func (m *downloadSpeed) add(now time.Time, done int64) {
	if !m.at.IsZero() && now.After(m.at) && done >= m.done {
		dt := now.Sub(m.at).Seconds()
		r := float64(done-m.done) / dt
		if m.speed == 0 {
			m.speed = r
		} else {
			w := min(1, dt/2) // the weight of the newest rate
			m.speed = w*r + (1-w)*m.speed
		}
	}
	m.at, m.done = now, done
}

// describe is "85 MB/s · 3 min left" for total bytes, or "" before a speed is known.
func (m *downloadSpeed) describe(total int64) string {
	if m.speed <= 0 {
		return ""
	}
	left := time.Duration(float64(max(total-m.done, 0)) / m.speed * float64(time.Second))
	return fmt.Sprintf("%s/s · %s left", humanBytes(m.speed), humanDuration(left))
}

// humanBytes is a byte count in kB, MB or GB (powers of 1000, as the sizes beside it).
func humanBytes(b float64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.0f MB", b/1e6)
	default:
		return fmt.Sprintf("%.0f kB", b/1e3)
	}
}

// humanDuration is a time left in seconds, minutes or hours.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()+0.5))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()+0.5))
	default:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
}
