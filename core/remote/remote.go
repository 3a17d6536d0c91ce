// Package remote is a pipeline.Source whose samples are computed by Python
// worker processes: a Python Dataset's __getitem__ runs in those processes,
// and the scheduler's lanes dispatch one sample at a time to them. Go is the
// "main" side of docs/worker-protocol.md: it sends GET and reads HELLO and
// REPLY (NEXT and RESET, for iterable datasets, are sent by Python).
//
// # Design
//
// Each process has at most one outstanding GET. A Load takes an idle
// process, sends the GET and waits for its REPLY; when the reply comes the
// process is idle again, before the Load has even returned. One reader
// goroutine per process reads its socket (through the netpoller, so Close
// interrupts it) and routes each REPLY to the call waiting for it by seq.
//
// On the fast lane (the Ctx has a deadline) the sample's budget is measured
// when Load starts and the timer is started only once the GET is sent: time
// spent waiting for an idle process does not count against the sample. When
// the budget runs out, Load leaves the pending call in Sample.Resume and
// returns pipeline.ErrTimedOut; the process keeps computing, and the slow
// lane's Load (same sample, Resume still set, no deadline) waits for that
// same reply instead of dispatching again. A process held by a slow sample
// is not available to the fast lane, so a pool should have a few more
// processes than fast-lane workers: the spare processes keep the fast lane
// wide while slow samples finish.
//
// A sample's data lives in a block of its process's memfd arena; Load
// returns only a ticket {worker, block offset, payload length, seq} in the
// sample's single int64 field, and the main Python process reads the block
// from its own mapping of the arena. A block is freed by writing 0 to its
// state word: by the main Python process once the sample's arrays are
// garbage, by Drop for a finished sample that will never reach the
// consumer, and by the pool itself for a reply whose Load gave up (epoch
// cancelled) before it came.
//
// A worker that fails its setup, dies (EOF on its socket), or sends a
// malformed message breaks the pool: the call outstanding on it and every
// later Load fail with that error.
package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

// Proc is one worker process as the main process sees it.
type Proc struct {
	// FD is the main process's end of the worker's socketpair. The Pool owns
	// it from New on: it is closed by Close, and by New when New fails.
	FD  int
	PID int
	// ArenaFD is the worker's memfd arena, an fd of this process. The Pool
	// maps it but does not own it (never closes it).
	ArenaFD   int
	ArenaSize int64
}

// Pool is a pipeline.Source whose samples come from worker processes. Safe
// for concurrent use.
type Pool struct {
	workers []*worker
	length  int64
	idle    chan *worker // fast-lane workers (id < primary) with no outstanding GET
	spare   chan *worker // spare workers (id >= primary) with no outstanding GET
	primary atomic.Int64
	seq     atomic.Uint64
	ready   atomic.Int64

	broken    chan struct{}
	breakOnce sync.Once
	brokenErr error // set before broken is closed

	closed    chan struct{}
	closeOnce sync.Once
	readers   sync.WaitGroup

	arenaMu  sync.RWMutex // guards the mappings against munmap
	unmapped bool

	// CPU slots (LimitCPU): a fresh GET needs one; a timed-out sample keeps
	// its slot while its process is computing and gives it up once the
	// process is found waiting (I/O, sleep), so spare processes add
	// concurrency only where it buys something.
	slots   chan struct{}
	watchMu sync.Mutex
	watch   map[*call]struct{} // timed-out calls still holding a slot
	monitor sync.WaitGroup
}

var _ pipeline.Source = (*Pool)(nil)

type worker struct {
	id    int
	pid   int
	f     *os.File
	arena []byte
	out   [getFrame]byte // the GET being sent; used only by the Load holding the worker

	mu   sync.Mutex
	cur  *call // the outstanding GET
	dead error // set when the reader has stopped with this error
}

// call is one GET in flight. It is what a timed-out Load leaves in
// Sample.Resume.
type call struct {
	p         *Pool
	w         *worker
	seq       uint64
	done      chan reply  // capacity 1; receives exactly one reply unless abandoned
	abandoned bool        // guarded by w.mu
	slot      atomic.Bool // holds a CPU slot
	// The worker's CPU time (ns) and the wall clock at the last look,
	// for telling a computing process from a waiting one.
	cpu  int64
	seen time.Time
}

