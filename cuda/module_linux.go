//go:build linux

package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"bagel/kernels"
)

// nvrtcOptions are the NVRTC options besides the architecture. Unannotated
// helpers are device functions (see prelude_cuda.h); division and square root
// stay IEEE and there is no fast math, so results stay close to cpu/.
var nvrtcOptions = []string{"--std=c++17", "--device-as-default-execution-space"}

// module is the loaded kernel module and its function handles.
type module struct {
	handle uintptr
	funcs  map[string]uintptr
	origin string // "cubin cache", "NVRTC", "embedded PTX"
}

// Prepare loads the kernel module now (backend.Preparer): a cubin from the
// cache, else an NVRTC compile of every kernel (seconds; the cubin is cached
// for the next run), else the embedded PTX.
func (d *Device) Prepare() error {
	if d.mod == nil && d.modErr == nil {
		d.mod, d.modErr = d.loadModule()
	}
	return d.modErr
}

// function returns the handle of kernel name, loading the module first if needed.
func (d *Device) function(name string) (uintptr, error) {
	if err := d.Prepare(); err != nil {
		return 0, err
	}
	if fn, ok := d.mod.funcs[name]; ok {
		return fn, nil
	}
	var fn uintptr
	if err := d.drv.check(d.drv.cuModuleGetFunction(&fn, d.mod.handle, name), "cuModuleGetFunction", name); err != nil {
		return 0, err
	}
	d.mod.funcs[name] = fn
	return fn, nil
}

// ModuleOrigin says where the kernels came from ("cubin cache", "NVRTC",
// "embedded PTX"), or "" before the first dispatch.
func (d *Device) ModuleOrigin() string {
	if d.mod == nil {
		return ""
	}
	return d.mod.origin
}

// loadModule loads the kernels: a cached cubin for this source, architecture
// and option set; else an NVRTC compile (written to the cache); else, or when
// the driver rejects the cubin, the embedded PTX.
func (d *Device) loadModule() (*module, error) {
	if d.forcePTX {
		return d.loadPTX()
	}
	arch := fmt.Sprintf("sm_%d%d", d.major, d.minor)
	src := kernels.CUDASource()
	key := cacheKey(src, arch)
	path := ""
	if dir, err := cacheDir(); err == nil {
		path = filepath.Join(dir, key+".cubin")
		if image, err := os.ReadFile(path); err == nil {
			if m, err := d.load(image, "cubin cache"); err == nil {
				return m, nil
			}
			os.Remove(path) // unloadable (driver changed): compile again
		}
	}
	if d.nv == nil {
		m, err := d.loadPTX()
		if err != nil {
			return nil, fmt.Errorf("%w; and NVRTC is unavailable: %v", err, d.nvErr)
		}
		return m, nil
	}
	opts := append([]string{"--gpu-architecture=" + arch}, nvrtcOptions...)
	image, err := d.nv.compile(src, "bagel_kernels.cu", opts, true)
	if err != nil {
		return nil, err
	}
	m, err := d.load(image, "NVRTC")
	if err != nil {
		// A cubin from an NVRTC newer than the driver may not load; the PTX may.
		if pm, perr := d.loadPTX(); perr == nil {
			return pm, nil
		}
		return nil, err
	}
	if path != "" {
		writeCache(path, image)
	}
	return m, nil
}

// loadPTX JIT-compiles the embedded PTX, refusing one built from other sources.
func (d *Device) loadPTX() (*module, error) {
	if EmbeddedPTXHash() != kernels.SourceHash() {
		return nil, errors.New("cuda: the embedded PTX was built from other kernel sources than this binary's (run `make ptx`)")
	}
	image := append([]byte(EmbeddedPTX()), 0)
	return d.load(image, "embedded PTX")
}

// load loads a cubin or NUL-terminated PTX image as the module.
func (d *Device) load(image []byte, origin string) (*module, error) {
	var h uintptr
	if err := d.drv.check(d.drv.cuModuleLoadData(&h, unsafe.Pointer(&image[0])), "cuModuleLoadData", origin); err != nil {
		return nil, err
	}
	return &module{handle: h, funcs: map[string]uintptr{}, origin: origin}, nil
}

// cacheKey hashes everything the cubin depends on.
func cacheKey(src, arch string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", src, arch, strings.Join(nvrtcOptions, " "))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// cacheDir is os.UserCacheDir()/bagel/cuda, created if needed.
func cacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "bagel", "cuda")
	return dir, os.MkdirAll(dir, 0o755)
}

// writeCache stores image at path atomically; a failure only costs a recompile.
func writeCache(path string, image []byte) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cubin-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(image)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}

// CompilePTX compiles the kernel sources to PTX for a virtual architecture
// ("compute_75") with the NVRTC found on this machine; tools/ptx uses it to
// refresh the embedded PTX. It needs NVRTC but no GPU.
func CompilePTX(arch string) (ptx []byte, nvrtcVersion string, err error) {
	nv, err := loadNVRTC()
	if err != nil {
		return nil, "", err
	}
	opts := append([]string{"--gpu-architecture=" + arch}, nvrtcOptions...)
	out, err := nv.compile(kernels.CUDASource(), "bagel_kernels.cu", opts, false)
	if err != nil {
		return nil, nv.Version(), err
	}
	return []byte(strings.TrimRight(string(out), "\x00")), nv.Version(), nil
}
