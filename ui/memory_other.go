//go:build !linux && !darwin

package ui

// machineMemory is unknown here: the fit check is skipped.
func machineMemory() (total, available uint64) { return 0, 0 }