type reply struct {
	err    error
	offset uint64
	length uint64
}

// New starts a pool over procs; length is the dataset's length. It maps
// every arena and starts one reader per process, and returns without
// waiting for the processes' HELLOs (see Ready). The pool owns every
// procs[i].FD from here on, also when New fails.
func New(procs []Proc, length int64) (*Pool, error) {
	p := &Pool{
		length: length,
		idle:   make(chan *worker, len(procs)),
		spare:  make(chan *worker, len(procs)),

		broken: make(chan struct{}),
		closed: make(chan struct{}),
	}
	var err error
	switch {
	case len(procs) == 0:
		err = errors.New("remote: no worker processes")
	case length < 0:
		err = fmt.Errorf("remote: negative length %d", length)
	}
	for i, pr := range procs {
		w := &worker{id: i, pid: pr.PID}
		p.workers = append(p.workers, w)
		if pr.FD < 0 {
			err = firstErr(err, fmt.Errorf("remote: worker %d: bad fd %d", i, pr.FD))
			continue
		}
		if err != nil {
			syscall.Close(pr.FD)
			continue
		}
		if e := syscall.SetNonblock(pr.FD, true); e != nil {
			syscall.Close(pr.FD)
			err = fmt.Errorf("remote: worker %d: set nonblocking: %w", i, e)
			continue
		}
		w.f = os.NewFile(uintptr(pr.FD), fmt.Sprintf("worker%d", i))
		if pr.ArenaSize < blockHeader || pr.ArenaSize != int64(int(pr.ArenaSize)) {
			err = fmt.Errorf("remote: worker %d: bad arena size %d", i, pr.ArenaSize)
			continue
		}
		m, e := syscall.Mmap(pr.ArenaFD, 0, int(pr.ArenaSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		if e != nil {
			err = fmt.Errorf("remote: worker %d: mmap arena (fd %d, %d bytes): %w", i, pr.ArenaFD, pr.ArenaSize, e)
			continue
		}
		w.arena = m
	}
	if err != nil {
		for _, w := range p.workers {
			if w.f != nil {
				w.f.Close()
			}
			if w.arena != nil {
				syscall.Munmap(w.arena)
			}
		}
		return nil, err
	}
	p.primary.Store(int64(len(procs)))
	for _, w := range p.workers {
		p.readers.Go(func() { p.read(w) })
	}
	return p, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Len is the dataset's length.
func (p *Pool) Len() int64 { return p.length }

// Fields is one int64 field "ticket" of shape [4]: {worker id, block
// offset, payload length, seq}.
func (p *Pool) Fields() []batch.FieldSpec {
	return []batch.FieldSpec{{Name: "ticket", DType: config.DTypes["int64"], Shape: []int64{4}}}
}

// Steps is nil: the sample's whole pipeline runs in the worker.
func (p *Pool) Steps() []pipeline.Step { return nil }

// Ready is the number of workers that have sent a successful HELLO.
func (p *Pool) Ready() int { return int(p.ready.Load()) }

// Err is the error that broke the pool (a worker's setup failure or death,
// or a malformed message), ErrClosed once closed, or nil.
func (p *Pool) Err() error {
	select {
	case <-p.closed:
		return ErrClosed
	default:
	}
	select {
	case <-p.broken:
		return p.brokenErr
	default:
		return nil
	}
}

const ticketBytes = 32

// Load dispatches sample index to an idle worker and waits for its reply,
// then writes the sample's ticket into s.Fields[0]. With a deadline (fast
// lane) it gives up after the Ctx's budget, counted from when the GET is
// sent, returning pipeline.ErrTimedOut with the call in s.Resume; a later
// Load with that Resume waits for the same reply.
func (p *Pool) Load(c *pipeline.Ctx, index int64, s *pipeline.Sample) error {
	if len(s.Fields) < 1 || len(s.Fields[0].Data) < ticketBytes {
		return fmt.Errorf("remote: sample %d: the ticket field needs %d bytes", index, ticketBytes)
	}
	if cl, ok := s.Resume.(*call); ok && cl.p == p {
		s.Resume = nil
		return p.wait(c, cl, s, nil)
	}
	var budget time.Duration
	d, hasBudget := c.Deadline()
	if hasBudget {
		budget = time.Until(d)
	}
	if err := p.Err(); err != nil {
		return err
	}
	cl := &call{p: p, done: make(chan reply, 1)}
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
			cl.slot.Store(true)
		case <-c.Done():
			return context.Canceled
		case <-p.broken:
			return p.Err()
		case <-p.closed:
			return ErrClosed
		}
	}
	var w *worker
	select {
	case w = <-p.idle: // a fast-lane process first: spares only when none is free
	default:
		select {
		case w = <-p.idle:
		case w = <-p.spare:
		case <-c.Done():
			p.releaseSlot(cl)
			return context.Canceled
		case <-p.broken:
			p.releaseSlot(cl)
			return p.Err()
		case <-p.closed:
			p.releaseSlot(cl)
			return ErrClosed
		}
	}
	if err := p.Err(); err != nil {
		p.putIdle(w)
		p.releaseSlot(cl)
		return err
	}
	cl.w, cl.seq = w, p.seq.Add(1)
	w.mu.Lock()
	if w.dead != nil {
		err := w.dead
		w.mu.Unlock()
		p.releaseSlot(cl)
		return err
	}
	w.cur = cl
	w.mu.Unlock()
	if p.slots != nil {
		cl.cpu, _ = cpuNS(w.pid)
		cl.seen = time.Now()
	}
	putGet(&w.out, cl.seq, c.Epoch, index, c.Rand.Uint64())
	if _, err := w.f.Write(w.out[:]); err != nil {
		p.releaseSlot(cl)
		w.mu.Lock()
		if w.cur == cl {
			w.cur = nil
		}
		w.mu.Unlock()
		if p.Err() == ErrClosed {
			return ErrClosed
		}
		died := &WorkerDiedError{Worker: w.id, PID: w.pid}
		p.fail(died)
		return died
	}
	if !hasBudget {
		return p.wait(c, cl, s, nil)
	}
	t := time.NewTimer(budget)
	defer t.Stop()
	return p.wait(c, cl, s, t.C)
}

// wait waits for cl's reply, or for timeout (the call then goes to
// s.Resume), the epoch's cancellation, the pool breaking or closing (the
// call is then abandoned: its block, if any, is freed when it comes).
func (p *Pool) wait(c *pipeline.Ctx, cl *call, s *pipeline.Sample, timeout <-chan time.Time) error {
	var r reply
	select {
	case r = <-cl.done:
	default:
		select {
		case r = <-cl.done:
		case <-timeout:
			select {
			case r = <-cl.done:
			default:
				p.timedOut(cl)
				s.Resume = cl
				return pipeline.ErrTimedOut
			}
		case <-c.Done():
			if p.abandon(cl, &r) {
				return context.Canceled
			}
		case <-p.broken:
			if p.abandon(cl, &r) {
				return p.Err()
			}
		case <-p.closed:
			if p.abandon(cl, &r) {
				return ErrClosed
			}
		}
	}
	if r.err != nil {
		return r.err
	}
	t := s.Fields[0].Data
	binary.LittleEndian.PutUint64(t[0:], uint64(cl.w.id))
	binary.LittleEndian.PutUint64(t[8:], r.offset)
	binary.LittleEndian.PutUint64(t[16:], r.length)
	binary.LittleEndian.PutUint64(t[24:], cl.seq)
	return nil
}

// abandon gives up on cl. It reports true when the reply has not come yet
// (the reader frees its block when it does); false when the reply was
// already delivered, in which case it is stored in *r and the caller should
// use it rather than waste a finished sample.
func (p *Pool) abandon(cl *call, r *reply) bool {
	w := cl.w
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case *r = <-cl.done:
		return false
	default:
		cl.abandoned = true
		return true
	}
}

