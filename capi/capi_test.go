package main

import (
	"bytes"
	"sync"
	"testing"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/sched"
)

// Test files cannot use cgo, so the exports are called through these
// generic adapters, which infer the C types from the function itself.

func call1[H ~uint64, R ~int32](f func(H) R, h uint64) int { return int(f(H(h))) }

func callOut[H ~uint64, O any, R ~int32](f func(H, *O) R, h uint64) int {
	var o O
	return int(f(H(h), &o))
}

func callCreate[Ch ~int8, H ~uint64, R ~int32](f func(*Ch, *H) R, cfg string) (int, uint64) {
	b := append([]byte(cfg), 0)
	var h H
	rc := f((*Ch)(unsafe.Pointer(&b[0])), &h)
	return int(rc), uint64(h)
}

func callStart[H ~uint64, E ~int64, R ~int32](f func(H, E) R, h uint64, e int64) int {
	return int(f(H(h), E(e)))
}

func callNext[H ~uint64, T ~int64, B ~uint64, R ~int32](f func(H, T, *B) R, h uint64, timeoutMS int64) (int, uint64) {
	var b B
	rc := f(H(h), T(timeoutMS), &b)
	return int(rc), uint64(b)
}

// callCopy runs copyOut(s) into an n-byte buffer filled with 'x' and
// returns the buffer and *needed.
func callCopy[B ~int8, N ~uint64](f func([]byte, *B, N, *N), s []byte, n int) ([]byte, int) {
	buf := make([]B, n)
	for i := range buf {
		buf[i] = 'x'
	}
	var needed N
	var p *B
	if n > 0 {
		p = &buf[0]
	}
	f(s, p, N(n), &needed)
	out := make([]byte, n)
	for i, c := range buf {
		out[i] = byte(c)
	}
	return out, int(needed)
}

const (
	rcOK          = 0
	rcEndOfEpoch  = 1
	rcInvalidArg  = -1
	rcInvalidHdl  = -2
	rcClosed      = -4
	rcInternal    = -7
	rcState       = -8
	testConfigStr = `{"batch_size":8,"dataset":{"length":100,"shape":[4],"dtype":"float32"},"workers":2,"seed":1,"shuffle":true}`
)

func TestTable(t *testing.T) {
	tb := &table{objs: make(map[uint64]any)}
	l := tb.add(kindLoader, "l")
	b := tb.add(kindBatch, "b")
	if l == 0 || b == 0 || l == b {
		t.Fatalf("handles %d %d", l, b)
	}
	if kindOf(l) != kindLoader || kindOf(b) != kindBatch {
		t.Fatalf("kinds %v %v", kindOf(l), kindOf(b))
	}
	tests := []struct {
		name string
		h    uint64
		k    kind
		want lookup
	}{
		{"loader", l, kindLoader, found},
		{"batch", b, kindBatch, found},
		{"batch as loader", b, kindLoader, wrongKind},
		{"loader as batch", l, kindBatch, wrongKind},
		{"zero", 0, kindLoader, wrongKind},
		{"never issued", 1000<<kindBits | uint64(kindLoader), kindLoader, wrongKind},
	}
	for _, tc := range tests {
		if _, got := tb.get(tc.h, tc.k); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, got := tb.remove(l, kindLoader); got != found {
		t.Fatalf("first remove: got %v, want found", got)
	}
	if _, got := tb.remove(l, kindLoader); got != gone {
		t.Fatalf("second remove: got %v, want gone", got)
	}
	if _, got := tb.get(l, kindLoader); got != gone {
		t.Fatalf("get after remove: got %v, want gone", got)
	}
	if n := tb.add(kindLoader, "again"); n <= b {
		t.Fatalf("handle %d reused or not increasing (last %d)", n, b)
	}
	if got := tb.liveCount(kindLoader); got != 1 {
		t.Fatalf("live loaders: got %d, want 1", got)
	}
}

func TestTableConcurrent(t *testing.T) {
	tb := &table{objs: make(map[uint64]any)}
	var wg sync.WaitGroup
	seen := sync.Map{}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				h := tb.add(kindBatch, i)
				if _, dup := seen.LoadOrStore(h, true); dup {
					t.Errorf("handle %d issued twice", h)
				}
				if _, got := tb.remove(h, kindBatch); got != found {
					t.Errorf("remove %d: got %v", h, got)
				}
			}
		}()
	}
	wg.Wait()
	if got := tb.liveCount(kindBatch); got != 0 {
		t.Fatalf("live batches: got %d, want 0", got)
	}
}

