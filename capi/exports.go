package main

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/datasets"
	"github.com/minatoloader/minatoloader/core/sched"
)

// The internal exports behind the public ml_* functions of shim.c. Each one
// starts with the panic barrier and reports failures with fail, which
// stores the message for ml_last_error on the calling thread. Out-pointers
// are checked here, never dereferenced when NULL.

// loaderObj is what a loader handle names.
type loaderObj struct {
	l *sched.Loader
}

// batchObj is what a batch handle names.
type batchObj struct {
	b *batch.Batch
}

// loaderOf resolves a loader handle for fn.
func loaderOf(fn string, h C.ml_loader_t) (*sched.Loader, C.int) {
	obj, res := handles.get(uint64(h), kindLoader)
	switch res {
	case found:
		return obj.(*loaderObj).l, statusOK
	case gone:
		return nil, fail(statusClosed, fn, "loader %d was closed", uint64(h))
	}
	return nil, fail(statusInvalidHandle, fn, "loader: %s", describeHandle(uint64(h), kindLoader))
}

// batchOf resolves a batch handle for fn.
func batchOf(fn string, h C.ml_batch_t) (*batchObj, C.int) {
	obj, res := handles.get(uint64(h), kindBatch)
	switch res {
	case found:
		return obj.(*batchObj), statusOK
	case gone:
		return nil, fail(statusInvalidHandle, fn, "batch: handle %d was released", uint64(h))
	}
	return nil, fail(statusInvalidHandle, fn, "batch: %s", describeHandle(uint64(h), kindBatch))
}

// describeHandle says why h is not a valid handle of kind want.
func describeHandle(h uint64, want kind) string {
	switch {
	case h == 0:
		return "handle 0 is never valid"
	case kindOf(h) == kindLoader || kindOf(h) == kindBatch:
		if kindOf(h) != want {
			return "handle " + strconv.FormatUint(h, 10) + " is a " + kindOf(h).String() + " handle, not a " + want.String() + " handle"
		}
	}
	return "handle " + strconv.FormatUint(h, 10) + " was never issued"
}

