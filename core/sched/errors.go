package sched

import (
	"errors"
	"fmt"
	"strings"
)

// ErrClosed is returned by calls on a closed Loader.
var ErrClosed = errors.New("loader closed")

// ErrNoEpoch is returned by Next before any StartEpoch.
var ErrNoEpoch = errors.New("no epoch started: call StartEpoch first")

// SampleError reports a sample whose load or transform failed. The epoch
// it belonged to is over. Err is the step's error: callers that branch on
// its cause use errors.As (a *remote.PythonError for an exception in a
// Python worker, a *remote.WorkerDiedError for a dead worker), never the
// message text.
type SampleError struct {
	Index int64  // dataset index of the sample
	Path  string // the sample's file(s) when the source has files (pipeline.Pather), else ""
	Step  string // name of the failing step ("load" for the source, "batch" for the batching checks)
	Err   error
}

func (e *SampleError) Error() string {
	msg := e.Err.Error()
	if e.Path != "" && !strings.Contains(msg, e.Path) {
		return fmt.Sprintf("sample %d (%s): step %q: %s", e.Index, e.Path, e.Step, msg)
	}
	return fmt.Sprintf("sample %d: step %q: %s", e.Index, e.Step, msg)
}

func (e *SampleError) Unwrap() error { return e.Err }

// BudgetError ends an epoch whose failed samples exceeded the skip policy's
// budget (on_error=skip, max_skipped=Budget); Err is the sample error that
// went over it, reachable with errors.As (a *SampleError).
type BudgetError struct {
	Budget int64
	Err    error
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("more than %d samples of this epoch failed (on_error=skip, max_skipped=%d); the last one: %v", e.Budget, e.Budget, e.Err)
}

func (e *BudgetError) Unwrap() error { return e.Err }

// MaxSkipped is the epoch's skip budget, the max_skipped option as a count.
func (e *BudgetError) MaxSkipped() int64 { return e.Budget }

// Skipped is the number of samples the epoch had skipped when Err went over
// the budget: the budget is spent only once all of it is used, so it equals
// MaxSkipped.
func (e *BudgetError) Skipped() int64 { return e.Budget }
