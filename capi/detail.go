package main

/*
#include "shim.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/remote"
	"github.com/minatoloader/minatoloader/core/sched"
)

// errorDetail is the JSON object ml_last_error_detail returns: the facts
// behind the last error as fields, so that no caller parses the message.
// Field order and names are part of the ABI (include/minatoloader.h).
type errorDetail struct {
	Status     int           `json:"status"`
	Kind       string        `json:"kind"`
	Message    string        `json:"message"`
	Index      *int64        `json:"index"`
	Path       *string       `json:"path"`
	Step       *string       `json:"step"`
	Python     *pythonDetail `json:"python"`
	Worker     *int          `json:"worker"`
	PID        *int          `json:"pid"`
	Init       bool          `json:"init"`
	Skipped    *int64        `json:"skipped"`
	MaxSkipped *int64        `json:"max_skipped"`
}

// pythonDetail is the exception a Python worker raised.
type pythonDetail struct {
	Module    string `json:"module"`
	Qualname  string `json:"qualname"`
	Traceback string `json:"traceback"`
}

// statusKinds is the detail's kind for each status when the error carries
// nothing more specific.
var statusKinds = map[int]string{
	int(statusEndOfEpoch):    "end_of_epoch",
	int(statusTimeout):       "timeout",
	int(statusInvalidArg):    "invalid_argument",
	int(statusInvalidHandle): "invalid_handle",
	int(statusSample):        "sample",
	int(statusClosed):        "closed",
	int(C.ML_ERR_FORKED):     "forked",
	int(statusNoMemory):      "no_memory",
	int(statusInternal):      "internal",
	int(statusState):         "state",
}

// detailOf is the detail of an error with status code status, message msg and Go
// cause err (nil when the error was found in capi itself). The kind is,
// most specific first: python_exception (a *remote.PythonError anywhere in
// the chain), worker_died (*remote.WorkerDiedError), skip_budget
// (*sched.BudgetError), else the status's kind. The sample's index, path
// and step come from the *sched.SampleError, the budget's counts from the
// *sched.BudgetError, whatever the kind.
func detailOf(status int, msg string, err error) errorDetail {
	d := errorDetail{Status: status, Kind: statusKinds[status], Message: msg}
	if d.Kind == "" {
		d.Kind = "unknown"
	}
	if err == nil {
		return d
	}
	var (
		se *sched.SampleError
		be *sched.BudgetError
		pe *remote.PythonError
		we *remote.WorkerDiedError
	)
	if errors.As(err, &se) {
		d.Index, d.Step = &se.Index, &se.Step
		if se.Path != "" {
			d.Path = &se.Path
		}
	}
	if errors.As(err, &be) {
		skipped, max := be.Skipped(), be.MaxSkipped()
		d.Skipped, d.MaxSkipped = &skipped, &max
		d.Kind = "skip_budget"
	}
	switch {
	case errors.As(err, &pe):
		d.Kind = "python_exception"
		d.Python = &pythonDetail{Module: pe.Module, Qualname: pe.Qualname, Traceback: pe.Traceback}
		d.Worker, d.PID, d.Init = &pe.Worker, &pe.PID, pe.Init
	case errors.As(err, &we):
		d.Kind = "worker_died"
		d.Worker, d.PID = &we.Worker, &we.PID
	}
	return d
}

// setDetail stores d as the calling thread's last error detail, beside the
// message setError stored (same thread-local rules).
func setDetail(d errorDetail) {
	b, err := json.Marshal(d)
	if err != nil { // only strings, ints and bools: cannot fail
		b = []byte(`{"status":-7,"kind":"internal","message":"minatoloader: encoding the error detail failed"}`)
	}
	C.mlc_set_error_detail((*C.char)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b)))
}