// copyOut copies s into the caller's buffer buf[0:n) with the truncation
// rules of ml_last_error and stores len(s) in *needed.
func copyOut(s []byte, buf *C.char, n C.size_t, needed *C.size_t) {
	if needed != nil {
		*needed = C.size_t(len(s))
	}
	if buf == nil || n == 0 {
		return
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	c := copy(dst[:len(dst)-1], s)
	dst[c] = 0
}

//export mlgo_loader_create
func mlgo_loader_create(cfgJSON *C.char, out *C.ml_loader_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_loader_create"
	if out == nil {
		return fail(statusInvalidArg, fn, "out is NULL")
	}
	*out = 0
	if cfgJSON == nil {
		return fail(statusInvalidArg, fn, "config_json is NULL (pass \"{}\" for the defaults)")
	}
	raw := []byte(C.GoString(cfgJSON))
	cfg, err := config.Parse(raw)
	if err != nil {
		// The worker channels in the config are the loader's from this call
		// on, whether it succeeds or not.
		var procs struct {
			Dataset struct {
				Procs []config.Proc `json:"procs"`
			} `json:"dataset"`
		}
		if json.Unmarshal(raw, &procs) == nil {
			for _, p := range procs.Dataset.Procs {
				if p.FD >= 0 {
					syscall.Close(p.FD)
				}
			}
		}
		return fail(statusInvalidArg, fn, "config_json: %v", err)
	}
	l, err := sched.Open(cfg, cAllocator{})
	if err != nil {
		rc := statusOf(err)
		if rc == statusInternal {
			rc = statusInvalidArg
		}
		return fail(rc, fn, "%v", err)
	}
	if l == nil {
		return fail(statusInternal, fn, "sched.Open returned no loader and no error")
	}
	*out = C.ml_loader_t(handles.add(kindLoader, &loaderObj{l: l}))
	return statusOK
}

//export mlgo_loader_len
func mlgo_loader_len(h C.ml_loader_t, batches, samples *C.int64_t) (rc C.int) {
	defer guard(&rc)
	l, rc := loaderOf("ml_loader_len", h)
	if rc != statusOK {
		return rc
	}
	nb, ns := l.Len()
	if batches != nil {
		*batches = C.int64_t(nb)
	}
	if samples != nil {
		*samples = C.int64_t(ns)
	}
	return statusOK
}

//export mlgo_loader_progress
func mlgo_loader_progress(h C.ml_loader_t, delivered, skipped *C.int64_t) (rc C.int) {
	defer guard(&rc)
	l, rc := loaderOf("ml_loader_progress", h)
	if rc != statusOK {
		return rc
	}
	d, s := l.Progress()
	if delivered != nil {
		*delivered = C.int64_t(d)
	}
	if skipped != nil {
		*skipped = C.int64_t(s)
	}
	return statusOK
}

//export mlgo_loader_feed
func mlgo_loader_feed(h C.ml_loader_t, indices *C.int64_t, n C.int64_t, sizes *C.int64_t, nbatches C.int64_t, last C.int32_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_loader_feed"
	l, rc := loaderOf(fn, h)
	if rc != statusOK {
		return rc
	}
	switch {
	case n < 0 || nbatches < 0:
		return fail(statusInvalidArg, fn, "n=%d and nbatches=%d must be >= 0", int64(n), int64(nbatches))
	case (n > 0 && indices == nil) || (nbatches > 0 && sizes == nil):
		return fail(statusInvalidArg, fn, "indices or sizes is NULL")
	case n > 1<<40 || nbatches > 1<<40:
		return fail(statusInvalidArg, fn, "n=%d or nbatches=%d is too large", int64(n), int64(nbatches))
	}
	var idx []int64
	if n > 0 {
		idx = make([]int64, int(n))
		copy(idx, unsafe.Slice((*int64)(unsafe.Pointer(indices)), int(n)))
	}
	var sz []int
	if nbatches > 0 {
		raw := unsafe.Slice((*int64)(unsafe.Pointer(sizes)), int(nbatches))
		sz = make([]int, len(raw))
		for k, v := range raw {
			if v < 1 || v > 1<<31 {
				return fail(statusInvalidArg, fn, "sizes[%d]=%d must be in [1, 2^31]", k, v)
			}
			sz[k] = int(v)
		}
	}
	if err := l.Feed(idx, sz, last != 0); err != nil {
		rc := statusOf(err)
		if rc == statusInternal {
			rc = statusInvalidArg
		}
		return fail(rc, fn, "%v", err)
	}
	return statusOK
}

//export mlgo_loader_start_epoch
func mlgo_loader_start_epoch(h C.ml_loader_t, epoch C.int64_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_loader_start_epoch"
	l, rc := loaderOf(fn, h)
	if rc != statusOK {
		return rc
	}
	if epoch < 0 {
		return fail(statusInvalidArg, fn, "epoch must be >= 0, got %d", int64(epoch))
	}
	if err := l.StartEpoch(int64(epoch)); err != nil {
		rc := statusOf(err)
		if rc == statusInternal {
			rc = statusInvalidArg
		}
		return fail(rc, fn, "epoch %d: %v", int64(epoch), err)
	}
	return statusOK
}

// maxTimeoutMS is the largest timeout_ms that fits a time.Duration; larger
// ones wait without limit.
const maxTimeoutMS = math.MaxInt64 / int64(time.Millisecond)

//export mlgo_loader_next
func mlgo_loader_next(h C.ml_loader_t, timeoutMS C.int64_t, out *C.ml_batch_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_loader_next"
	if out == nil {
		return fail(statusInvalidArg, fn, "out is NULL")
	}
	*out = 0
	l, rc := loaderOf(fn, h)
	if rc != statusOK {
		return rc
	}
	// The table lock is not held here: a concurrent ml_loader_close removes
	// the handle and closes the loader, which ends this wait.
	ctx := context.Background()
	if t := int64(timeoutMS); t >= 0 && t <= maxTimeoutMS {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Millisecond)
		defer cancel()
	}
	b, err := l.Next(ctx)
	if err != nil {
		switch rc := statusOf(err); rc {
		case statusEndOfEpoch:
			return rc
		case statusTimeout:
			return fail(rc, fn, "no batch within timeout_ms=%d", int64(timeoutMS))
		default:
			return fail(rc, fn, "%v", err)
		}
	}
	if b == nil {
		return fail(statusInternal, fn, "the scheduler returned no batch and no error")
	}
	*out = C.ml_batch_t(handles.add(kindBatch, &batchObj{b: b}))
	return statusOK
}

//export mlgo_loader_stats
func mlgo_loader_stats(h C.ml_loader_t, buf *C.char, n C.size_t, needed *C.size_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_loader_stats"
	l, rc := loaderOf(fn, h)
	if rc != statusOK {
		return rc
	}
	js, err := json.Marshal(l.Stats())
	if err != nil {
		return fail(statusInternal, fn, "encoding stats: %v", err)
	}
	copyOut(js, buf, n, needed)
	return statusOK
}

