package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseNamesBadOption(t *testing.T) {
	tests := []struct {
		js      string
		wantKey string
	}{
		{`{"batch_size": 0}`, `"batch_size"`},
		{`{"workers": -1}`, `"workers"`},
		{`{"timeout_ms": -1}`, `"timeout_ms"`},
		{`{"no_such_option": 1}`, `"no_such_option"`},
		{`{"dataset": {"bogus": 1}}`, `"bogus"`},
		{`{"batch_size": "x"}`, `"batch_size"`},
		{`{"quantile": 1.5}`, `"quantile"`},
		{`{"rank": 2, "world_size": 2}`, `"rank"`},
		{`{"dataset": {"dtype": "complex64"}}`, `"dataset.dtype"`},
		{`{"dataset": {"shape": [0]}}`, `"dataset.shape"`},
		{`{"dataset": {"cost_kind": "gpu"}}`, `"dataset.cost_kind"`},
		{`{"max_workers": 1, "workers": 2}`, `"max_workers"`},
		{`{"max_inflight": 1, "batch_size": 4}`, `"max_inflight"`},
		{`{} {}`, `trailing`},
		{`[1]`, `config`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.js))
		if err == nil {
			t.Errorf("%s: no error", tt.js)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantKey) {
			t.Errorf("%s: error %q does not name %s", tt.js, err, tt.wantKey)
		}
	}
}

func TestDefaultsResolve(t *testing.T) {
	c, err := Parse([]byte(`{"workers": 6, "adaptive": false, "batch_size": 10}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxWorkers != 6 {
		t.Errorf("max_workers %d, want 6 (not adaptive)", c.MaxWorkers)
	}
	if c.SlowWorkers != 3 {
		t.Errorf("slow_workers %d, want workers/2 = 3", c.SlowWorkers)
	}
	if want := 10*(2+2) + 6 + 3; c.MaxInflight != want {
		t.Errorf("max_inflight %d, want %d", c.MaxInflight, want)
	}
	if _, err := Parse(nil); err != nil {
		t.Errorf("empty config: %v", err)
	}
}

func ExampleParse() {
	c, err := Parse([]byte(`{"batch_size": 32, "shuffle": true, "dataset": {"length": 1000, "shape": [3, 8]}}`))
	if err != nil {
		panic(err)
	}
	_, err = Parse([]byte(`{"batch_sise": 32}`))
	fmt.Println(c.BatchSize, c.Dataset.Shape)
	fmt.Println(err)
	// Output:
	// 32 [3 8]
	// config: unknown option "batch_sise"
}

// FuzzParse checks that no input panics and that every accepted config is
// valid.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"batch_size": 4, "dataset": {"length": 3, "shape": [2, 2]}}`))
	f.Add([]byte(`{"timeout_ms": 1e308, "quantile": 0.5}`))
	f.Add([]byte(`{"dataset": {"shape": [2147483647, 2]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if c.BatchSize < 1 || c.Workers < 1 || c.MaxInflight < c.BatchSize {
			t.Fatalf("accepted an invalid config: %+v", c)
		}
	})
}

// TestSizeBounds: every size that reaches an allocation has an upper bound
// and the error names its option (2^40 used to abort the process in the
// scheduler's allocations).
func TestSizeBounds(t *testing.T) {
	const huge = "1099511627776" // 2^40
	for _, tc := range []struct{ js, key string }{
		{`{"batch_size": ` + huge + `}`, "batch_size"},
		{`{"max_inflight": ` + huge + `}`, "max_inflight"},
		{`{"prefetch_batches": ` + huge + `}`, "prefetch_batches"},
		{`{"workers": ` + huge + `}`, "workers"},
		{`{"max_workers": ` + huge + `}`, "max_workers"},
		{`{"slow_workers": ` + huge + `}`, "slow_workers"},
		{`{"stop_timeout_ms": 0}`, "stop_timeout_ms"},
		{`{"dataset": {"length": ` + huge + `}}`, "dataset.length"},
		{`{"dataset": {"shape": [2147483648], "dtype": "float64"}}`, "dataset.shape"},
		{`{"dataset": {"shape": [1073741824], "dtype": "float64"}}`, "dataset.shape"},
		{`{"dataset": {"kind": "image_folder", "max_sample_bytes": -1}}`, "dataset.max_sample_bytes"},
	} {
		_, err := Parse([]byte(tc.js))
		if err == nil || !strings.Contains(err.Error(), `"`+tc.key+`"`) {
			t.Errorf("Parse(%s): got %v, want an error naming %q", tc.js, err, tc.key)
		}
	}
	// At the bounds, the derived max_inflight saturates instead of
	// overflowing, and still holds a batch.
	c, err := Parse([]byte(`{"batch_size": 4194304, "prefetch_batches": 65536}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxInflight != MaxInflightLimit {
		t.Fatalf("derived max_inflight = %d, want the limit %d", c.MaxInflight, MaxInflightLimit)
	}
}
