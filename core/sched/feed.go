package sched

import (
	"fmt"
	"sort"
	"sync"
)

// feed is an epoch's order: sample indices and the batch sizes that cut
// them into batches. A native epoch's feed is complete when the run is
// created; a fed loader (config "feed") receives it in pieces from the
// host (a Python sampler may be lazy or infinite), each piece whole
// batches, until the host marks the last one.
type feed struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever the feed grows or ends
	idx     []int64
	starts  []int // position of each batch's first sample
	sizes   []int
	closed  bool
}

func newFeed() *feed { return &feed{changed: make(chan struct{})} }

// fixedFeed is a complete feed of order cut into batches of b (the last
// one shorter).
func fixedFeed(order []int64, b int) *feed {
	f := newFeed()
	sizes := make([]int, 0, (len(order)+b-1)/b)
	for at := 0; at < len(order); at += b {
		sizes = append(sizes, min(b, len(order)-at))
	}
	_ = f.append(order, sizes, true)
	return f
}

// append adds whole batches: sum(sizes) must be len(idx). last ends the
// epoch's order.
func (f *feed) append(idx []int64, sizes []int, last bool) error {
	n := 0
	for k, s := range sizes {
		if s < 1 {
			return fmt.Errorf("batch size %d (batch %d of this feed) must be >= 1", s, k)
		}
		n += s
	}
	if n != len(idx) {
		return fmt.Errorf("the batch sizes add up to %d but %d indices were fed", n, len(idx))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("the epoch's order was already complete")
	}
	for _, s := range sizes {
		f.starts = append(f.starts, len(f.idx))
		f.sizes = append(f.sizes, s)
		f.idx = append(f.idx, idx[:s]...)
		idx = idx[s:]
	}
	f.closed = last
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

// wait returns a channel closed at the feed's next change.
func (f *feed) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// index waits for the sample at pos; ok is false when the feed ended
// before pos or done closed.
func (f *feed) index(pos int, done <-chan struct{}) (idx int64, ok bool) {
	for {
		f.mu.Lock()
		if pos < len(f.idx) {
			idx = f.idx[pos]
			f.mu.Unlock()
			return idx, true
		}
		closed, ch := f.closed, f.changed
		f.mu.Unlock()
		if closed {
			return 0, false
		}
		select {
		case <-ch:
		case <-done:
			return 0, false
		}
	}
}

// batch waits until batch seq is known; ok is false when the feed ended
// before it or done closed.
func (f *feed) batch(seq int, done <-chan struct{}) (start, size int, ok bool) {
	for {
		f.mu.Lock()
		if seq < len(f.sizes) {
			start, size = f.starts[seq], f.sizes[seq]
			f.mu.Unlock()
			return start, size, true
		}
		closed, ch := f.closed, f.changed
		f.mu.Unlock()
		if closed {
			return 0, 0, false
		}
		select {
		case <-ch:
		case <-done:
			return 0, 0, false
		}
	}
}

// peek returns batch seq if it is known.
func (f *feed) peek(seq int) (start, size int, known bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq < len(f.sizes) {
		return f.starts[seq], f.sizes[seq], true
	}
	return 0, 0, false
}

// locate returns the batch holding position pos (which must have been fed).
func (f *feed) locate(pos int) (seq, start, size int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq = sort.Search(len(f.starts), func(k int) bool { return f.starts[k] > pos }) - 1
	return seq, f.starts[seq], f.sizes[seq]
}

// count returns the samples fed so far and whether the order is complete.
func (f *feed) count() (n int, closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.idx), f.closed
}
