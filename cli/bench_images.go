package cli

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"bagel/engine"
)

// imageRow is one image through the vision tower (bench --images): its
// size as the processor resized it, its tokens, and the encode's wall time
// (the median of the runs after a warm-up encode), decoding and resizing
// on the host included; that run's host and tower shares.
type imageRow struct {
	File      string  `json:"file"`
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	Tokens    int     `json:"tokens"`
	EncodeMs  float64 `json:"encode_ms"`
	PrepareMs float64 `json:"prepare_ms"`
	TowerMs   float64 `json:"tower_ms"`
	Error     string  `json:"error,omitempty"`
}

// images times each image file through the model's vision tower.
func (b *bench) images(paths []string) []imageRow {
	var rows []imageRow
	for _, p := range paths {
		row := imageRow{File: filepath.Base(p)}
		b.progress("the vision tower on " + row.File)
		data, err := engine.ReadImageFile(p)
		var img *engine.Image
		if err == nil {
			img, err = b.e.EncodeImage(data) // the warm-up: kernels compiled, scratch laid out
		}
		if err != nil {
			row.Error = err.Error()
			rows = append(rows, row)
			continue
		}
		row.Width, row.Height, row.Tokens = img.Width, img.Height, img.Tokens
		type run struct{ total, prepare, tower float64 }
		runs := make([]run, b.runs)
		for i := range runs {
			start := time.Now()
			img, err := b.e.EncodeImage(data)
			if err != nil {
				row.Error = err.Error()
				break
			}
			runs[i] = run{ms(time.Since(start)), ms(img.Prepare), ms(img.Tower)}
		}
		slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.total, b.total) })
		mid := runs[len(runs)/2]
		row.EncodeMs, row.PrepareMs, row.TowerMs = mid.total, mid.prepare, mid.tower
		rows = append(rows, row)
	}
	return rows
}

func writeImagesBench(w io.Writer, rows []imageRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nimages through the vision tower (median wall time, host decode and resize included):\n")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.File, r.Error)
			continue
		}
		fmt.Fprintf(w, "  %s: %d×%d pixels, %d tokens, %.1f ms (host decode and resize %.1f ms, tower %.1f ms)\n",
			r.File, r.Width, r.Height, r.Tokens, r.EncodeMs, r.PrepareMs, r.TowerMs)
	}
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
