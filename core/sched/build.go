package sched

// The builder's half of an epoch run: placing finished samples into
// batches (in the fed order, or from whatever is ready), building and
// emitting them, and settling failed samples under on_error.

import (
	"fmt"
	"slices"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

// emit hands a finished batch to Next, giving back its tokens.
func (r *epochRun) emit(b *batch.Batch) bool {
	select {
	case r.out <- result{b: b}:
		for i := 0; i < b.N; i++ {
			<-r.tokens
		}
		r.l.st.batchesBuilt.Add(1)
		return true
	case <-r.ctx.Done():
		r.dropBatch(b)
		b.Release()
		return false
	}
}

// failWith ends the run with a sample's error, after the batches already
// built.
func (r *epochRun) failWith(err error) {
	r.fail(err)
	r.l.st.failed.Add(1)
	select {
	case r.out <- result{err: err}:
	case <-r.ctx.Done():
	}
}

// check rejects a finished sample whose fields cannot be batched (their
// count, dtype, rank or a fixed size differ from the source's specs): it
// fails like any other sample, before the builder places it, so that
// on_error=skip decides on it and the message names the sample.
func (r *epochRun) check(it *item) {
	if err := r.l.fitsSpecs(it.smp.Fields); err != nil {
		it.err = r.l.sampleError(it.smp.Index, "batch", err)
	}
}

// fitsSpecs checks a finished sample's fields against the source's specs.
func (l *Loader) fitsSpecs(fields []pipeline.Array) error {
	if len(fields) != len(l.specs) {
		return fmt.Errorf("%d fields, the source declares %d", len(fields), len(l.specs))
	}
	for k, spec := range l.specs {
		if err := fits(spec, fields[k]); err != nil {
			return err
		}
	}
	return nil
}

// sampleError is sample index's error at step, naming its file when the
// source has files.
func (l *Loader) sampleError(index int64, step string, err error) *SampleError {
	e := &SampleError{Index: index, Step: step, Err: err}
	if p, ok := l.src.(pipeline.Pather); ok {
		e.Path = p.Path(index)
	}
	return e
}

// build allocates batch seq and copies rows into it, then recycles the
// rows' buffers (also on error). A field declared with variable
// dimensions (-1) gets, in each of them, the largest size among the rows;
// smaller rows are zero-padded at the end. A row whose field does not
// match its spec fails with a SampleError naming the field.
func (r *epochRun) build(seq int64, rows []*item) (*batch.Batch, error) {
	defer r.recycle(rows...)
	specs := slices.Clone(r.l.specs)
	for k, spec := range specs {
		var shape []int64
		for _, it := range rows {
			// Every row passed check(); this guards the copy below.
			if len(it.smp.Fields) != len(specs) {
				return nil, r.l.sampleError(it.smp.Index, "batch", fmt.Errorf(
					"%d fields, the source declares %d", len(it.smp.Fields), len(specs)))
			}
			f := it.smp.Fields[k]
			if err := fits(spec, f); err != nil {
				return nil, r.l.sampleError(it.smp.Index, "batch", err)
			}
			if shape == nil {
				shape = slices.Clone(f.Shape)
			}
			for d := range shape {
				shape[d] = max(shape[d], f.Shape[d])
			}
		}
		specs[k].Shape = shape
	}
	b, err := batch.New(r.l.alloc, len(rows), specs)
	if err != nil {
		return nil, err
	}
	b.Epoch, b.Seq = r.epoch, seq
	for row, it := range rows {
		for k, f := range it.smp.Fields {
			dst := b.Fields[k].Row(row)
			if slices.Equal(f.Shape, specs[k].Shape) {
				copy(dst, f.Data)
			} else {
				padCopy(dst, specs[k].Shape, f.Data, f.Shape, f.DType.Size())
			}
		}
		b.Indices[row] = it.smp.Index
		if it.slow {
			b.NumSlow++
		}
	}
	return b, nil
}

// fits checks a sample's field against its spec: same dtype and rank, the
// spec's size in every fixed dimension, and data of the shape's size.
func fits(spec batch.FieldSpec, f pipeline.Array) error {
	ok := f.DType == spec.DType && len(f.Shape) == len(spec.Shape)
	n := f.DType.Size()
	for d := 0; ok && d < len(f.Shape); d++ {
		ok = f.Shape[d] >= 1 && (spec.Shape[d] == -1 || f.Shape[d] == spec.Shape[d])
		n *= int(f.Shape[d])
	}
	if ok && len(f.Data) == n {
		return nil
	}
	if f.DType != spec.DType {
		return fmt.Errorf("field %q has dtype %s and shape %v, but every sample must have dtype %s (the "+
			"dataset's field spec): make dtypes uniform (a cast, or a dataset of one dtype) before batching",
			spec.Name, config.DTypeName(f.DType), f.Shape, config.DTypeName(spec.DType))
	}
	return fmt.Errorf("field %q has shape %v (%s, %d bytes), but every sample must have shape %v: "+
		"make sizes uniform with a transform (resize, crop, pad, trim) before batching, "+
		"or ask the dataset for the padding collate", spec.Name, f.Shape, config.DTypeName(f.DType), len(f.Data), spec.Shape)
}

// padCopy copies a row-major array of shape src into the leading corner of
// one of shape dst (every dst dimension >= src's), leaving the rest of dst
// zero.
func padCopy(dst []byte, dstShape []int64, src []byte, srcShape []int64, esize int) {
	clear(dst)
	if len(src) == 0 {
		return
	}
	rank := len(srcShape)
	if rank == 0 {
		copy(dst, src)
		return
	}
	inner := int(srcShape[rank-1]) * esize
	// Strides of dst in bytes.
	stride := make([]int, rank)
	stride[rank-1] = esize
	for d := rank - 2; d >= 0; d-- {
		stride[d] = stride[d+1] * int(dstShape[d+1])
	}
	idx := make([]int64, rank-1)
	for off := 0; off < len(src); off += inner {
		at := 0
		for d, i := range idx {
			at += int(i) * stride[d]
		}
		copy(dst[at:at+inner], src[off:off+inner])
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < srcShape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// recycle returns the buffers of items the builder will never place.
func (r *epochRun) recycle(items ...*item) {
	for _, it := range items {
		if it != nil && it.buf != nil {
			r.l.putBuf(it.buf)
			it.buf = nil
		}
	}
}

// discard recycles items that will never reach a batch. A source that
// holds resources for its samples outside the loader (a worker process's
// arena block) hears of each through pipeline.Dropper: finished samples
// with their fields, unfinished ones with their continuation.
func (r *epochRun) discard(items ...*item) {
	if d, ok := r.l.src.(pipeline.Dropper); ok {
		for _, it := range items {
			if it != nil && it.err == nil && it.buf != nil {
				d.Drop(&it.smp, it.next == len(r.l.steps))
			}
		}
	}
	r.recycle(items...)
}

// dropBatch tells a Dropper source about the rows of a built batch that
// the consumer will never see.
func (r *epochRun) dropBatch(b *batch.Batch) {
	d, ok := r.l.src.(pipeline.Dropper)
	if !ok {
		return
	}
	for row := 0; row < b.N; row++ {
		s := pipeline.Sample{Index: b.Indices[row], Fields: make([]pipeline.Array, len(b.Fields))}
		for k := range b.Fields {
			s.Fields[k] = pipeline.Array{DType: b.Fields[k].DType, Data: b.Fields[k].Row(row)}
		}
		d.Drop(&s, true)
	}
}

// drainQueues discards what is left in the lanes' queues once the run is
// over.
func (r *epochRun) drainQueues() {
	for {
		select {
		case it, ok := <-r.fast:
			if ok {
				r.discard(it)
				continue
			}
		case it, ok := <-r.slow:
			if ok {
				r.discard(it)
				continue
			}
		case it, ok := <-r.temp:
			if ok {
				r.discard(it)
				continue
			}
		default:
		}
		return
	}
}

// settle handles a finished item that carries an error: under the skip
// policy it is counted and left out (true); under on_error=batch its
// in-flight slot is freed and the caller fails its batch (true);
// otherwise, or once the budget is spent, the run ends with the error
// (false).
func (r *epochRun) settle(it *item) bool {
	r.recycle(it)
	if r.ctx.Err() != nil {
		return false // stopped: the error is the cancellation
	}
	l := r.l
	if l.cfg.OnError == "batch" {
		r.errMu.Lock()
		r.dropped++
		r.errMu.Unlock()
		<-r.tokens
		return true
	}
	if l.cfg.OnError == "skip" {
		r.errMu.Lock()
		ok := l.cfg.MaxSkipped < 0 || int64(len(r.skipped)) < l.cfg.MaxSkipped
		if ok {
			r.skipped = append(r.skipped, it.index)
			r.lastSkip = it.err.Error()
		}
		r.errMu.Unlock()
		if ok {
			l.st.skipped.Add(1)
			<-r.tokens // the sample will never be in a batch: its in-flight slot is free
			return true
		}
		r.failWith(&BudgetError{Budget: l.cfg.MaxSkipped, Err: it.err})
		return false
	}
	r.failWith(it.err)
	return false
}

// failBatch hands err to Next in place of a batch (on_error=batch) and
// drops rows, the batch's samples that did not fail; the epoch goes on.
func (r *epochRun) failBatch(err error, rows []*item) bool {
	r.discard(rows...)
	r.errMu.Lock()
	r.dropped += int64(len(rows))
	r.errMu.Unlock()
	for range rows {
		<-r.tokens
	}
	r.l.st.failed.Add(1)
	select {
	case r.out <- result{err: err}:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// buildAnyOrder fills each batch with whatever is ready: a slow sample that
// has waited SlowMaxAge batches first, then fast samples, then other ready
// slow samples. It never waits on a slow sample while a fast one is ready.
// Batch seq has the feed's size for it, less what skipped samples leave
// missing at the end of the epoch.
func (r *epochRun) buildAnyOrder() {
	defer r.wcancel()
	defer close(r.out)
	defer r.drainQueues()
	l := r.l
	var ready []*item // finished slow samples, oldest first
	defer func() { r.discard(ready...) }()
	slowCh := r.slow
	received := 0 // items taken from the lanes (placed, held or skipped)
	rows := make([]*item, 0, min(l.cfg.BatchSize, cap(r.fast)))
	defer func() { r.discard(rows...) }()
	for seq := 0; ; seq++ {
		_, size, ok := r.feed.batch(seq, r.ctx.Done())
		if !ok {
			return
		}
		rows = rows[:0]
		for {
			changed := r.feed.wait() // before reading the feed: no missed change
			need := size
			fed, closed := r.feed.count()
			if closed {
				need = min(need, len(rows)+len(ready)+fed-received)
			}
			if len(rows) >= need {
				break
			}
			// Collect finished slow samples without blocking.
			for more := true; more && slowCh != nil; {
				select {
				case it, ok := <-slowCh:
					if !ok {
						slowCh = nil
						break
					}
					received++
					it.ready = int64(seq)
					ready = append(ready, it)
				default:
					more = false
				}
			}
			var it *item
			switch {
			case len(ready) > 0 && int64(seq)-ready[0].ready >= int64(l.cfg.SlowMaxAge):
				it, ready = ready[0], ready[1:]
			default:
				select {
				case it = <-r.fast:
					received++
				default:
					if len(ready) > 0 {
						it, ready = ready[0], ready[1:]
					}
				}
			}
			if it == nil {
				select {
				case it = <-r.fast:
					received++
				case s, ok := <-slowCh:
					if !ok {
						slowCh = nil
						continue
					}
					received++
					it = s
				case <-changed:
					continue // the feed grew or ended: recompute need
				case <-r.ctx.Done():
					return
				}
			}
			if it.err != nil {
				err := it.err
				if !r.settle(it) {
					return
				}
				// Under on_error=batch the error takes a batch's place at
				// once; the samples already placed stay for the next one.
				if l.cfg.OnError == "batch" && !r.failBatch(err, nil) {
					return
				}
				continue
			}
			rows = append(rows, it)
		}
		if len(rows) == 0 {
			return // the rest of the epoch was skipped
		}
		b, err := r.build(int64(seq), rows)
		rows = rows[:0]
		if err != nil {
			r.failWith(err)
			return
		}
		if !r.emit(b) {
			return
		}
	}
}

// buildInOrder emits batch k with exactly the samples at positions
// [start_k, start_k+size_k) of the order, in that order (less skipped
// samples; a batch whose samples were all skipped is not emitted).
// Finished samples of later batches wait in their batch's buffer; the
// token bound keeps those buffers to at most MaxInflight/B + 1.
func (r *epochRun) buildInOrder() {
	defer r.wcancel()
	defer close(r.out)
	defer r.drainQueues()
	type slot struct {
		rows   []*item
		filled int
		err    error // the first failure of the batch (on_error=batch)
	}
	pending := map[int]*slot{} // batch number -> its rows, by position
	defer func() {
		for _, p := range pending {
			r.discard(p.rows...)
		}
	}()
	slowCh := r.slow
	next := 0
	for {
		changed := r.feed.wait() // before reading the feed: no missed change
		// Emit every complete batch at the head.
		for {
			_, size, known := r.feed.peek(next)
			if !known {
				if _, closed := r.feed.count(); closed {
					return // every batch of the epoch was emitted
				}
				break
			}
			p := pending[next]
			if p == nil || p.filled < size {
				break
			}
			delete(pending, next)
			rows := slices.DeleteFunc(p.rows, func(it *item) bool { return it == nil })
			if p.err != nil {
				if !r.failBatch(p.err, rows) {
					return
				}
			} else if len(rows) > 0 {
				b, err := r.build(int64(next), rows)
				if err != nil {
					r.failWith(err)
					return
				}
				if !r.emit(b) {
					return
				}
			}
			next++
		}
		var it *item
		select {
		case it = <-r.fast:
		case s, ok := <-slowCh:
			if !ok {
				slowCh = nil
				continue
			}
			it = s
		case <-changed:
			continue
		case <-r.ctx.Done():
			return
		}
		k, start, size := r.feed.locate(it.pos)
		p := pending[k]
		if p == nil {
			p = &slot{rows: make([]*item, size)}
			pending[k] = p
		}
		p.filled++
		if it.err != nil {
			err := it.err
			if !r.settle(it) {
				return
			}
			if p.err == nil && r.l.cfg.OnError == "batch" {
				p.err = err
			}
			continue
		}
		p.rows[it.pos-start] = it
	}
}