func TestCopyOut(t *testing.T) {
	s := []byte("hello")
	tests := []struct {
		n    int
		want string
	}{{0, ""}, {1, ""}, {3, "he"}, {6, "hello"}, {10, "hello"}}
	for _, tc := range tests {
		buf, needed := callCopy(copyOut, s, tc.n)
		if needed != len(s) {
			t.Errorf("n=%d: needed %d, want %d", tc.n, needed, len(s))
		}
		if tc.n == 0 {
			continue
		}
		end := bytes.IndexByte(buf, 0)
		if end < 0 || string(buf[:end]) != tc.want {
			t.Errorf("n=%d: got %q, want %q NUL-terminated", tc.n, buf, tc.want)
		}
	}
}

func TestPanicBarrier(t *testing.T) {
	// A batch object without a batch makes mlgo_batch_info dereference nil.
	h := handles.add(kindBatch, &batchObj{})
	defer handles.remove(h, kindBatch)
	if got := callOut(mlgo_batch_info, h); got != rcInternal {
		t.Fatalf("got %d, want ML_ERR_INTERNAL (%d)", got, rcInternal)
	}
}

func TestExports(t *testing.T) {
	if rc, _ := callCreate(mlgo_loader_create, `{"batch_size":0}`); rc != rcInvalidArg {
		t.Fatalf("batch_size 0: got %d, want %d", rc, rcInvalidArg)
	}
	rc, l := callCreate(mlgo_loader_create, testConfigStr)
	if rc != rcOK {
		t.Fatalf("create: %d", rc)
	}
	if rc, _ := callNext(mlgo_loader_next, l, 100); rc != rcState {
		t.Fatalf("next before start: got %d, want %d", rc, rcState)
	}
	if rc := callStart(mlgo_loader_start_epoch, l, 0); rc != rcOK {
		t.Fatalf("start: %d", rc)
	}
	n := 0
	for {
		rc, b := callNext(mlgo_loader_next, l, 10000)
		if rc == rcEndOfEpoch {
			break
		}
		if rc != rcOK {
			t.Fatalf("next: %d", rc)
		}
		if rc := callNext1(mlgo_loader_next, b); rc != rcInvalidHdl {
			t.Fatalf("batch handle as loader: got %d, want %d", rc, rcInvalidHdl)
		}
		if rc := call1(mlgo_batch_release, b); rc != rcOK {
			t.Fatalf("release: %d", rc)
		}
		n++
	}
	if n != 13 {
		t.Fatalf("got %d batches, want 13", n)
	}
	if rc := call1(mlgo_loader_close, l); rc != rcOK {
		t.Fatalf("close: %d", rc)
	}
	if rc := call1(mlgo_loader_close, l); rc != rcOK {
		t.Fatalf("second close: %d", rc)
	}
	if rc := callStart(mlgo_loader_start_epoch, l, 0); rc != rcClosed {
		t.Fatalf("start after close: got %d, want %d", rc, rcClosed)
	}
	if a, b, g := handles.liveCount(kindLoader), handles.liveCount(kindBatch), sched.LiveGoroutines(); a != 0 || b != 0 || g != 0 {
		t.Fatalf("live loaders %d batches %d goroutines %d, want 0", a, b, g)
	}
}

func callNext1[H ~uint64, T ~int64, B ~uint64, R ~int32](f func(H, T, *B) R, h uint64) int {
	rc, _ := callNext(f, h, 0)
	return rc
}
