// Package batch defines a built batch and the allocator its memory comes
// from.
//
// The scheduler never allocates batch memory itself: an Allocator supplies
// one Block per batch, so that the C ABI can hand out C memory (never Go
// heap) while Go tests use Go memory. A Block holds three regions, each
// starting at a multiple of Align bytes: the data rows, the int64 labels and
// the int64 sample indices.
package batch

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/config"
)

// Align is the alignment of every region of a batch, in bytes.
const Align = 256

// ErrNoMemory is returned (wrapped) when an Allocator cannot supply a block.
var ErrNoMemory = errors.New("batch: out of memory")

// Block is one batch's memory. Bytes is stable for the block's life and its
// first byte is Align-aligned. Release is called exactly once, by the Batch
// that owns the block.
type Block interface {
	Bytes() []byte
	Release()
}

// Allocator supplies blocks. Safe for concurrent use.
type Allocator interface {
	Alloc(size int) (Block, error)
}

// Layout is where the regions of a batch of n rows lie in its block.
type Layout struct {
	RowBytes   int
	DataOff    int
	LabelsOff  int
	IndicesOff int
	Size       int
	N          int
}

// LayoutFor computes the layout of a batch of n rows of rowBytes each.
func LayoutFor(n, rowBytes int) Layout {
	up := func(x int) int { return (x + Align - 1) / Align * Align }
	l := Layout{RowBytes: rowBytes, N: n}
	l.LabelsOff = up(n * rowBytes)
	l.IndicesOff = l.LabelsOff + up(n*8)
	l.Size = l.IndicesOff + up(n*8)
	if l.Size == 0 {
		l.Size = Align
	}
	return l
}

// Batch is a built batch. Rows [0, N) of Data hold the samples; Labels[i]
// and Indices[i] belong to row i. A Batch is owned by one goroutine at a
// time; Release frees its block once and is idempotent.
type Batch struct {
	Epoch   int64
	Seq     int64 // position of the batch in its epoch, from 0
	N       int
	NumSlow int
	Shape   []int64 // [N, sample shape...]
	DType   config.DType
	Data    []byte
	Labels  []int64
	Indices []int64
	Block   Block

	released atomic.Bool
}

// New allocates a batch of n rows with the given sample shape and dtype.
func New(alloc Allocator, n int, sampleShape []int64, dt config.DType) (*Batch, error) {
	rowBytes := dt.Size()
	for _, s := range sampleShape {
		rowBytes *= int(s)
	}
	lay := LayoutFor(n, rowBytes)
	blk, err := alloc.Alloc(lay.Size)
	if err != nil {
		return nil, fmt.Errorf("batch of %d rows (%d bytes): %w", n, lay.Size, err)
	}
	mem := blk.Bytes()
	if len(mem) < lay.Size {
		blk.Release()
		return nil, fmt.Errorf("batch: allocator returned %d bytes, want %d", len(mem), lay.Size)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%Align != 0 {
		blk.Release()
		return nil, fmt.Errorf("batch: allocator returned memory not aligned to %d bytes", Align)
	}
	b := &Batch{
		N:     n,
		Shape: append([]int64{int64(n)}, sampleShape...),
		DType: dt,
		Data:  mem[: n*rowBytes : n*rowBytes],
		Block: blk,
	}
	if n > 0 {
		b.Labels = unsafe.Slice((*int64)(unsafe.Pointer(&mem[lay.LabelsOff])), n)
		b.Indices = unsafe.Slice((*int64)(unsafe.Pointer(&mem[lay.IndicesOff])), n)
	}
	return b, nil
}

// Row returns row i of Data.
func (b *Batch) Row(i int) []byte {
	rb := len(b.Data) / max(b.N, 1)
	return b.Data[i*rb : (i+1)*rb : (i+1)*rb]
}

// Release frees the batch's block. Safe to call more than once.
func (b *Batch) Release() {
	if b == nil || !b.released.CompareAndSwap(false, true) {
		return
	}
	b.Block.Release()
}

// GoAllocator allocates blocks on the Go heap, aligned to Align. For tests
// and pure-Go users; it counts live blocks.
type GoAllocator struct {
	live  atomic.Int64
	total atomic.Int64
}

type goBlock struct {
	a   *GoAllocator
	buf []byte
	mem []byte
}

func (g *goBlock) Bytes() []byte { return g.mem }
func (g *goBlock) Release() {
	g.a.live.Add(-1)
}

// Alloc returns a block of size bytes.
func (a *GoAllocator) Alloc(size int) (Block, error) {
	if size < 0 {
		return nil, fmt.Errorf("batch: negative size %d", size)
	}
	buf := make([]byte, size+Align)
	off := int((Align - uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%Align) % Align)
	a.live.Add(1)
	a.total.Add(1)
	return &goBlock{a: a, buf: buf, mem: buf[off : off+size : off+size]}, nil
}

// Live reports blocks allocated and not yet released.
func (a *GoAllocator) Live() int64 { return a.live.Load() }

// Total reports blocks ever allocated.
func (a *GoAllocator) Total() int64 { return a.total.Load() }
