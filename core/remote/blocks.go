package remote

// Arena blocks of samples that will never reach the consumer: freed by
// tag, so that a free never releases a block the worker has reused.

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/pipeline"
)

// Drop implements pipeline.Dropper for the scheduler: a finished sample's
// block is freed; an unfinished one's outstanding call is abandoned (its
// block is freed when the reply comes).
func (p *Pool) Drop(s *pipeline.Sample, finished bool) {
	if !finished {
		p.Abandon(s.Resume)
		return
	}
	if len(s.Fields) > 0 {
		p.DropTicket([][]byte{s.Fields[0].Data})
	}
}

var _ pipeline.Dropper = (*Pool)(nil)

// Abandon gives up on a call that a timed-out Load left in resume (a
// Sample.Resume) and that will never be resumed: its block is freed when
// its reply comes, or now if it has come. Anything else is ignored.
func (p *Pool) Abandon(resume any) {
	cl, ok := resume.(*call)
	if !ok || cl.p != p {
		return
	}
	var r reply
	if !p.abandon(cl, &r) && r.err == nil {
		p.free(cl.w, r.offset, cl.seq)
	}
}

// DropTicket frees the block of a finished sample that will never reach the
// consumer; fields[0] is its ticket. A ticket that names no block of this
// pool is ignored.
func (p *Pool) DropTicket(fields [][]byte) {
	if len(fields) < 1 || len(fields[0]) < ticketBytes {
		return
	}
	t := fields[0]
	id := binary.LittleEndian.Uint64(t[0:])
	if id >= uint64(len(p.workers)) {
		return
	}
	p.free(p.workers[id], binary.LittleEndian.Uint64(t[8:]), binary.LittleEndian.Uint64(t[24:]))
}

// free writes 0 to the state word of the block at off in w's arena, if
// the block still is the reply to GET seq (its header carries the low 32
// bits of seq): a free must never release a block the worker has reused.
func (p *Pool) free(w *worker, off, seq uint64) {
	p.arenaMu.RLock()
	defer p.arenaMu.RUnlock()
	if p.unmapped || !validBlock(w.arena, off, 0) {
		return
	}
	state := (*uint32)(unsafe.Pointer(&w.arena[off]))
	tag := (*uint32)(unsafe.Pointer(&w.arena[off+4]))
	if atomic.LoadUint32(state) != 1 || atomic.LoadUint32(tag) != uint32(seq) {
		return
	}
	atomic.StoreUint32(state, 0)
}

func validBlock(arena []byte, off, length uint64) bool {
	size := uint64(len(arena))
	return off%8 == 0 && off <= size && size-off >= blockHeader && size-off-blockHeader >= length
}
