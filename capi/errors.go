package main

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/sched"
)

// Status codes of include/minatoloader.h, as the C int every export returns.
const (
	statusOK            C.int = C.ML_OK
	statusEndOfEpoch    C.int = C.ML_END_OF_EPOCH
	statusTimeout       C.int = C.ML_TIMEOUT
	statusInvalidArg    C.int = C.ML_ERR_INVALID_ARGUMENT
	statusInvalidHandle C.int = C.ML_ERR_INVALID_HANDLE
	statusSample        C.int = C.ML_ERR_SAMPLE
	statusClosed        C.int = C.ML_ERR_CLOSED
	statusNoMemory      C.int = C.ML_ERR_NO_MEMORY
	statusInternal      C.int = C.ML_ERR_INTERNAL
	statusState         C.int = C.ML_ERR_STATE
)

// setError stores msg as the calling thread's last error message, and its
// detail (status rc, cause err; see detailOf) for ml_last_error_detail. An
// export runs on the OS thread of its C caller, so both land in the
// thread-local buffers that ml_last_error and ml_last_error_detail on that
// thread read.
func setError(rc C.int, msg string, err error) {
	if len(msg) == 0 {
		C.mlc_clear_error()
		return
	}
	C.mlc_set_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	setDetail(detailOf(int(rc), msg, err))
}

// fail stores "fn: msg" as the last error and returns rc. The first error
// among args, if any, is the cause whose typed facts (the sample, the
// Python exception, the dead worker, the skip budget) go into the detail.
func fail(rc C.int, fn string, format string, args ...any) C.int {
	var cause error
	for _, a := range args {
		if e, ok := a.(error); ok {
			cause = e
			break
		}
	}
	setError(rc, fn+": "+fmt.Sprintf(format, args...), cause)
	return rc
}

// guard is the panic barrier every export defers first: a panic becomes
// ML_ERR_INTERNAL with the panic value and stack in the message, so no
// panic crosses into the host process.
func guard(rc *C.int) {
	if r := recover(); r != nil {
		*rc = statusInternal
		setError(statusInternal, fmt.Sprintf("minatoloader: internal error (please report): panic: %v\n%s", r, debug.Stack()), nil)
	}
}

// statusOf maps an error from the scheduler to a status code.
func statusOf(err error) C.int {
	var se *sched.SampleError
	switch {
	case err == nil:
		return statusOK
	case errors.Is(err, io.EOF):
		return statusEndOfEpoch
	case errors.Is(err, sched.ErrClosed):
		return statusClosed
	case errors.Is(err, sched.ErrNoEpoch):
		return statusState
	case errors.As(err, &se):
		return statusSample
	case errors.Is(err, batch.ErrNoMemory):
		return statusNoMemory
	case errors.Is(err, context.DeadlineExceeded):
		return statusTimeout
	}
	return statusInternal
}
