// Package config holds the validated, immutable options of a loader and
// parses them from the JSON object that crosses the C ABI.
//
// Every key is optional; unknown keys are an error that names the key, and
// every out-of-range value is an error that names its key.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
)

// Config is a loader's configuration. Build one with Default() or Parse(),
// then call Validate(); a validated Config is never modified.
type Config struct {
	// Batching and order.
	BatchSize int   `json:"batch_size"`
	DropLast  bool  `json:"drop_last"`
	Shuffle   bool  `json:"shuffle"`
	Seed      int64 `json:"seed"`
	InOrder   bool  `json:"in_order"`
	// DistributedSampler-style slicing: this process sees every
	// world_size-th sample starting at rank (after padding to a multiple).
	Rank      int `json:"rank"`
	WorldSize int `json:"world_size"`

	// Workers. Workers is the fast lane's starting width; SlowWorkers run
	// timed-out samples in the background.
	Workers     int  `json:"workers"`
	MaxWorkers  int  `json:"max_workers"`
	SlowWorkers int  `json:"slow_workers"`
	Adaptive    bool `json:"adaptive"`
	// Formula (1)-(2) of the MinatoLoader paper, §4.3.
	Alpha           float64 `json:"alpha"`
	Beta            float64 `json:"beta"`
	Theta           float64 `json:"theta"`
	ScaleIntervalMS int     `json:"scale_interval_ms"`

	// Slow-sample threshold. TimeoutMS > 0 fixes it; 0 learns it: the first
	// WarmupSamples run without a timeout, then the threshold is the
	// Quantile of a streaming estimate, FallbackQuantile while more than
	// SlowFractionLimit of recent samples go slow.
	TimeoutMS         float64 `json:"timeout_ms"`
	WarmupSamples     int     `json:"warmup_samples"`
	Quantile          float64 `json:"quantile"`
	FallbackQuantile  float64 `json:"fallback_quantile"`
	SlowFractionLimit float64 `json:"slow_fraction_limit"`
	// MinTimeoutMS floors a learned threshold (moving a sample between
	// lanes costs about a microsecond; below this it saves nothing).
	MinTimeoutMS float64 `json:"min_timeout_ms"`

	// Bounds. PrefetchBatches built batches wait for the consumer; at most
	// MaxInflight samples are dispatched and not yet placed in a batch
	// (0: batch_size * (prefetch_batches + 2) + workers + slow workers).
	PrefetchBatches int `json:"prefetch_batches"`
	MaxInflight     int `json:"max_inflight"`
	// A finished slow sample waits for at most SlowMaxAge batches before it
	// is taken ahead of fast samples (no starvation).
	SlowMaxAge int `json:"slow_max_age"`
	// PrefetchEpoch starts epoch e+1 once epoch e has dispatched its last
	// sample (its own max_inflight bound), so epoch boundaries do not
	// starve the consumer; StartEpoch(e+1) adopts it.
	PrefetchEpoch bool `json:"prefetch_epoch"`

	// StopTimeoutMS bounds how long stopping an epoch (close, a new epoch)
	// waits for a step that does not return (a read blocked in the kernel:
	// a stuck network file system); past it the step's goroutine is
	// abandoned and finishes on its own.
	StopTimeoutMS int `json:"stop_timeout_ms"`

	// Feed: the host supplies each epoch's order (ml_loader_feed) in whole
	// batches of any size, instead of the core's sampler (a Python sampler
	// or batch_sampler may be lazy or infinite). No epoch prefetch.
	Feed bool `json:"feed"`

	// OnError is "raise" (a failed sample ends its epoch with its error),
	// "batch" (torch's DataLoader: the batch holding a failed sample is
	// not delivered, its error comes in its place and the epoch goes on)
	// or "skip": the sample is left out and counted, until more than
	// MaxSkipped samples of one epoch failed (-1: no limit).
	OnError    string `json:"on_error"`
	MaxSkipped int64  `json:"max_skipped"`

	Dataset Dataset `json:"dataset"`
}

