//go:build turbojpeg && cgo

package turbojpeg

/*
#cgo LDFLAGS: -l:libjpeg.a
#cgo noescape mltj_decode
#cgo nocallback mltj_decode
#include "decode.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// libjpeg-turbo is linked from its static archive (libjpeg62-turbo-dev's
// libjpeg.a), so a c-shared library importing this package still needs only
// libc at run time.
const available = true

func call(dst []uint8, data []byte, minW, minH int, maxPixels int64, flags C.int, info *C.mltj_info) C.int {
	var dp *C.uchar
	if cap(dst) > 0 {
		dp = (*C.uchar)(unsafe.Pointer(unsafe.SliceData(dst[:cap(dst)])))
	}
	return C.mltj_decode((*C.uchar)(unsafe.Pointer(unsafe.SliceData(data))), C.ulong(len(data)),
		C.int(minW), C.int(minH), C.longlong(maxPixels), flags, dp, C.size_t(cap(dst)), info)
}

func decode(dst []uint8, data []byte, o *Options) (int, int, []uint8, error) {
	var info C.mltj_info
	flags := C.int(0)
	if o.Lenient {
		flags |= C.MLTJ_LENIENT
	}
	if o.FastUpsample {
		flags |= C.MLTJ_FAST_UPSAMPLE
	}
	rc := call(dst, data, o.MinW, o.MinH, o.MaxPixels, flags, &info)
	if rc == C.MLTJ_NEED_BUFFER {
		dst = make([]uint8, int(info.out_width)*int(info.out_height)*3)
		rc = call(dst, data, o.MinW, o.MinH, o.MaxPixels, flags, &info)
	}
	if rc != C.MLTJ_OK {
		return 0, 0, nil, toError(rc, info.msg)
	}
	w, h := int(info.out_width), int(info.out_height)
	return w, h, dst[:w*h*3], nil
}

func decodeConfig(data []byte) (Config, error) {
	var info C.mltj_info
	rc := call(nil, data, 0, 0, -1, C.MLTJ_LENIENT, &info)
	if rc != C.MLTJ_NEED_BUFFER {
		return Config{}, toError(rc, info.msg)
	}
	return Config{Width: int(info.width), Height: int(info.height), Components: int(info.components)}, nil
}

// toError takes the message by value: a pointer into info would move info
// to the heap on every call, the successful ones included.
func toError(rc C.int, cmsg [C.MLTJ_MSG_LEN]C.char) error {
	msg := C.GoString(&cmsg[0])
	switch rc {
	case C.MLTJ_ERR_TOO_LARGE:
		return fmt.Errorf("%w: %s", ErrTooLarge, msg)
	case C.MLTJ_ERR_WARNING:
		return fmt.Errorf("%w: %s (a libjpeg-turbo warning, fatal unless Options.Lenient)", ErrDecode, msg)
	case C.MLTJ_ERR_JPEG, C.MLTJ_ERR_UNSUPPORTED:
		return fmt.Errorf("%w: %s", ErrDecode, msg)
	}
	return fmt.Errorf("%w: unexpected status %d (%s)", ErrDecode, int(rc), msg)
}
