//go:build !metalsim

package mtl

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// The frameworks and C functions the binding needs, loaded once by loadRuntime.
var (
	runtimeOnce sync.Once
	runtimeErr  error

	// MTLCreateSystemDefaultDevice returns the default GPU, owned (+1), or 0.
	mtlCreateSystemDefaultDevice func() objc.ID
	// objc_autoreleasePoolPush/Pop: the functions behind @autoreleasepool.
	autoreleasePoolPush func() uintptr
	autoreleasePoolPop  func(pool uintptr)

	selectors = map[string]objc.SEL{}
	classes   = map[string]objc.Class{}
)

// Load opens Metal.framework and registers the selector and class
// tables. CoreGraphics is opened too: without it, MTLCreateSystemDefaultDevice
// returns nil in a process that is not an app (a known Metal quirk that
// Ebitengine works around the same way). Foundation provides NSString.
// Every other function of the package needs a successful Load first.
func Load() error {
	runtimeOnce.Do(func() {
		const mode = purego.RTLD_NOW | purego.RTLD_GLOBAL
		metalLib, err := purego.Dlopen("/System/Library/Frameworks/Metal.framework/Metal", mode)
		if err != nil {
			runtimeErr = fmt.Errorf("metal: loading Metal.framework: %w", err)
			return
		}
		for _, fw := range []string{"CoreGraphics", "Foundation"} {
			if _, err := purego.Dlopen("/System/Library/Frameworks/"+fw+".framework/"+fw, mode); err != nil {
				runtimeErr = fmt.Errorf("metal: loading %s.framework: %w", fw, err)
				return
			}
		}
		objcLib, err := purego.Dlopen("/usr/lib/libobjc.A.dylib", mode)
		if err != nil {
			runtimeErr = fmt.Errorf("metal: loading libobjc: %w", err)
			return
		}
		purego.RegisterLibFunc(&mtlCreateSystemDefaultDevice, metalLib, "MTLCreateSystemDefaultDevice")
		purego.RegisterLibFunc(&autoreleasePoolPush, objcLib, "objc_autoreleasePoolPush")
		purego.RegisterLibFunc(&autoreleasePoolPop, objcLib, "objc_autoreleasePoolPop")
		for _, name := range selectorNames {
			selectors[name] = objc.RegisterName(name)
		}
		for _, name := range classNames {
			c := objc.GetClass(name)
			if c == 0 {
				runtimeErr = fmt.Errorf("metal: Objective-C class %s not found (macOS too old?)", name)
				return
			}
			classes[name] = c
		}
	})
	return runtimeErr
}

// sel is the registered selector name. A name missing from selectorNames is a
// programmer error (selectors_test.go catches it on Linux).
func sel(name string) objc.SEL {
	s, ok := selectors[name]
	if !ok {
		panic("metal: selector not in selectorNames: " + name)
	}
	return s
}

// class is the registered class name.
func class(name string) objc.ID {
	c, ok := classes[name]
	if !ok {
		panic("metal: class not in classNames: " + name)
	}
	return objc.ID(c)
}

// WithPool runs f inside an autorelease pool: objects autoreleased by f are
// released when it returns, unless retained. Every Device method is one pool.
func WithPool(f func()) {
	pool := autoreleasePoolPush()
	defer autoreleasePoolPop(pool)
	f()
}

// retain sends retain: the caller now owns id (+1). Returns id.
func retain(id objc.ID) objc.ID {
	if id != 0 {
		id.Send(sel("retain"))
	}
	return id
}

// release sends release to an owned object; 0 is ignored.
func release(id objc.ID) {
	if id != 0 {
		id.Send(sel("release"))
	}
}

// respondsTo reports whether id implements selector name (guards APIs of newer
// macOS versions, e.g. residency sets on macOS 15).
func respondsTo(id objc.ID, name string) bool {
	return objc.Send[bool](id, sel("respondsToSelector:"), sel(name))
}

// nsUTF8StringEncoding is NSUTF8StringEncoding.
const nsUTF8StringEncoding = 4

// nsString makes an autoreleased NSString. It sends stringWithCString:encoding:
// (what metal-cpp's NS::String::string sends) rather than the equivalent
// stringWithUTF8String:, which metal-cpp does not wrap, so that the call is
// checked against Apple's headers like every other (apple_check_test.go).
func nsString(s string) objc.ID {
	b := append([]byte(s), 0)
	return class("NSString").Send(sel("stringWithCString:encoding:"), unsafe.Pointer(&b[0]), uint64(nsUTF8StringEncoding))
}

// goString copies an NSString's UTF-8 text; 0 gives "".
func goString(s objc.ID) string {
	if s == 0 {
		return ""
	}
	p := objc.Send[*byte](s, sel("UTF8String"))
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// nsError turns an NSError (0: none) into a Go error for op.
func nsError(op string, e objc.ID) error {
	if e == 0 {
		return nil
	}
	return &NSError{
		Op:          op,
		Domain:      goString(e.Send(sel("domain"))),
		Code:        int(objc.Send[int64](e, sel("code"))),
		Description: goString(e.Send(sel("localizedDescription"))),
	}
}

// Simulated is false: this is Metal.framework itself.
const Simulated = false

// Enabled is always true on macOS: Metal is part of the system (Load still
// fails on a machine without a Metal GPU).
func Enabled() bool { return true }

// PageSize is the VM page (16 KiB on Apple silicon): newBufferWithBytesNoCopy
// needs a page-aligned pointer and a whole number of pages.
func PageSize() int { return os.Getpagesize() }
