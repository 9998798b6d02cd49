//go:build ignore

// gen_icon draws icon.png, the app icon: a shaded bagel with sesame seeds on a
// rounded dark square. Run: go run gen_icon.go (from assets/).
package main

import (
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
)

// The rounded square is 412 of the 512 pixels (80.5%), centred, as Apple's
// macOS icon grid has it (824 of 1024); the drawing inside was made for a
// 472-pixel square, so its sizes scale by body/472.
const (
	size      = 512
	ss        = 4 // supersamples per axis
	body      = 412.0
	k         = body / 472.0
	tubeR     = 138.0 * k // distance from the centre to the middle of the dough
	tubeA     = 78.0 * k  // the dough's half-thickness
	corner    = 104.0 * k // the background square's corner radius
	margin    = (size - body) / 2
	seedCount = 34
)

type seed struct{ x, y, angle float64 }

func main() {
	rng := rand.New(rand.NewPCG(7, 11))
	var seeds []seed
	for len(seeds) < seedCount {
		// On the upper, lit part of the dough.
		t := rng.Float64() * 2 * math.Pi
		r := tubeR + (rng.Float64()*2-1)*tubeA*0.62
		x, y := size/2+r*math.Cos(t), size/2+r*math.Sin(t)*0.96
		ok := true
		for _, s := range seeds {
			if math.Hypot(s.x-x, s.y-y) < 30*k {
				ok = false
			}
		}
		if ok {
			seeds = append(seeds, seed{x, y, t + math.Pi/2 + (rng.Float64()-0.5)*1.2})
		}
	}
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var acc [4]float64
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					x := float64(px) + (float64(sx)+0.5)/ss
					y := float64(py) + (float64(sy)+0.5)/ss
					c := shade(x, y, seeds)
					for i := range acc {
						acc[i] += c[i]
					}
				}
			}
			n := float64(ss * ss)
			a := acc[3] / n
			if a <= 0 {
				continue
			}
			img.SetNRGBA(px, py, color.NRGBA{
				R: uint8(math.Round(acc[0] / n / a * 255)), G: uint8(math.Round(acc[1] / n / a * 255)),
				B: uint8(math.Round(acc[2] / n / a * 255)), A: uint8(math.Round(a * 255)),
			})
		}
	}
	f, err := os.Create("icon.png")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		panic(err)
	}
}

// shade returns premultiplied RGBA in 0..1 for one sample.
func shade(x, y float64, seeds []seed) [4]float64 {
	if !inRoundedSquare(x, y) {
		return [4]float64{}
	}
	// Background: a dark blue-grey, lighter towards the top.
	t := y / size
	bg := [3]float64{0.16 - 0.05*t, 0.18 - 0.06*t, 0.27 - 0.08*t}
	dx, dy := x-size/2, (y-size/2)/0.96
	r := math.Hypot(dx, dy)
	d := r - tubeR
	// A soft shadow under the bagel.
	sd := math.Hypot(dx, (y-size/2-26*k)/0.96) - tubeR
	if s := math.Abs(sd) - tubeA; s < 30*k {
		dark := 0.45 * (1 - math.Max(s, 0)/(30*k))
		for i := range bg {
			bg[i] *= 1 - dark
		}
	}
	if math.Abs(d) >= tubeA {
		return [4]float64{bg[0], bg[1], bg[2], 1}
	}
	// The dough's surface normal on the torus tube.
	h := math.Sqrt(tubeA*tubeA - d*d)
	nx, ny, nz := d/tubeA*dx/r, d/tubeA*dy/r, h/tubeA
	lx, ly, lz := -0.45, -0.6, 0.66
	ln := math.Sqrt(lx*lx + ly*ly + lz*lz)
	diffuse := math.Max(0, (nx*lx+ny*ly+nz*lz)/ln)
	// Crust: golden on top, deep brown at the rim.
	top := [3]float64{0.93, 0.66, 0.30}
	rim := [3]float64{0.45, 0.22, 0.07}
	up := math.Pow(nz, 0.8)
	var c [3]float64
	for i := range c {
		c[i] = rim[i] + (top[i]-rim[i])*up
		c[i] *= 0.45 + 0.7*diffuse
	}
	// A specular glint of glaze.
	hx, hy, hz := lx/ln, ly/ln, lz/ln+1
	hn := math.Sqrt(hx*hx + hy*hy + hz*hz)
	spec := math.Pow(math.Max(0, (nx*hx+ny*hy+nz*hz)/hn), 40) * 0.35
	for i := range c {
		c[i] = math.Min(1, c[i]+spec)
	}
	// Sesame seeds: small cream ellipses.
	for _, s := range seeds {
		ex, ey := x-s.x, y-s.y
		ca, sa := math.Cos(s.angle), math.Sin(s.angle)
		u, v := ex*ca+ey*sa, -ex*sa+ey*ca
		if (u*u)/(9.5*k*9.5*k)+(v*v)/(5*k*5*k) <= 1 {
			shadeSeed := 0.85 + 0.15*(-v/(5*k))
			c = [3]float64{0.98 * shadeSeed, 0.92 * shadeSeed, 0.76 * shadeSeed}
		}
	}
	return [4]float64{c[0], c[1], c[2], 1}
}

func inRoundedSquare(x, y float64) bool {
	lo, hi := margin, size-margin
	if x < lo || x > hi || y < lo || y > hi {
		return false
	}
	cx := math.Max(lo+corner-x, math.Max(0, x-(hi-corner)))
	cy := math.Max(lo+corner-y, math.Max(0, y-(hi-corner)))
	return cx*cx+cy*cy <= corner*corner
}
