package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/minatoloader/minatoloader/core/remote"
	"github.com/minatoloader/minatoloader/core/sched"
)

// TestDetailOf checks the detail of each kind of error as the scheduler
// returns it (wrapped by fail's "%v" only in the message), through JSON as
// ml_last_error_detail hands it out.
func TestDetailOf(t *testing.T) {
	py := &remote.PythonError{Worker: 1, PID: 4242, Module: "builtins", Qualname: "ValueError", Traceback: "Traceback...\nValueError: x\n"}
	initErr := &remote.PythonError{Worker: 0, PID: 7, Module: "m", Qualname: "E", Traceback: "tb", Init: true}
	died := &remote.WorkerDiedError{Worker: 2, PID: 99}
	sample := func(err error) *sched.SampleError {
		return &sched.SampleError{Index: 13, Step: "load", Err: err}
	}
	null := any(nil)
	base := func(status int, kind string) map[string]any {
		return map[string]any{"status": float64(status), "kind": kind, "message": "msg",
			"index": null, "path": null, "step": null, "python": null, "worker": null, "pid": null,
			"init": false, "skipped": null, "max_skipped": null}
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	pyJSON := map[string]any{"module": "builtins", "qualname": "ValueError", "traceback": "Traceback...\nValueError: x\n"}
	tests := []struct {
		name string
		rc   int
		err  error
		want map[string]any
	}{
		{"argument", int(statusInvalidArg), nil, base(-1, "invalid_argument")},
		{"closed", int(statusClosed), sched.ErrClosed, base(-4, "closed")},
		{"state", int(statusState), sched.ErrNoEpoch, base(-8, "state")},
		{"internal", int(statusInternal), errors.New("x"), base(-7, "internal")},
		{"file sample", int(statusSample),
			&sched.SampleError{Index: 3, Path: "/d/a.jpg", Step: "decode", Err: errors.New("corrupt")},
			with(base(-3, "sample"), "index", 3.0, "path", "/d/a.jpg", "step", "decode")},
		{"python", int(statusSample), sample(py),
			with(base(-3, "python_exception"), "index", 13.0, "step", "load", "python", pyJSON, "worker", 1.0, "pid", 4242.0)},
		{"init", int(statusSample), sample(initErr),
			with(base(-3, "python_exception"), "index", 13.0, "step", "load",
				"python", map[string]any{"module": "m", "qualname": "E", "traceback": "tb"},
				"worker", 0.0, "pid", 7.0, "init", true)},
		{"died", int(statusSample), sample(died),
			with(base(-3, "worker_died"), "index", 13.0, "step", "load", "worker", 2.0, "pid", 99.0)},
		{"budget", int(statusSample), &sched.BudgetError{Budget: 3, Err: sample(errors.New("bad"))},
			with(base(-3, "skip_budget"), "index", 13.0, "step", "load", "skipped", 3.0, "max_skipped", 3.0)},
		{"budget python", int(statusSample), fmt.Errorf("wrapped: %w", &sched.BudgetError{Budget: 0, Err: sample(py)}),
			with(base(-3, "python_exception"), "index", 13.0, "step", "load", "python", pyJSON,
				"worker", 1.0, "pid", 4242.0, "skipped", 0.0, "max_skipped", 0.0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(detailOf(tc.rc, "msg", tc.err))
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %s\nwant %v", b, tc.want)
			}
		})
	}
}

// BenchmarkDetail is the cost every failing call pays for its detail
// (ML_TIMEOUT polls included): the typed lookups and the JSON encoding.
func BenchmarkDetail(b *testing.B) {
	err := &sched.SampleError{Index: 13, Step: "load", Err: &remote.PythonError{Worker: 1, PID: 4242,
		Module: "builtins", Qualname: "ValueError", Traceback: "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: x\n"}}
	for _, bc := range []struct {
		name string
		rc   int
		err  error
	}{{"timeout", int(statusTimeout), nil}, {"python", int(statusSample), err}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, e := json.Marshal(detailOf(bc.rc, "ml_loader_next: no batch within timeout_ms=100", bc.err)); e != nil {
					b.Fatal(e)
				}
			}
		})
	}
}
