package cuda

import (
	"fmt"
	"strings"
)

// TotalMemory returns GPU ordinal's memory in bytes and its name. It asks the
// driver without creating a context, so the app can check that a model fits
// before it opens the device (New).
func TotalMemory(ordinal int) (bytes uint64, name string, err error) {
	drv, err := loadDriver()
	if err != nil {
		return 0, "", err
	}
	if err := drv.check(drv.cuInit(0), "cuInit", ""); err != nil {
		return 0, "", err
	}
	var dev int32
	if err := drv.check(drv.cuDeviceGet(&dev, int32(ordinal)), "cuDeviceGet", ""); err != nil {
		return 0, "", fmt.Errorf("%w (no CUDA device %d?)", err, ordinal)
	}
	if err := drv.check(drv.cuDeviceTotalMem(&bytes, dev), "cuDeviceTotalMem", ""); err != nil {
		return 0, "", err
	}
	var buf [256]byte
	if drv.cuDeviceGetName(&buf[0], int32(len(buf)), dev) == 0 {
		name = strings.TrimRight(string(buf[:]), "\x00")
	}
	return bytes, name, nil
}