//export mlgo_dataset_info
func mlgo_dataset_info(cfgJSON *C.char, buf *C.char, n C.size_t, needed *C.size_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_dataset_info"
	if cfgJSON == nil {
		return fail(statusInvalidArg, fn, "dataset_json is NULL")
	}
	// The dataset object is read over the defaults, as in a loader config.
	wrapped := append(append([]byte(`{"dataset": `), C.GoString(cfgJSON)...), '}')
	cfg, err := config.Parse(wrapped)
	if err != nil {
		return fail(statusInvalidArg, fn, "dataset_json: %v", err)
	}
	src, err := datasets.Open(cfg.Dataset)
	if err != nil {
		return fail(statusInvalidArg, fn, "%v", err)
	}
	js, err := json.Marshal(datasets.Describe(src))
	if err != nil {
		return fail(statusInternal, fn, "encoding: %v", err)
	}
	copyOut(js, buf, n, needed)
	return statusOK
}

//export mlgo_loader_close
func mlgo_loader_close(h C.ml_loader_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_loader_close"
	if h == 0 {
		return statusOK
	}
	if kindOf(uint64(h)) != kindLoader {
		return fail(statusInvalidHandle, fn, "loader: %s", describeHandle(uint64(h), kindLoader))
	}
	obj, res := handles.remove(uint64(h), kindLoader)
	if res != found {
		return statusOK // already closed, or never issued: nothing to do
	}
	// Outside the table lock: Close waits for the loader's goroutines and
	// wakes a concurrent ml_loader_next, which then returns ML_ERR_CLOSED.
	if err := obj.(*loaderObj).l.Close(); err != nil {
		return fail(statusInternal, fn, "loader %d: %v", uint64(h), err)
	}
	return statusOK
}

//export mlgo_batch_info
func mlgo_batch_info(h C.ml_batch_t, out *C.ml_batch_info_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_batch_info"
	if out == nil {
		return fail(statusInvalidArg, fn, "out is NULL")
	}
	bo, rc := batchOf(fn, h)
	if rc != statusOK {
		return rc
	}
	b := bo.b
	*out = C.ml_batch_info_t{}
	out.epoch = C.int64_t(b.Epoch)
	out.seq = C.int64_t(b.Seq)
	out.num_samples = C.int64_t(b.N)
	out.num_slow = C.int64_t(b.NumSlow)
	out.num_fields = C.int32_t(len(b.Fields))
	out.device = C.DLDevice{device_type: C.kDLCPU, device_id: 0}
	if b.N > 0 {
		out.indices = (*C.int64_t)(unsafe.Pointer(unsafe.SliceData(b.Indices)))
	}
	return statusOK
}

// indicesName is the name ml_batch_field reports for ML_FIELD_INDICES.
const indicesName = "indices"

// fieldView is one exportable region of a batch.
type fieldView struct {
	name  string
	dtype config.DType
	shape []int64
	data  []byte
}

// viewOf returns field f of b (0..len(Fields)-1, or ML_FIELD_INDICES).
func viewOf(b *batch.Batch, f int) (fieldView, bool) {
	if f == C.ML_FIELD_INDICES {
		return fieldView{
			name:  indicesName,
			dtype: config.DType{Code: 0, Bits: 64},
			shape: []int64{int64(b.N)},
			data:  unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b.Indices))), 8*len(b.Indices)),
		}, true
	}
	if f < 0 || f >= len(b.Fields) {
		return fieldView{}, false
	}
	fl := &b.Fields[f]
	return fieldView{name: fl.Name, dtype: fl.DType, shape: fl.Shape, data: fl.Data}, true
}

func noSuchField(fn string, b *batch.Batch, f int) C.int {
	return fail(statusInvalidArg, fn, "field %d: the batch has fields 0..%d and ML_FIELD_INDICES (%d)",
		f, len(b.Fields)-1, int(C.ML_FIELD_INDICES))
}

// names interns field names as C strings that live as long as the library
// (the set of names is as small as the set of datasets' field names).
var names = struct {
	sync.Mutex
	m map[string]*C.char
}{m: map[string]*C.char{}}

func cName(s string) *C.char {
	names.Lock()
	defer names.Unlock()
	p, ok := names.m[s]
	if !ok {
		p = C.CString(s)
		names.m[s] = p
	}
	return p
}

