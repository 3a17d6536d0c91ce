package main

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// kind is the kind of object a handle names. It is stored in the low
// kindBits bits of the handle, so a handle of the wrong kind is refused
// without a lookup, and a closed loader is told apart from a handle that
// was never issued without keeping tombstones.
type kind uint64

const (
	kindLoader kind = 1
	kindBatch  kind = 2

	kindBits = 4
	kindMask = 1<<kindBits - 1
)

func (k kind) String() string {
	switch k {
	case kindLoader:
		return "loader"
	case kindBatch:
		return "batch"
	}
	return fmt.Sprintf("kind(%d)", uint64(k))
}

// lookup is the outcome of a handle lookup.
type lookup int

const (
	found     lookup = iota
	wrongKind        // zero, never issued, or a handle of another kind
	gone             // issued with the right kind, since closed or released
)

// table maps handles to objects. Handles are seq<<kindBits | kind with seq
// counting up from 1: zero is never issued and no handle is ever reused.
// Safe for concurrent use; the lock is held only for map operations, never
// while a call blocks.
type table struct {
	mu   sync.Mutex
	seq  uint64
	objs map[uint64]any
	live [kindMask + 1]atomic.Int64
}

var handles = &table{objs: make(map[uint64]any)}

// add stores obj and returns its new handle.
func (t *table) add(k kind, obj any) uint64 {
	t.mu.Lock()
	t.seq++
	h := t.seq<<kindBits | uint64(k)
	t.objs[h] = obj
	t.mu.Unlock()
	t.live[k].Add(1)
	return h
}

// kindOf returns the kind bits of h (whether or not h was issued).
func kindOf(h uint64) kind { return kind(h & kindMask) }

// get returns the object of handle h of kind k.
func (t *table) get(h uint64, k kind) (any, lookup) {
	return t.with(h, k, nil)
}

// with returns the object of handle h of kind k and, when found and f is
// not nil, calls f(obj) before the lock is released: what f does cannot
// race with remove. f must not block.
func (t *table) with(h uint64, k kind, f func(obj any)) (any, lookup) {
	if h == 0 || kind(h&kindMask) != k {
		return nil, wrongKind
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	obj, ok := t.objs[h]
	if !ok {
		if h>>kindBits <= t.seq {
			return nil, gone
		}
		return nil, wrongKind
	}
	if f != nil {
		f(obj)
	}
	return obj, found
}

// remove takes handle h of kind k out of the table and returns its object.
// The first remove of a handle returns found; later ones return gone.
func (t *table) remove(h uint64, k kind) (any, lookup) {
	if h == 0 || kind(h&kindMask) != k {
		return nil, wrongKind
	}
	t.mu.Lock()
	obj, ok := t.objs[h]
	if !ok {
		issued := h>>kindBits <= t.seq
		t.mu.Unlock()
		if issued {
			return nil, gone
		}
		return nil, wrongKind
	}
	delete(t.objs, h)
	t.mu.Unlock()
	t.live[k].Add(-1)
	return obj, found
}

// liveCount reports the handles of kind k not yet removed.
func (t *table) liveCount(k kind) int64 { return t.live[k].Load() }