// Dataset selects and configures the native source. Kind "synthetic" is the
// speech-like stand-in of the MinatoLoader paper's workloads; the file
// datasets (DatasetKinds) read Root or List and run Transforms.
type Dataset struct {
	Kind   string  `json:"kind"`
	Length int64   `json:"length"`
	Shape  []int64 `json:"shape"`
	DType  string  `json:"dtype"`
	// Cost model of the synthetic source (microseconds).
	LightCostUS   float64 `json:"light_cost_us"`
	HeavyCostUS   float64 `json:"heavy_cost_us"`
	HeavyEvery    int64   `json:"heavy_every"`
	HeavyFraction float64 `json:"heavy_fraction"`
	CostKind      string  `json:"cost_kind"` // "busy" (CPU) or "sleep" (I/O-like)
	NumClasses    int64   `json:"num_classes"`
	// FailIndices makes those samples fail (for tests of error reporting).
	FailIndices []int64 `json:"fail_indices"`

	// File datasets.
	Root       string   `json:"root"`       // image_folder, audio_folder, npy_pairs
	List       string   `json:"list"`       // file_list: a .csv or .jsonl of (path, label)
	Extensions []string `json:"extensions"` // accepted suffixes; empty: the kind's defaults
	// Transforms is the chain, each element {"op": name, parameters...};
	// package datasets validates it and names the element at fault.
	Transforms []json.RawMessage `json:"transforms"`
	// MaxPixels bounds a decoded image (a decompression-bomb limit; 0: the
	// default, PIL's 89478485); MaxFileBytes bounds any file read (0: 1 GiB).
	MaxPixels    int64 `json:"max_pixels"`
	MaxFileBytes int64 `json:"max_file_bytes"`
	// MaxSampleBytes bounds what one transform makes of a sample when it
	// can grow it (a resampled waveform, a spectrogram, a spliced feature
	// matrix, a resized image, a padded volume crop), checked before the
	// output is allocated; the error names the file and the transform.
	// 0: the default, 256 MiB (as much as the largest decoded input the
	// default limits let through: 2^26 float32 audio samples, or
	// max_pixels RGB bytes).
	MaxSampleBytes int64 `json:"max_sample_bytes"`
	// RootBytes and ListBytes, when set, are root and list as the bytes
	// of the file name (base64 in JSON), and take their place: a name
	// that is not UTF-8 cannot travel losslessly as a JSON string.
	RootBytes []byte `json:"root_bytes"`
	ListBytes []byte `json:"list_bytes"`
	// Samples is file_list's in-memory form, in place of List:
	// [[path, label], ...], path a string or {"bytes": base64} for a name
	// that is not UTF-8; package datasets reads and checks it.
	Samples json.RawMessage `json:"samples"`
	// DecodeScale lets fused image chains decode JPEGs at a DCT-reduced
	// size that still covers the output: faster, and close to (no longer
	// equal to) torchvision's pixels. Random parameters are unchanged.
	DecodeScale bool `json:"decode_scale"`
	// Collate is "stack" (the default: every sample the same shape) or
	// "pad": sizes that the chain leaves variable are padded with zeros
	// to the largest sample of each batch.
	Collate string `json:"collate"`

	// Python worker processes (kind "python"): the main process's end of
	// each one's channel (the loader takes ownership) and its arena.
	Procs []Proc `json:"procs"`
	// CPUSlots bounds the samples computing at once (torch's num_workers);
	// the processes beyond it are spares that take new samples only while
	// a timed-out one's process waits instead of computing. 0: no bound.
	CPUSlots int `json:"cpu_slots"`
}

// Proc is one Python worker process (docs/worker-protocol.md).
type Proc struct {
	FD        int   `json:"fd"`
	PID       int   `json:"pid"`
	ArenaFD   int   `json:"arena_fd"`
	ArenaSize int64 `json:"arena_size"`
}

// Upper bounds of the sizes that reach an allocation. Go cannot recover
// from a failed allocation (the runtime aborts the process), so every size
// the core allocates from is bounded here, up front, and a value past its
// bound is an error naming the option (docs/failure-modes.md).
const (
	// MaxBatchSize bounds batch_size (samples in one batch).
	MaxBatchSize = 1 << 22
	// MaxInflightLimit bounds max_inflight, given or derived: the lanes'
	// queues are sized by it (8 bytes a slot, three queues).
	MaxInflightLimit = 1 << 22
	// MaxPrefetchBatches bounds prefetch_batches.
	MaxPrefetchBatches = 1 << 16
	// MaxWorkers bounds workers, max_workers and slow_workers (goroutines).
	MaxWorkers = 4096
	// MaxLength bounds a synthetic dataset's length (the sampler holds one
	// int64 per index).
	MaxLength = 1 << 31
	// MaxSyntheticSampleBytes bounds the bytes of one synthetic sample.
	MaxSyntheticSampleBytes = 1 << 31
)