// fail breaks the pool with err (the first error wins).
func (p *Pool) fail(err error) {
	p.breakOnce.Do(func() {
		p.brokenErr = err
		close(p.broken)
	})
}

func (p *Pool) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// read is worker w's reader: HELLO first, then REPLYs.
func (p *Pool) read(w *worker) {
	br := bufio.NewReaderSize(w.f, 4096)
	var buf []byte
	stop := func(err error) {
		w.mu.Lock()
		w.dead = err
		cl := w.cur
		w.cur = nil
		if cl != nil {
			p.releaseSlot(cl)
		}
		if cl != nil && !cl.abandoned {
			cl.done <- reply{err: err}
		}
		w.mu.Unlock()
		p.fail(err)
	}
	hello := false
	for {
		b, err := readFrame(br, buf)
		if err != nil {
			if p.isClosed() {
				stop(ErrClosed)
				return
			}
			if errors.Is(err, errFrame) {
				stop(fmt.Errorf("remote: worker %d (pid %d): malformed message: %w", w.id, w.pid, err))
			} else {
				stop(&WorkerDiedError{Worker: w.id, PID: w.pid})
			}
			return
		}
		if cap(b) <= 4096 {
			buf = b[:0]
		}
		m, err := parseMessage(b)
		if err == nil {
			switch {
			case !hello && m.kind != kindHello:
				err = fmt.Errorf("kind %d before HELLO", m.kind)
			case hello && m.kind == kindHello:
				err = errors.New("a second HELLO")
			}
		}
		if err != nil {
			stop(fmt.Errorf("remote: worker %d (pid %d): malformed message: %w", w.id, w.pid, err))
			return
		}
		if m.kind == kindHello {
			hello = true
			if m.status != statusOK {
				stop(newPythonError(w, m.text, true))
				return
			}
			p.ready.Add(1)
			p.putIdle(w)
			continue
		}
		// A REPLY.
		var r reply
		if m.status == statusOK {
			if !validBlock(w.arena, m.offset, m.length) {
				stop(fmt.Errorf("remote: worker %d (pid %d): malformed message: block at %d of %d bytes outside the %d-byte arena",
					w.id, w.pid, m.offset, m.length, len(w.arena)))
				return
			}
			r.offset, r.length = m.offset, m.length
		} else {
			r.err = newPythonError(w, m.text, false)
		}
		w.mu.Lock()
		cl := w.cur
		if cl == nil || cl.seq != m.seq {
			w.mu.Unlock()
			stop(fmt.Errorf("remote: worker %d (pid %d): malformed message: REPLY seq %d to no outstanding GET", w.id, w.pid, m.seq))
			return
		}
		w.cur = nil
		p.releaseSlot(cl)
		if cl.abandoned {
			w.mu.Unlock()
			if r.err == nil {
				p.free(w, r.offset, m.seq)
			}
		} else {
			cl.done <- r
			w.mu.Unlock()
		}
		p.putIdle(w)
	}
}

// putIdle returns w to the idle processes: the fast lane's or the spares'.
func (p *Pool) putIdle(w *worker) {
	if int64(w.id) < p.primary.Load() {
		p.idle <- w
	} else {
		p.spare <- w
	}
}

// Close stops the pool: pending and later Loads return ErrClosed, every
// worker's socket is closed (the workers see EOF and exit), and the arenas
// are unmapped once the readers have stopped. Idempotent.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		close(p.closed)
		for _, w := range p.workers {
			// Shut the socket down before closing our fd: a worker forked
			// after this one may hold a copy of our end, and only a
			// shutdown makes the worker see EOF through it.
			if rc, err := w.f.SyscallConn(); err == nil {
				rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
			}
			w.f.Close()
		}
		p.readers.Wait()
		p.monitor.Wait()
		p.arenaMu.Lock()
		p.unmapped = true
		for _, w := range p.workers {
			syscall.Munmap(w.arena)
			w.arena = nil
		}
		p.arenaMu.Unlock()
	})
	return nil
}
