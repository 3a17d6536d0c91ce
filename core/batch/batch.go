// Package batch defines a built batch and the allocator its memory comes
// from.
//
// A batch has one or more named fields (a source declares them with
// FieldSpec: the samples' "data" and "label", an image and its mask, ...),
// each stored as one contiguous row-major array [N, shape...], plus the
// dataset index of every row.
//
// The scheduler never allocates batch memory itself: an Allocator supplies
// one Block per batch, so that the C ABI can hand out C memory (never Go
// heap) while Go tests use Go memory. Every region of a block (each field,
// then the indices) starts at a multiple of Align bytes.
package batch

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/config"
)

// Align is the alignment of every region of a batch, in bytes.
const Align = 256

// MaxNDim bounds a field's dimensions, the batch dimension included.
const MaxNDim = 8

// ErrNoMemory is returned (wrapped) when an Allocator cannot supply a block.
var ErrNoMemory = errors.New("batch: out of memory")

// FieldSpec describes one field of every sample: its name, element type and
// shape (without the batch dimension; empty for a scalar). A dimension of
// -1 varies between samples: a batch pads it to its largest sample (the
// padding collate); batch.New takes resolved shapes only.
type FieldSpec struct {
	Name  string
	DType config.DType
	Shape []int64
}

// Fixed reports whether every dimension is known.
func (f FieldSpec) Fixed() bool { return !slices.Contains(f.Shape, -1) }

// Bytes is the size of one sample's value of the field (0 when not Fixed).
func (f FieldSpec) Bytes() int {
	if !f.Fixed() {
		return 0
	}
	n := f.DType.Size()
	for _, d := range f.Shape {
		n *= int(d)
	}
	return n
}

// Validate checks a list of specs: at least one, unique non-empty names,
// shapes of at most MaxNDim-1 positive dimensions.
func Validate(specs []FieldSpec) error {
	if len(specs) == 0 {
		return errors.New("batch: a source must declare at least one field")
	}
	seen := map[string]bool{}
	for _, f := range specs {
		switch {
		case f.Name == "":
			return errors.New("batch: a field has no name")
		case seen[f.Name]:
			return fmt.Errorf("batch: field %q declared twice", f.Name)
		case len(f.Shape) > MaxNDim-1:
			return fmt.Errorf("batch: field %q has %d dimensions, at most %d", f.Name, len(f.Shape), MaxNDim-1)
		case f.DType.Size() == 0:
			return fmt.Errorf("batch: field %q has no element type", f.Name)
		}
		for _, d := range f.Shape {
			if d < 1 && d != -1 {
				return fmt.Errorf("batch: field %q has shape %v: every dimension must be >= 1 (or -1: varies)", f.Name, f.Shape)
			}
		}
		seen[f.Name] = true
	}
	return nil
}

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

// Field is one field of a batch: Data holds N rows of the spec's shape.
type Field struct {
	Name  string
	DType config.DType
	Shape []int64 // [N, spec shape...]
	Data  []byte
}

// Row returns row i of the field.
func (f *Field) Row(i int) []byte {
	rb := len(f.Data) / max(int(f.Shape[0]), 1)
	return f.Data[i*rb : (i+1)*rb : (i+1)*rb]
}

// Batch is a built batch. Fields[k].Row(i) and Indices[i] belong to row i.
// A Batch is owned by one goroutine at a time; Release frees its block once
// and is idempotent.
type Batch struct {
	Epoch   int64
	Seq     int64 // position of the batch in its epoch, from 0
	N       int
	NumSlow int
	Fields  []Field
	Indices []int64
	Block   Block

	released atomic.Bool
}

func alignUp(x int) int { return (x + Align - 1) / Align * Align }

// New allocates a batch of n rows of the given fields.
func New(alloc Allocator, n int, specs []FieldSpec) (*Batch, error) {
	for _, f := range specs {
		if !f.Fixed() {
			return nil, fmt.Errorf("batch: field %q: shape %v is not resolved", f.Name, f.Shape)
		}
	}
	size := 0
	offs := make([]int, len(specs))
	for k, f := range specs {
		offs[k] = size
		size += alignUp(n * f.Bytes())
	}
	idxOff := size
	size = max(size+alignUp(n*8), Align)
	blk, err := alloc.Alloc(size)
	if err != nil {
		return nil, fmt.Errorf("batch of %d rows (%d bytes): %w", n, size, err)
	}
	mem := blk.Bytes()
	if len(mem) < size {
		blk.Release()
		return nil, fmt.Errorf("batch: allocator returned %d bytes, want %d", len(mem), size)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%Align != 0 {
		blk.Release()
		return nil, fmt.Errorf("batch: allocator returned memory not aligned to %d bytes", Align)
	}
	b := &Batch{N: n, Block: blk, Fields: make([]Field, len(specs))}
	for k, f := range specs {
		end := offs[k] + n*f.Bytes()
		b.Fields[k] = Field{
			Name:  f.Name,
			DType: f.DType,
			Shape: append([]int64{int64(n)}, slices.Clone(f.Shape)...),
			Data:  mem[offs[k]:end:end],
		}
	}
	if n > 0 {
		b.Indices = unsafe.Slice((*int64)(unsafe.Pointer(&mem[idxOff])), n)
	}
	return b, nil
}

// Field returns the field called name, or nil.
func (b *Batch) Field(name string) *Field {
	for k := range b.Fields {
		if b.Fields[k].Name == name {
			return &b.Fields[k]
		}
	}
	return nil
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
	mem []byte
}

func (g *goBlock) Bytes() []byte { return g.mem }
func (g *goBlock) Release()      { g.a.live.Add(-1) }

// Alloc returns a block of size bytes.
func (a *GoAllocator) Alloc(size int) (Block, error) {
	if size < 0 {
		return nil, fmt.Errorf("batch: negative size %d", size)
	}
	buf := make([]byte, size+Align)
	off := int((Align - uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%Align) % Align)
	a.live.Add(1)
	a.total.Add(1)
	return &goBlock{a: a, mem: buf[off : off+size : off+size]}, nil
}

// Live reports blocks allocated and not yet released.
func (a *GoAllocator) Live() int64 { return a.live.Load() }

// Total reports blocks ever allocated.
func (a *GoAllocator) Total() int64 { return a.total.Load() }
