package cpu

import "bagel/backend"

func init() {
	backend.Register("cpu", func(o backend.Options) (backend.Device, error) { return New(o.Threads), nil })
}
