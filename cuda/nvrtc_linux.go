//go:build linux

package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/ebitengine/purego"
)

// nvrtcResult is an nvrtcResult; 0 is NVRTC_SUCCESS.
type nvrtcResult int32

// nvrtc holds the NVRTC entry points. NVRTC ships with the CUDA toolkit, not the
// driver, so it may be missing; the device then loads the embedded PTX instead.
type nvrtc struct {
	path                   string
	nvrtcVersion           func(major, minor *int32) nvrtcResult
	nvrtcGetErrorString    func(r nvrtcResult) string
	nvrtcCreateProgram     func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames unsafe.Pointer) nvrtcResult
	nvrtcDestroyProgram    func(prog *uintptr) nvrtcResult
	nvrtcCompileProgram    func(prog uintptr, numOptions int32, options unsafe.Pointer) nvrtcResult
	nvrtcGetProgramLogSize func(prog uintptr, n *uint64) nvrtcResult
	nvrtcGetProgramLog     func(prog uintptr, log unsafe.Pointer) nvrtcResult
	nvrtcGetPTXSize        func(prog uintptr, n *uint64) nvrtcResult
	nvrtcGetPTX            func(prog uintptr, ptx unsafe.Pointer) nvrtcResult
	nvrtcGetCUBINSize      func(prog uintptr, n *uint64) nvrtcResult
	nvrtcGetCUBIN          func(prog uintptr, cubin unsafe.Pointer) nvrtcResult
}

// nvrtcCandidates are the names and places NVRTC is looked for, most specific
// first: the unversioned name (a toolkit's lib64 on the loader path), the
// versioned sonames of CUDA 13, 12 and 11.2+, then the usual toolkit folders.
func nvrtcCandidates() []string {
	names := []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if v := os.Getenv(env); v != "" {
			dirs = append(dirs, filepath.Join(v, "lib64"), filepath.Join(v, "lib"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/cuda/targets/sbsa-linux/lib")
	globbed, _ := filepath.Glob("/usr/local/cuda-*/lib64")
	dirs = append(dirs, globbed...)
	out := append([]string{}, names...)
	for _, dir := range dirs {
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// loadNVRTC opens NVRTC, or returns an error listing where it looked.
func loadNVRTC() (*nvrtc, error) {
	var lib uintptr
	var path string
	for _, name := range nvrtcCandidates() {
		if h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			lib, path = h, name
			break
		}
	}
	if lib == 0 {
		return nil, fmt.Errorf("cuda: NVRTC (libnvrtc.so) not found on the loader path or in /usr/local/cuda*/lib64")
	}
	n := &nvrtc{path: path}
	syms := []struct {
		fn   any
		name string
	}{
		{&n.nvrtcVersion, "nvrtcVersion"},
		{&n.nvrtcGetErrorString, "nvrtcGetErrorString"},
		{&n.nvrtcCreateProgram, "nvrtcCreateProgram"},
		{&n.nvrtcDestroyProgram, "nvrtcDestroyProgram"},
		{&n.nvrtcCompileProgram, "nvrtcCompileProgram"},
		{&n.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize"},
		{&n.nvrtcGetProgramLog, "nvrtcGetProgramLog"},
		{&n.nvrtcGetPTXSize, "nvrtcGetPTXSize"},
		{&n.nvrtcGetPTX, "nvrtcGetPTX"},
		{&n.nvrtcGetCUBINSize, "nvrtcGetCUBINSize"},
		{&n.nvrtcGetCUBIN, "nvrtcGetCUBIN"},
	}
	for _, s := range syms {
		if err := register(s.fn, lib, s.name); err != nil {
			return nil, fmt.Errorf("cuda: %s lacks %s (NVRTC older than 11.2?): %w", path, s.name, err)
		}
	}
	return n, nil
}

// Version is NVRTC's "major.minor".
func (n *nvrtc) Version() string {
	var major, minor int32
	if n.nvrtcVersion(&major, &minor) != 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

func (n *nvrtc) check(r nvrtcResult, call string) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s (%d)", call, n.nvrtcGetErrorString(r), int(r))
}

// compile compiles src with options. arch "sm_XY" returns a cubin, "compute_XY"
// returns PTX (NUL-terminated text). A compile error carries NVRTC's log.
func (n *nvrtc) compile(src, name string, options []string, cubin bool) ([]byte, error) {
	var prog uintptr
	if err := n.check(n.nvrtcCreateProgram(&prog, src, name, 0, nil, nil), "nvrtcCreateProgram"); err != nil {
		return nil, err
	}
	defer n.nvrtcDestroyProgram(&prog)

	// options is a char** of NUL-terminated strings; every pointer stays
	// reachable from cOpts until the call returns.
	cStrs := make([][]byte, len(options))
	cOpts := make([]*byte, len(options))
	for i, o := range options {
		cStrs[i] = append([]byte(o), 0)
		cOpts[i] = &cStrs[i][0]
	}
	var optPtr unsafe.Pointer
	if len(cOpts) > 0 {
		optPtr = unsafe.Pointer(&cOpts[0])
	}
	res := n.nvrtcCompileProgram(prog, int32(len(options)), optPtr)
	log := n.log(prog)
	if res != 0 {
		return nil, fmt.Errorf("cuda: nvrtcCompileProgram (%s, %v): %s (%d)\n%s", name, options, n.nvrtcGetErrorString(res), int(res), log)
	}
	var size uint64
	get, getSize, what := n.nvrtcGetPTX, n.nvrtcGetPTXSize, "PTX"
	if cubin {
		get, getSize, what = n.nvrtcGetCUBIN, n.nvrtcGetCUBINSize, "CUBIN"
	}
	if err := n.check(getSize(prog, &size), "nvrtcGet"+what+"Size"); err != nil {
		return nil, err
	}
	out := make([]byte, size)
	if size > 0 {
		if err := n.check(get(prog, unsafe.Pointer(&out[0])), "nvrtcGet"+what); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// log is the program's compile log (warnings included), or "".
func (n *nvrtc) log(prog uintptr) string {
	var size uint64
	if n.nvrtcGetProgramLogSize(prog, &size) != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if n.nvrtcGetProgramLog(prog, unsafe.Pointer(&buf[0])) != 0 {
		return ""
	}
	return string(buf[:size-1])
}
