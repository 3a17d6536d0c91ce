package remote

// The errors a pool reports: a user exception in a worker, a dead worker.

import (
	"errors"
	"fmt"
	"strings"
)

// ErrClosed is returned by Load once the pool is closed.
var ErrClosed = errors.New("remote: pool closed")

// PythonError is an exception raised by user code in a worker process:
// in __getitem__ (a sample's error), or in worker_init_fn or the worker's
// setup (Init; the pool is then broken). Module and Qualname name the
// exception's type (the worker sends "module:qualname", Module is "" when
// the text has no colon); Traceback is the worker's
// traceback.format_exc(). Callers re-raise the user's exception from these
// fields, never from the message text.
type PythonError struct {
	Worker, PID int
	Module      string
	Qualname    string
	Traceback   string
	Init        bool // raised by worker_init_fn or setup, before the worker's HELLO
}

// newPythonError is the error of worker w for its error text
// "module:qualname\n<traceback>" (docs/worker-protocol.md, "Errors").
func newPythonError(w *worker, text string, init bool) *PythonError {
	typ, tb := splitError(text)
	module, qualname, ok := strings.Cut(typ, ":")
	if !ok {
		module, qualname = "", typ
	}
	return &PythonError{Worker: w.id, PID: w.pid, Module: module, Qualname: qualname, Traceback: tb, Init: init}
}

// Type is "module:qualname" as the worker sent it.
func (e *PythonError) Type() string {
	if e.Module == "" {
		return e.Qualname
	}
	return e.Module + ":" + e.Qualname
}

func (e *PythonError) Error() string {
	msg := fmt.Sprintf("python exception %s in worker %d (pid %d)\n%s", e.Type(), e.Worker, e.PID, e.Traceback)
	if e.Init {
		return fmt.Sprintf("worker_init_fn or setup failed in DataLoader worker process %d (pid %d): %s", e.Worker, e.PID, msg)
	}
	return msg
}

// WorkerDiedError reports a worker whose channel reached EOF (or failed)
// while the pool was open: the process exited or was killed. Worker is its
// index in the pool, PID its process id.
type WorkerDiedError struct{ Worker, PID int }

func (e *WorkerDiedError) Error() string {
	return fmt.Sprintf("DataLoader worker %d (pid %d) exited unexpectedly", e.Worker, e.PID)
}