// DatasetKinds are the values of dataset.kind.
var DatasetKinds = []string{"synthetic", "image_folder", "file_list", "audio_folder", "npy_pairs", "python"}

// Default returns the defaults: batch 1, sequential, learned threshold,
// adaptive fast lane starting at 4 workers up to the number of CPUs.
func Default() Config {
	return Config{
		BatchSize:         1,
		WorldSize:         1,
		Workers:           4,
		MaxWorkers:        0, // resolved to max(workers, NumCPU)
		SlowWorkers:       0, // resolved to max(1, workers/2)
		Adaptive:          true,
		Alpha:             2,
		Beta:              1,
		Theta:             0.7,
		ScaleIntervalMS:   250,
		WarmupSamples:     64,
		Quantile:          0.75,
		FallbackQuantile:  0.90,
		SlowFractionLimit: 0.35,
		MinTimeoutMS:      0.1,
		PrefetchBatches:   2,
		SlowMaxAge:        2,
		PrefetchEpoch:     true,
		StopTimeoutMS:     2000,
		OnError:           "raise",
		MaxSkipped:        -1,
		Dataset: Dataset{
			Kind:       "synthetic",
			Length:     1024,
			Shape:      []int64{16},
			DType:      "float32",
			CostKind:   "busy",
			NumClasses: 10,
		},
	}
}

