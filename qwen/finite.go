package qwen

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"bagel/safetensors"
)

// The numeric check of the weights at load. A NaN or an infinity in a norm
// weight, a scale or a bias (a corrupt download, a broken conversion) turns
// every logit into NaN without any error: the reply is "!!!!". These tensors
// are a small part of the checkpoint (scales and biases are 1/8 of the codes'
// bytes at 4 bits, groups of 64), so they are scanned on every load, in
// parallel; the packed codes cannot hold a non-finite value and are not read.

// checked records a tensor for the numeric check.
func (b *binder) checked(t *safetensors.Tensor) { b.toCheck = append(b.toCheck, t) }

// checkFinite scans the recorded bf16 and f32 tensors and names the first one,
// in the order they were bound, holding a NaN or an infinity.
func (b *binder) checkFinite() error {
	errs := make([]error, len(b.toCheck))
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range work {
				errs[i] = finite(b.toCheck[i])
			}
		})
	}
	for i := range b.toCheck {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// finite returns an error naming t and the first non-finite element, if any:
// all exponent bits set is an infinity or a NaN, in bf16 as in f32.
func finite(t *safetensors.Tensor) error {
	bad := -1
	var kind string
	switch t.DType {
	case "BF16":
		for i := 0; i+1 < len(t.Data); i += 2 {
			if v := binary.LittleEndian.Uint16(t.Data[i:]); v&0x7f80 == 0x7f80 {
				bad, kind = i/2, nonFinite(v&0x7f != 0)
				break
			}
		}
	case "F32":
		for i := 0; i+3 < len(t.Data); i += 4 {
			if v := binary.LittleEndian.Uint32(t.Data[i:]); v&0x7f800000 == 0x7f800000 {
				bad, kind = i/4, nonFinite(v&0x7fffff != 0)
				break
			}
		}
	default:
		return nil
	}
	if bad < 0 {
		return nil
	}
	return fmt.Errorf("tensor %s (%s): element %d is %s: the checkpoint is corrupt (re-download or re-convert it)",
		t.Name, baseName(t.File), bad, kind)
}

func nonFinite(nan bool) string {
	if nan {
		return "NaN"
	}
	return "infinite"
}
