package sched

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by calls on a closed Loader.
var ErrClosed = errors.New("loader closed")

// ErrNoEpoch is returned by Next before any StartEpoch.
var ErrNoEpoch = errors.New("no epoch started: call StartEpoch first")

// SampleError reports a sample whose load or transform failed. The epoch
// it belonged to is over.
type SampleError struct {
	Index int64  // dataset index of the sample
	Step  string // name of the failing step ("load" for the source)
	Err   error
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("sample %d: step %q: %v", e.Index, e.Step, e.Err)
}

func (e *SampleError) Unwrap() error { return e.Err }

// BudgetError ends an epoch whose failed samples exceeded the skip policy's
// budget; Err is the sample error that went over it.
type BudgetError struct {
	Budget int64
	Err    error
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("more than %d samples of this epoch failed (on_error=skip, max_skipped=%d); the last one: %v", e.Budget, e.Budget, e.Err)
}

func (e *BudgetError) Unwrap() error { return e.Err }