// Parse reads a JSON object over Default(), rejects unknown keys (naming
// them) and validates the result.
func Parse(data []byte) (Config, error) {
	c := Default()
	if len(bytes.TrimSpace(data)) == 0 {
		return c, c.Validate()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, describe(err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("config: trailing data after the JSON object")
	}
	return c, c.Validate()
}

func describe(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "unknown field "); i >= 0 {
		return fmt.Errorf("config: unknown option %s", msg[i+len("unknown field "):])
	}
	var te *json.UnmarshalTypeError
	if ok := asType(err, &te); ok {
		return fmt.Errorf("config: option %q: expected %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return fmt.Errorf("config: %w", err)
}

func asType(err error, target **json.UnmarshalTypeError) bool {
	te, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*target = te
	}
	return ok
}

// Validate checks every value, resolves the zero-means-default ones, and
// returns an error naming the first bad option.
func (c *Config) Validate() error {
	bad := func(key string, format string, args ...any) error {
		return fmt.Errorf("config: option %q: %s", key, fmt.Sprintf(format, args...))
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		return bad("batch_size", "must be in [1, %d], got %d", MaxBatchSize, c.BatchSize)
	case c.WorldSize < 1:
		return bad("world_size", "must be >= 1, got %d", c.WorldSize)
	case c.Rank < 0 || c.Rank >= c.WorldSize:
		return bad("rank", "must be in [0, world_size=%d), got %d", c.WorldSize, c.Rank)
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return bad("workers", "must be in [1, %d], got %d", MaxWorkers, c.Workers)
	case c.MaxWorkers < 0 || c.MaxWorkers > MaxWorkers:
		return bad("max_workers", "must be in [0, %d], got %d", MaxWorkers, c.MaxWorkers)
	case c.MaxWorkers > 0 && c.MaxWorkers < c.Workers:
		return bad("max_workers", "must be >= workers=%d, got %d", c.Workers, c.MaxWorkers)
	case c.SlowWorkers < 0 || c.SlowWorkers > MaxWorkers:
		return bad("slow_workers", "must be in [0, %d], got %d", MaxWorkers, c.SlowWorkers)
	case c.ScaleIntervalMS < 1:
		return bad("scale_interval_ms", "must be >= 1, got %d", c.ScaleIntervalMS)
	case !finite(c.Alpha) || !finite(c.Beta):
		return bad("alpha", "alpha and beta must be finite")
	case !(c.Theta >= 0 && c.Theta <= 1):
		return bad("theta", "must be in [0, 1], got %v", c.Theta)
	case !(c.TimeoutMS >= 0) || math.IsInf(c.TimeoutMS, 0):
		return bad("timeout_ms", "must be >= 0 (0 learns the threshold), got %v", c.TimeoutMS)
	case !(c.MinTimeoutMS >= 0) || math.IsInf(c.MinTimeoutMS, 0):
		return bad("min_timeout_ms", "must be >= 0, got %v", c.MinTimeoutMS)
	case c.WarmupSamples < 1:
		return bad("warmup_samples", "must be >= 1, got %d", c.WarmupSamples)
	case !(c.Quantile > 0 && c.Quantile < 1):
		return bad("quantile", "must be in (0, 1), got %v", c.Quantile)
	case !(c.FallbackQuantile >= c.Quantile && c.FallbackQuantile < 1):
		return bad("fallback_quantile", "must be in [quantile, 1), got %v", c.FallbackQuantile)
	case !(c.SlowFractionLimit > 0 && c.SlowFractionLimit <= 1):
		return bad("slow_fraction_limit", "must be in (0, 1], got %v", c.SlowFractionLimit)
	case c.PrefetchBatches < 1 || c.PrefetchBatches > MaxPrefetchBatches:
		return bad("prefetch_batches", "must be in [1, %d], got %d", MaxPrefetchBatches, c.PrefetchBatches)
	case c.MaxInflight < 0 || c.MaxInflight > MaxInflightLimit:
		return bad("max_inflight", "must be in [0, %d] (0: derived), got %d", MaxInflightLimit, c.MaxInflight)
	case c.StopTimeoutMS < 1 || c.StopTimeoutMS > 3_600_000:
		return bad("stop_timeout_ms", "must be in [1, 3600000], got %d", c.StopTimeoutMS)
	case c.SlowMaxAge < 0:
		return bad("slow_max_age", "must be >= 0, got %d", c.SlowMaxAge)
	case c.OnError != "raise" && c.OnError != "skip" && c.OnError != "batch":
		return bad("on_error", "must be \"raise\", \"batch\" or \"skip\", got %q", c.OnError)
	case c.MaxSkipped < -1:
		return bad("max_skipped", "must be >= 0, or -1 for no limit, got %d", c.MaxSkipped)
	case c.Dataset.Kind == "python" && !c.Feed:
		return bad("feed", "a python dataset needs feed=true (the host's sampler orders it)")
	}
	if c.Feed {
		c.PrefetchEpoch = false
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = max(c.Workers, runtime.NumCPU())
	}
	if !c.Adaptive {
		c.MaxWorkers = c.Workers
	}
	if c.SlowWorkers == 0 {
		c.SlowWorkers = max(1, c.Workers/2)
	}
	if c.MaxInflight == 0 {
		// Every term is bounded above, so this cannot overflow an int64;
		// capped at the limit, and the check below names batch_size when
		// even that cannot hold one batch.
		d := int64(c.BatchSize)*int64(c.PrefetchBatches+2) + int64(c.MaxWorkers) + int64(c.SlowWorkers)
		c.MaxInflight = int(min(d, MaxInflightLimit))
	}
	if c.MaxInflight < c.BatchSize {
		return bad("max_inflight", "must be >= batch_size=%d, got %d", c.BatchSize, c.MaxInflight)
	}
	return c.Dataset.validate()
}

func (d *Dataset) validate() error {
	bad := func(key string, format string, args ...any) error {
		return fmt.Errorf("config: option \"dataset.%s\": %s", key, fmt.Sprintf(format, args...))
	}
	if !slices.Contains(DatasetKinds, d.Kind) {
		return bad("kind", "unknown dataset kind %q (known: %s)", d.Kind, strings.Join(DatasetKinds, ", "))
	}
	if d.MaxPixels < 0 {
		return bad("max_pixels", "must be >= 0, got %d", d.MaxPixels)
	}
	if d.MaxFileBytes < 0 {
		return bad("max_file_bytes", "must be >= 0, got %d", d.MaxFileBytes)
	}
	if d.MaxSampleBytes < 0 {
		return bad("max_sample_bytes", "must be >= 0, got %d", d.MaxSampleBytes)
	}
	if bytes.IndexByte(d.RootBytes, 0) >= 0 {
		return bad("root_bytes", "a file name cannot hold a NUL byte")
	}
	if bytes.IndexByte(d.ListBytes, 0) >= 0 {
		return bad("list_bytes", "a file name cannot hold a NUL byte")
	}
	if d.Collate != "" && d.Collate != "stack" && d.Collate != "pad" {
		return bad("collate", "must be \"stack\" or \"pad\", got %q", d.Collate)
	}
	if d.Kind == "python" {
		if len(d.Procs) == 0 {
			return bad("procs", "a python dataset needs at least one worker process")
		}
		if d.CPUSlots < 0 {
			return bad("cpu_slots", "must be >= 0, got %d", d.CPUSlots)
		}
		for i, p := range d.Procs {
			if p.FD < 0 || p.ArenaFD < 0 || p.ArenaSize < 4096 || p.PID <= 0 {
				return bad("procs", "worker %d: fd, arena_fd >= 0, pid > 0 and arena_size >= 4096 needed, got %+v", i, p)
			}
		}
		return nil
	}
	if d.Kind != "synthetic" {
		return nil // package datasets checks the rest, with the files at hand
	}
	if d.Length < 0 || d.Length > MaxLength {
		return bad("length", "must be in [0, %d], got %d", int64(MaxLength), d.Length)
	}
	if len(d.Shape) > 7 {
		return bad("shape", "at most 7 dimensions, got %d", len(d.Shape))
	}
	elems := int64(1)
	for i, s := range d.Shape {
		if s < 1 {
			return bad("shape", "dimension %d must be >= 1, got %d", i, s)
		}
		elems *= s
		if elems > 1<<31 {
			return bad("shape", "a sample of more than 2^31 elements (more than %d bytes)", int64(MaxSyntheticSampleBytes))
		}
	}
	dt, ok := DTypes[d.DType]
	if !ok {
		return bad("dtype", "unknown dtype %q (known: %s)", d.DType, dtypeNames())
	}
	if elems*int64(dt.Size()) > MaxSyntheticSampleBytes {
		return bad("shape", "a sample of %d %s elements is %d bytes, more than the limit of %d",
			elems, d.DType, elems*int64(dt.Size()), int64(MaxSyntheticSampleBytes))
	}
	switch {
	case !(d.LightCostUS >= 0) || math.IsInf(d.LightCostUS, 0):
		return bad("light_cost_us", "must be >= 0, got %v", d.LightCostUS)
	case !(d.HeavyCostUS >= 0) || math.IsInf(d.HeavyCostUS, 0):
		return bad("heavy_cost_us", "must be >= 0, got %v", d.HeavyCostUS)
	case d.HeavyEvery < 0:
		return bad("heavy_every", "must be >= 0 (0: none), got %d", d.HeavyEvery)
	case !(d.HeavyFraction >= 0 && d.HeavyFraction <= 1):
		return bad("heavy_fraction", "must be in [0, 1], got %v", d.HeavyFraction)
	case d.CostKind != "busy" && d.CostKind != "sleep":
		return bad("cost_kind", "must be \"busy\" or \"sleep\", got %q", d.CostKind)
	case d.NumClasses < 1:
		return bad("num_classes", "must be >= 1, got %d", d.NumClasses)
	}
	return nil
}

// DType describes an element type as DLPack does.
type DType struct {
	Code uint8 // DLPack kDLInt=0, kDLUInt=1, kDLFloat=2, kDLBfloat=4, kDLBool=6
	Bits uint8
}

// Size is the element size in bytes.
func (t DType) Size() int { return int(t.Bits) / 8 }

// DTypes maps dtype names (numpy/torch spelling) to DLPack codes.
var DTypes = map[string]DType{
	"uint8":   {1, 8},
	"int8":    {0, 8},
	"int16":   {0, 16},
	"int32":   {0, 32},
	"int64":   {0, 64},
	"float16": {2, 16},
	"float32": {2, 32},
	"float64": {2, 64},
}

// DTypeName is the numpy spelling of t ("dlpack(code,bits)" if unknown).
func DTypeName(t DType) string {
	for name, d := range DTypes {
		if d == t {
			return name
		}
	}
	return fmt.Sprintf("dlpack(%d,%d)", t.Code, t.Bits)
}

func dtypeNames() string {
	return "uint8, int8, int16, int32, int64, float16, float32, float64"
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