//export mlgo_batch_field
func mlgo_batch_field(h C.ml_batch_t, field C.int32_t, out *C.ml_field_info_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_batch_field"
	if out == nil {
		return fail(statusInvalidArg, fn, "out is NULL")
	}
	bo, rc := batchOf(fn, h)
	if rc != statusOK {
		return rc
	}
	v, ok := viewOf(bo.b, int(field))
	if !ok {
		return noSuchField(fn, bo.b, int(field))
	}
	if len(v.shape) > C.ML_MAX_NDIM {
		return fail(statusInternal, fn, "field %q has %d dimensions, more than ML_MAX_NDIM", v.name, len(v.shape))
	}
	*out = C.ml_field_info_t{}
	out.name = cName(v.name)
	out.ndim = C.int32_t(len(v.shape))
	for i, s := range v.shape {
		out.shape[i] = C.int64_t(s)
	}
	out.dtype = C.DLDataType{code: C.uint8_t(v.dtype.Code), bits: C.uint8_t(v.dtype.Bits), lanes: 1}
	out.device = C.DLDevice{device_type: C.kDLCPU, device_id: 0}
	if len(v.data) > 0 {
		out.data = unsafe.Pointer(unsafe.SliceData(v.data))
	}
	out.bytes = C.uint64_t(len(v.data))
	return statusOK
}

//export mlgo_batch_export
func mlgo_batch_export(h C.ml_batch_t, field, versioned C.int, stream C.int64_t, out *unsafe.Pointer) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_batch_export"
	if out == nil {
		return fail(statusInvalidArg, fn, "out is NULL")
	}
	*out = nil
	if stream != -1 && stream != 0 {
		return fail(statusInvalidArg, fn, "stream must be -1 or 0 for a CPU batch, got %d", int64(stream))
	}
	// Take the tensor's reference on the block while the handle is held in
	// the table, so that a concurrent ml_batch_release cannot free the block
	// first.
	var blk *cBlock
	obj, res := handles.with(uint64(h), kindBatch, func(obj any) {
		b := obj.(*batchObj).b
		if _, ok := viewOf(b, int(field)); !ok {
			return
		}
		if cb, ok := b.Block.(*cBlock); ok && !cb.released.Load() {
			C.mlc_block_ref(cb.hdr)
			blk = cb
		}
	})
	if res != found {
		_, rc := batchOf(fn, h)
		return rc
	}
	b := obj.(*batchObj).b
	v, ok := viewOf(b, int(field))
	if !ok {
		return noSuchField(fn, b, int(field))
	}
	if blk == nil {
		return fail(statusInternal, fn, "batch %d: its memory is not a live C block", uint64(h))
	}
	if len(v.shape) > C.ML_MAX_NDIM {
		C.mlc_block_unref(blk.hdr)
		return fail(statusInternal, fn, "field %q has %d dimensions, more than ML_MAX_NDIM", v.name, len(v.shape))
	}
	var shape [C.ML_MAX_NDIM]C.int64_t
	for i, s := range v.shape {
		shape[i] = C.int64_t(s)
	}
	data := unsafe.Pointer(unsafe.SliceData(v.data))
	if len(v.data) == 0 {
		data = unsafe.Pointer(unsafe.SliceData(blk.mem))
	}
	vers := C.int(0)
	if versioned != 0 {
		vers = 1
	}
	t := C.mlc_export(blk.hdr, data, vers, C.int32_t(len(v.shape)), &shape[0], C.uint8_t(v.dtype.Code), C.uint8_t(v.dtype.Bits))
	if t == nil {
		C.mlc_block_unref(blk.hdr)
		return fail(statusNoMemory, fn, "allocating the DLPack tensor")
	}
	*out = t
	return statusOK
}

//export mlgo_batch_release
func mlgo_batch_release(h C.ml_batch_t) (rc C.int) {
	defer guard(&rc)
	const fn = "ml_batch_release"
	if h == 0 {
		return statusOK
	}
	if kindOf(uint64(h)) != kindBatch {
		return fail(statusInvalidHandle, fn, "batch: %s", describeHandle(uint64(h), kindBatch))
	}
	obj, res := handles.remove(uint64(h), kindBatch)
	if res != found {
		return statusOK // already released, or never issued
	}
	obj.(*batchObj).b.Release()
	return statusOK
}

//export mlgo_counters
func mlgo_counters(out *C.ml_counters_t) (rc C.int) {
	defer guard(&rc)
	if out == nil {
		return fail(statusInvalidArg, "ml_counters", "out is NULL")
	}
	var lb, lbytes, tb C.int64_t
	C.mlc_counters(&lb, &lbytes, &tb)
	*out = C.ml_counters_t{
		live_loaders:      C.int64_t(handles.liveCount(kindLoader)),
		live_batches:      C.int64_t(handles.liveCount(kindBatch)),
		live_buffers:      lb,
		live_buffer_bytes: lbytes,
		live_goroutines:   C.int64_t(sched.LiveGoroutines()),
		total_buffers:     tb,
	}
	return statusOK
}
