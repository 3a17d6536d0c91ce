package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/pipeline"
)

// ---- a fake Python worker, speaking docs/worker-protocol.md ----

const (
	fakeArena = 1 << 14
	fakeSlot  = 256 // the fake allocates fixed slots, first fit
	basePID   = 1000
)

type fakeOpts struct {
	helloFail  string        // HELLO status 1 with this error text
	helloDelay time.Duration // before the HELLO
	noHello    bool          // never say HELLO
	long       bool          // frame every message with the -1 (8-byte) header
	delay      map[int64]time.Duration
	gate       map[int64]chan struct{} // reply only once closed
	pyErr      map[int64]string        // reply status 1 with this error text
	die        map[int64]bool          // close the socket instead of replying
	raw        map[int64][]byte        // send these bytes (header included) instead of a reply
}

type get struct {
	seq          uint64
	epoch, index int64
	seed         uint64
}

type served struct {
	get
	offset, length uint64
}

type fake struct {
	opts     fakeOpts
	conn     *os.File
	arenaF   *os.File
	arena    []byte
	gets     chan get    // every GET as received
	served   chan served // every block replied
	quit     chan struct{}
	killOnce sync.Once
	done     chan struct{}
}

func newFake(t testing.TB, opts fakeOpts) (*fake, Proc) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	arenaF, err := os.CreateTemp(t.TempDir(), "arena")
	if err != nil {
		t.Fatal(err)
	}
	if err := arenaF.Truncate(fakeArena); err != nil {
		t.Fatal(err)
	}
	arena, err := syscall.Mmap(int(arenaF.Fd()), 0, fakeArena, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(fds[1], true); err != nil {
		t.Fatal(err)
	}
	f := &fake{
		opts:   opts,
		conn:   os.NewFile(uintptr(fds[1]), "fake"),
		arenaF: arenaF,
		arena:  arena,
		gets:   make(chan get, 1024),
		served: make(chan served, 1024),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	return f, Proc{FD: fds[0], ArenaFD: int(arenaF.Fd()), ArenaSize: fakeArena}
}

// kill closes the worker's end of the socket (the worker "dies").
func (f *fake) kill() { f.killOnce.Do(func() { f.conn.Close() }) }

// stop ends the fake and releases what it holds.
func (f *fake) stop() {
	select {
	case <-f.quit:
	default:
		close(f.quit)
	}
	f.kill()
	<-f.done
	syscall.Munmap(f.arena)
	f.arenaF.Close()
}

func (f *fake) state(off uint64) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&f.arena[off])))
}

func (f *fake) send(payload []byte) error {
	var hdr []byte
	if f.opts.long {
		hdr = binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(len(payload)))
	} else {
		hdr = binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	}
	_, err := f.conn.Write(append(hdr, payload...))
	return err
}

func le(vals ...uint64) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func u32pair(kind, status uint32) uint64 { return uint64(kind) | uint64(status)<<32 }

// alloc takes the first free slot and writes its header (state 1 last).
func (f *fake) alloc(index int64, seq uint64) (off, length uint64, ok bool) {
	length = 8 + uint64(index%5)*8
	for off = 0; off+fakeSlot <= fakeArena; off += fakeSlot {
		if f.state(off) != 0 {
			continue
		}
		binary.LittleEndian.PutUint32(f.arena[off+4:], uint32(seq)) // the tag: the GET's seq
		binary.LittleEndian.PutUint64(f.arena[off+8:], fakeSlot)
		binary.LittleEndian.PutUint64(f.arena[off+16:], length)
		binary.LittleEndian.PutUint64(f.arena[off+64:], uint64(index))
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&f.arena[off])), 1)
		return off, length, true
	}
	return 0, 0, false
}

func (f *fake) run(id int) {
	defer close(f.done)
	defer f.kill()
	pid := uint64(basePID + id)
	if f.opts.helloDelay > 0 {
		select {
		case <-time.After(f.opts.helloDelay):
		case <-f.quit:
			return
		}
	}
	if f.opts.noHello {
		<-f.quit
		return
	}
	if f.opts.helloFail != "" {
		f.send(append(le(u32pair(kindHello, 1), pid), f.opts.helloFail...))
		return
	}
	if f.send(le(u32pair(kindHello, 0), pid)) != nil {
		return
	}
	br := bufio.NewReader(f.conn)
	for {
		b, err := readFrame(br, nil)
		if err != nil {
			return
		}
		if len(b) != getSize || binary.LittleEndian.Uint32(b) != kindGet {
			panic("fake worker: not a GET")
		}
		g := get{
			seq:   binary.LittleEndian.Uint64(b[8:]),
			epoch: int64(binary.LittleEndian.Uint64(b[16:])),
			index: int64(binary.LittleEndian.Uint64(b[24:])),
			seed:  binary.LittleEndian.Uint64(b[32:]),
		}
		select { // the benchmark never reads these
		case f.gets <- g:
		default:
		}
		if d := f.opts.delay[g.index]; d > 0 {
			time.Sleep(d)
		}
		if ch := f.opts.gate[g.index]; ch != nil {
			select {
			case <-ch:
			case <-f.quit:
				return
			}
		}
		switch {
		case f.opts.die[g.index]:
			return
		case f.opts.raw[g.index] != nil:
			if _, err := f.conn.Write(f.opts.raw[g.index]); err != nil {
				return
			}
		case f.opts.pyErr[g.index] != "":
			if f.send(append(le(u32pair(kindReply, 1), g.seq, 0, 0), f.opts.pyErr[g.index]...)) != nil {
				return
			}
		default:
			off, length, ok := f.alloc(g.index, g.seq)
			if !ok {
				panic("fake worker: arena full")
			}
			select {
			case f.served <- served{g, off, length}:
			default:
			}
			if f.send(le(u32pair(kindReply, 0), g.seq, off, length)) != nil {
				return
			}
		}
	}
}

// startPool starts one fake per opts and a pool over them; everything is
// stopped at the end of the test.
func startPool(t testing.TB, opts ...fakeOpts) (*Pool, []*fake) {
	t.Helper()
	var fakes []*fake
	var procs []Proc
	for i, o := range opts {
		f, pr := newFake(t, o)
		pr.PID = basePID + i
		fakes = append(fakes, f)
		procs = append(procs, pr)
	}
	p, err := New(procs, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fakes {
		go f.run(i)
	}
	t.Cleanup(func() {
		p.Close()
		for _, f := range fakes {
			f.stop()
		}
	})
	return p, fakes
}

func ctxFor(epoch, index int64, deadline time.Time) *pipeline.Ctx {
	c := new(pipeline.Ctx)
	c.Reset(42, epoch, index, 0, deadline)
	return c
}

type ticket struct{ worker, offset, length, seq uint64 }

func ticketOf(s *pipeline.Sample) ticket {
	d := s.Fields[0].Data
	return ticket{
		binary.LittleEndian.Uint64(d[0:]), binary.LittleEndian.Uint64(d[8:]),
		binary.LittleEndian.Uint64(d[16:]), binary.LittleEndian.Uint64(d[24:]),
	}
}

func load(p *Pool, c *pipeline.Ctx, index int64) (pipeline.Sample, error) {
	s := pipeline.NewSample(p.Fields())
	err := p.Load(c, index, &s)
	return s, err
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// ---- tests ----

func TestSourceShape(t *testing.T) {
	p, _ := startPool(t, fakeOpts{})
	if p.Len() != 100 || p.Steps() != nil {
		t.Fatalf("Len %d Steps %v", p.Len(), p.Steps())
	}
	f := p.Fields()
	if len(f) != 1 || f[0].Name != "ticket" || f[0].DType.Bits != 64 || f[0].DType.Code != 0 ||
		len(f[0].Shape) != 1 || f[0].Shape[0] != 4 || f[0].Bytes() != 32 {
		t.Fatalf("Fields %+v", f)
	}
	waitFor(t, "HELLO", func() bool { return p.Ready() == 1 })
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
}

func TestLoadTicket(t *testing.T) {
	for _, tc := range []struct {
		name  string
		long  bool
		epoch int64
		index []int64
	}{
		{"short frames", false, 0, []int64{0, 1, 2, 99}},
		{"long frames", true, 7, []int64{5, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, fakes := startPool(t, fakeOpts{long: tc.long})
			f := fakes[0]
			for _, idx := range tc.index {
				c := ctxFor(tc.epoch, idx, time.Now().Add(5*time.Second))
				rng := c.Rand
				wantSeed := rng.Uint64()
				s, err := load(p, c, idx)
				if err != nil {
					t.Fatal(err)
				}
				sv := <-f.served
				if sv.epoch != tc.epoch || sv.index != idx || sv.seed != wantSeed {
					t.Fatalf("GET %+v, want epoch %d index %d seed %d", sv.get, tc.epoch, idx, wantSeed)
				}
				want := ticket{0, sv.offset, sv.length, sv.seq}
				if got := ticketOf(&s); got != want {
					t.Fatalf("ticket %+v, want %+v", got, want)
				}
				if s.Resume != nil {
					t.Fatal("Resume left set")
				}
				if f.state(sv.offset) != 1 || binary.LittleEndian.Uint64(f.arena[sv.offset+64:]) != uint64(idx) {
					t.Fatal("block not in use / wrong payload")
				}
			}
		})
	}
}

func TestSeqIsPoolWide(t *testing.T) {
	p, _ := startPool(t, fakeOpts{}, fakeOpts{})
	seen := map[uint64]bool{}
	for i := range int64(20) {
		s, err := load(p, ctxFor(0, i, time.Time{}), i)
		if err != nil {
			t.Fatal(err)
		}
		tk := ticketOf(&s)
		if seen[tk.seq] {
			t.Fatalf("seq %d reused", tk.seq)
		}
		seen[tk.seq] = true
		p.DropTicket([][]byte{s.Fields[0].Data})
	}
}

func TestTimeoutResume(t *testing.T) {
	gate := make(chan struct{})
	slow := fakeOpts{gate: map[int64]chan struct{}{7: gate}}
	p, fakes := startPool(t, slow, slow)
	waitFor(t, "HELLOs", func() bool { return p.Ready() == 2 })

	s := pipeline.NewSample(p.Fields())
	err := p.Load(ctxFor(1, 7, time.Now().Add(30*time.Millisecond)), 7, &s)
	if !errors.Is(err, pipeline.ErrTimedOut) {
		t.Fatalf("slow sample: %v, want ErrTimedOut", err)
	}
	cl, ok := s.Resume.(*call)
	if !ok {
		t.Fatalf("Resume %T", s.Resume)
	}
	// The fast lane keeps going on the spare worker.
	for i := range int64(3) {
		fs, err := load(p, ctxFor(1, i, time.Now().Add(5*time.Second)), i)
		if err != nil {
			t.Fatal(err)
		}
		if w := ticketOf(&fs).worker; w == uint64(cl.w.id) {
			t.Fatalf("fast sample ran on worker %d, busy with the slow one", w)
		}
	}
	// The slow lane resumes, without a deadline, and gets the same call.
	close(gate)
	if err := p.Load(ctxFor(1, 7, time.Time{}), 7, &s); err != nil {
		t.Fatal(err)
	}
	tk := ticketOf(&s)
	sv := <-fakes[cl.w.id].served
	if want := (ticket{uint64(cl.w.id), sv.offset, sv.length, cl.seq}); tk != want || sv.seq != cl.seq || sv.index != 7 {
		t.Fatalf("resumed ticket %+v (served %+v), want %+v", tk, sv, want)
	}
	if s.Resume != nil {
		t.Fatal("Resume left set")
	}
}

// Waiting for an idle process does not count against a sample's budget.
func TestBudgetExcludesWait(t *testing.T) {
	gate := make(chan struct{})
	p, fakes := startPool(t, fakeOpts{gate: map[int64]chan struct{}{7: gate}})
	first := make(chan error, 1)
	go func() {
		_, err := load(p, ctxFor(0, 7, time.Time{}), 7)
		first <- err
	}()
	<-fakes[0].gets // the only worker is busy
	second := make(chan error, 1)
	go func() {
		_, err := load(p, ctxFor(0, 1, time.Now().Add(50*time.Millisecond)), 1)
		second <- err
	}()
	time.Sleep(150 * time.Millisecond)
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("sample that waited for a process: %v", err)
	}
}

func TestPythonError(t *testing.T) {
	for _, tc := range []struct {
		name, text, module, qualname, tb string
	}{
		{"traceback", "builtins:ValueError\nTraceback (most recent call last):\n  File \"x.py\"\nValueError: bad\n",
			"builtins", "ValueError", "Traceback (most recent call last):\n  File \"x.py\"\nValueError: bad\n"},
		{"no newline", "mymod:Outer.Err", "mymod", "Outer.Err", ""},
		{"no colon", "Err\ntb", "", "Err", "tb"},
		{"empty", "", "", "", ""},
		{"utf8", "m:E\nüñí\n", "m", "E", "üñí\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.text
			if text == "" {
				text = "\n" // the fake treats "" as "no error"; "\n" splits into "", ""
			}
			p, _ := startPool(t, fakeOpts{pyErr: map[int64]string{4: text}})
			_, err := load(p, ctxFor(0, 4, time.Time{}), 4)
			var pe *PythonError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want *PythonError", err, err)
			}
			want := &PythonError{Worker: 0, PID: basePID, Module: tc.module, Qualname: tc.qualname, Traceback: tc.tb}
			if *pe != *want {
				t.Fatalf("got %+v, want %+v", pe, want)
			}
			typ, _, _ := strings.Cut(text, "\n")
			if got, wantS := err.Error(), "python exception "+typ+" in worker 0 (pid 1000)\n"+tc.tb; got != wantS {
				t.Fatalf("Error() %q, want %q", got, wantS)
			}
			// A sample error does not break the pool; the worker serves on.
			if _, err := load(p, ctxFor(0, 5, time.Time{}), 5); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestWorkerDied(t *testing.T) {
	died := func(t *testing.T, err error, worker int) {
		t.Helper()
		var we *WorkerDiedError
		if !errors.As(err, &we) || *we != (WorkerDiedError{worker, basePID + worker}) {
			t.Fatalf("error %v, want worker %d died", err, worker)
		}
		if want := fmt.Sprintf("DataLoader worker %d (pid %d) exited unexpectedly", worker, basePID+worker); err.Error() != want {
			t.Fatalf("Error() %q, want %q", err.Error(), want)
		}
	}
	t.Run("mid-call", func(t *testing.T) {
		p, _ := startPool(t, fakeOpts{die: map[int64]bool{3: true}})
		_, err := load(p, ctxFor(0, 3, time.Now().Add(5*time.Second)), 3)
		died(t, err, 0)
		_, err = load(p, ctxFor(0, 1, time.Time{}), 1)
		died(t, err, 0)
	})
	t.Run("mid-call after timeout", func(t *testing.T) {
		p, _ := startPool(t, fakeOpts{die: map[int64]bool{3: true}, delay: map[int64]time.Duration{3: 100 * time.Millisecond}})
		s := pipeline.NewSample(p.Fields())
		if err := p.Load(ctxFor(0, 3, time.Now().Add(10*time.Millisecond)), 3, &s); !errors.Is(err, pipeline.ErrTimedOut) {
			t.Fatal(err)
		}
		died(t, p.Load(ctxFor(0, 3, time.Time{}), 3, &s), 0)
	})
	t.Run("while idle", func(t *testing.T) {
		p, fakes := startPool(t, fakeOpts{}, fakeOpts{})
		waitFor(t, "HELLOs", func() bool { return p.Ready() == 2 })
		fakes[1].kill()
		waitFor(t, "the pool to break", func() bool { return p.Err() != nil })
		start := time.Now()
		_, err := load(p, ctxFor(0, 0, time.Time{}), 0)
		died(t, err, 1)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("took %v", d)
		}
	})
	t.Run("before HELLO", func(t *testing.T) {
		p, fakes := startPool(t, fakeOpts{noHello: true})
		res := make(chan error, 1)
		go func() {
			_, err := load(p, ctxFor(0, 0, time.Time{}), 0)
			res <- err
		}()
		time.Sleep(10 * time.Millisecond)
		fakes[0].kill()
		died(t, <-res, 0)
	})
}

func TestHelloFailure(t *testing.T) {
	p, _ := startPool(t, fakeOpts{}, fakeOpts{
		helloFail:  "builtins:RuntimeError\nTraceback...\nRuntimeError: init\n",
		helloDelay: 20 * time.Millisecond,
	})
	res := make(chan error, 1)
	go func() { // waits for the HELLOs
		_, err := load(p, ctxFor(0, 0, time.Time{}), 0)
		res <- err
	}()
	waitFor(t, "the pool to break", func() bool { return p.Err() != nil })
	err := p.Err()
	want := "worker_init_fn or setup failed in DataLoader worker process 1 (pid 1001): " +
		"python exception builtins:RuntimeError in worker 1 (pid 1001)\nTraceback...\nRuntimeError: init\n"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	var pe *PythonError
	wantPE := PythonError{Worker: 1, PID: basePID + 1, Module: "builtins", Qualname: "RuntimeError",
		Traceback: "Traceback...\nRuntimeError: init\n", Init: true}
	if !errors.As(err, &pe) || *pe != wantPE {
		t.Fatalf("errors.As: %+v", pe)
	}
	if r := <-res; r != nil && r != err {
		t.Fatalf("pending Load: %v", r) // nil if worker 0 served it before the failure
	}
	if _, err2 := load(p, ctxFor(0, 1, time.Time{}), 1); err2 != err {
		t.Fatalf("later Load: %v", err2)
	}
}

func TestCancel(t *testing.T) {
	gate := make(chan struct{})
	p, fakes := startPool(t, fakeOpts{gate: map[int64]chan struct{}{7: gate}})
	f := fakes[0]
	done := make(chan struct{})
	c := ctxFor(0, 7, time.Time{})
	c.SetDone(done)
	res := make(chan error, 2)
	go func() { _, err := load(p, c, 7); res <- err }()
	<-f.gets
	c2 := ctxFor(0, 8, time.Time{}) // waiting for the busy worker
	c2.SetDone(done)
	go func() { _, err := load(p, c2, 8); res <- err }()
	time.Sleep(10 * time.Millisecond)
	close(done)
	for range 2 {
		if err := <-res; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Load: %v", err)
		}
	}
	// The late reply's block is freed and the worker is reused.
	close(gate)
	sv := <-f.served
	waitFor(t, "the abandoned block to be freed", func() bool { return f.state(sv.offset) == 0 })
	s, err := load(p, ctxFor(0, 1, time.Time{}), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk := ticketOf(&s); tk.worker != 0 || tk.offset != sv.offset {
		t.Fatalf("ticket %+v, want the freed block at %d reused", tk, sv.offset)
	}
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
}

func TestAbandonResume(t *testing.T) {
	for _, early := range []bool{true, false} {
		gate := make(chan struct{})
		p, fakes := startPool(t, fakeOpts{gate: map[int64]chan struct{}{7: gate}})
		s := pipeline.NewSample(p.Fields())
		if err := p.Load(ctxFor(0, 7, time.Now().Add(10*time.Millisecond)), 7, &s); !errors.Is(err, pipeline.ErrTimedOut) {
			t.Fatal(err)
		}
		if !early {
			close(gate)
			time.Sleep(20 * time.Millisecond) // the reply is delivered first
		}
		p.Abandon(s.Resume)
		p.Abandon("not a call")
		if early {
			close(gate)
		}
		sv := <-fakes[0].served
		waitFor(t, "the abandoned block to be freed", func() bool { return fakes[0].state(sv.offset) == 0 })
	}
}

func TestDrop(t *testing.T) {
	p, fakes := startPool(t, fakeOpts{})
	s, err := load(p, ctxFor(0, 2, time.Time{}), 2)
	if err != nil {
		t.Fatal(err)
	}
	tk := ticketOf(&s)
	if fakes[0].state(tk.offset) != 1 {
		t.Fatal("block not in use")
	}
	// Tickets that name no block are ignored.
	for _, bad := range [][][]byte{
		nil, {}, {make([]byte, 8)},
		{le(5, 0, 0, 0)},
		{le(0, fakeArena, 0, 0)},
		{le(0, fakeArena-8, 0, 0)},
		{le(0, 3, 0, 0)},
		{le(0, ^uint64(0), 0, 0)},
	} {
		p.DropTicket(bad)
	}
	if fakes[0].state(tk.offset) != 1 {
		t.Fatal("block freed by a bad ticket")
	}
	p.DropTicket([][]byte{s.Fields[0].Data})
	if fakes[0].state(tk.offset) != 0 {
		t.Fatal("Drop did not free the block")
	}
	p.Close()
	p.DropTicket([][]byte{s.Fields[0].Data}) // after Close: a no-op
}

func TestMalformed(t *testing.T) {
	frame := func(payload []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"unknown kind", frame(le(u32pair(9, 0), 1, 0, 0)), "unknown message kind 9"},
		{"second HELLO", frame(le(u32pair(kindHello, 0), 1)), "a second HELLO"},
		{"wrong seq", frame(le(u32pair(kindReply, 0), 999, 0, 8)), "REPLY seq 999"},
		{"exhausted", frame(le(u32pair(kindReply, 2), 1, 0, 0)), "status 2"},
		{"bad status", frame(le(u32pair(kindReply, 7), 1, 0, 0)), "REPLY status 7"},
		{"short reply", frame(le(u32pair(kindReply, 0), 1)), "REPLY of 16 bytes"},
		{"block outside arena", frame(le(u32pair(kindReply, 0), 1, fakeArena-32, 0)), "outside"},
		{"payload outside arena", frame(le(u32pair(kindReply, 0), 1, 0, fakeArena)), "outside"},
		{"negative length", binary.BigEndian.AppendUint32(nil, 0xFFFFFFFE), "bad frame length"},
		{"huge long length", binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF), 1<<40), "bad frame length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := startPool(t, fakeOpts{raw: map[int64][]byte{0: tc.raw}})
			_, err := load(p, ctxFor(0, 0, time.Time{}), 0)
			if err == nil || !strings.Contains(err.Error(), "malformed message") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a malformed message (%s)", err, tc.want)
			}
			if _, err2 := load(p, ctxFor(0, 1, time.Time{}), 1); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("later Load: %v", err2)
			}
		})
	}
}

func TestCloseUnblocks(t *testing.T) {
	before := runtime.NumGoroutine()
	gate := make(chan struct{})
	var fakes []*fake
	var procs []Proc
	for i := range 2 {
		f, pr := newFake(t, fakeOpts{gate: map[int64]chan struct{}{7: gate, 9: gate}})
		pr.PID = basePID + i
		fakes, procs = append(fakes, f), append(procs, pr)
	}
	p, err := New(procs, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fakes {
		go f.run(i)
	}
	waitFor(t, "HELLOs", func() bool { return p.Ready() == 2 })
	res := make(chan error, 3)
	// A timed-out sample, resumed on the slow lane: waits for its reply.
	s := pipeline.NewSample(p.Fields())
	if err := p.Load(ctxFor(0, 9, time.Now().Add(5*time.Millisecond)), 9, &s); !errors.Is(err, pipeline.ErrTimedOut) {
		t.Fatal(err)
	}
	go func() { res <- p.Load(ctxFor(0, 9, time.Time{}), 9, &s) }()
	// A sample waiting for its reply.
	go func() { _, err := load(p, ctxFor(0, 7, time.Time{}), 7); res <- err }()
	waitFor(t, "both workers busy", func() bool { return len(fakes[0].gets)+len(fakes[1].gets) == 2 })
	// A sample waiting for an idle worker.
	go func() { _, err := load(p, ctxFor(0, 8, time.Now().Add(time.Millisecond)), 8); res <- err }()
	time.Sleep(20 * time.Millisecond)
	var wg sync.WaitGroup
	for range 3 { // Close is idempotent and safe concurrently
		wg.Go(func() {
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for range 3 {
		if err := <-res; !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked Load: %v", err)
		}
	}
	if _, err := load(p, ctxFor(0, 1, time.Time{}), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Load after Close: %v", err)
	}
	if !errors.Is(p.Err(), ErrClosed) {
		t.Fatal(p.Err())
	}
	for _, f := range fakes {
		f.stop()
	}
	waitFor(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() <= before })
}

func TestNewErrors(t *testing.T) {
	if _, err := New(nil, 1); err == nil {
		t.Fatal("no procs: no error")
	}
	for _, tc := range []struct {
		name string
		mod  func(*Proc)
	}{
		{"arena too small", func(p *Proc) { p.ArenaSize = 8 }},
		{"bad arena fd", func(p *Proc) { p.ArenaFD = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f1, p1 := newFake(t, fakeOpts{})
			f2, p2 := newFake(t, fakeOpts{})
			tc.mod(&p1)
			if _, err := New([]Proc{p1, p2}, 1); err == nil {
				t.Fatal("no error")
			}
			// New closed both of its fds: each peer reads EOF.
			for _, f := range []*fake{f1, f2} {
				f.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				if n, err := f.conn.Read(make([]byte, 1)); n != 0 || err != io.EOF {
					t.Fatalf("peer read %d, %v; want EOF", n, err)
				}
				close(f.done)
				f.stop()
			}
		})
	}
}

func TestLoadNeedsTicketField(t *testing.T) {
	p, _ := startPool(t, fakeOpts{})
	for _, s := range []pipeline.Sample{{}, {Fields: []pipeline.Array{{Data: make([]byte, 16)}}}} {
		if err := p.Load(ctxFor(0, 0, time.Time{}), 0, &s); err == nil {
			t.Fatal("no error")
		}
	}
}

func TestReadFrame(t *testing.T) {
	short := func(n uint32, payload string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, n), payload...)
	}
	long := func(n uint64, payload string) []byte {
		return append(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF), n), payload...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
		err  error
	}{
		{"short", short(3, "abc"), "abc", nil},
		{"empty payload", short(0, ""), "", nil},
		{"long", long(5, "hello"), "hello", nil},
		{"long empty", long(0, ""), "", nil},
		{"eof", nil, "", io.EOF},
		{"cut header", []byte{0, 0}, "", io.ErrUnexpectedEOF},
		{"cut long header", long(5, "")[:8], "", io.ErrUnexpectedEOF},
		{"cut payload", short(4, "ab"), "", io.ErrUnexpectedEOF},
		{"negative", short(0xFFFFFFFE, ""), "", errFrame},
		{"too long", short(maxMessage+1, ""), "", errFrame},
		{"long too long", long(1<<63, ""), "", errFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := readFrame(bufio.NewReader(bytes.NewReader(tc.in)), make([]byte, 0, 2))
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if err == nil && string(b) != tc.want {
				t.Fatalf("payload %q, want %q", b, tc.want)
			}
		})
	}
}

func TestPutGet(t *testing.T) {
	var b [getFrame]byte
	putGet(&b, 3, -1, 77, 1<<63)
	want := append(binary.BigEndian.AppendUint32(nil, getSize), le(u32pair(kindGet, 0), 3, ^uint64(0), 77, 1<<63)...)
	if !bytes.Equal(b[:], want) {
		t.Fatalf("GET % x\nwant % x", b, want)
	}
}

// ---- fuzzing ----

func FuzzParseMessage(f *testing.F) {
	f.Add(le(u32pair(kindHello, 0), 1234))
	f.Add(append(le(u32pair(kindHello, 1), 1234), "builtins:ValueError\ntb"...))
	f.Add(le(u32pair(kindReply, 0), 1, 64, 100))
	f.Add(append(le(u32pair(kindReply, 1), 1, 0, 0), "m:E\n"...))
	f.Add(le(u32pair(kindReply, 2), 1, 0, 0))
	f.Add(le(u32pair(kindGet, 0), 1, 0, 0, 0))
	f.Add([]byte{2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMessage(b)
		if err != nil {
			return
		}
		if len(b) < 16 || (m.kind != kindHello && m.kind != kindReply) || m.status > statusError {
			t.Fatalf("accepted %x as %+v", b, m)
		}
		if m.kind == kindReply && len(b) < replyHeader {
			t.Fatalf("short REPLY accepted: %x", b)
		}
		if m.status == statusError {
			typ, tb := splitError(m.text)
			if len(typ)+len(tb) > len(m.text) || strings.Contains(typ, "\n") {
				t.Fatalf("split %q into %q, %q", m.text, typ, tb)
			}
		}
		var enc, want []byte
		switch {
		case m.kind == kindHello && m.status == statusOK:
			enc, want = le(u32pair(kindHello, 0), m.pid), b[:helloHeader]
		case m.kind == kindHello:
			enc, want = append(le(u32pair(kindHello, 1), m.pid), m.text...), b
		case m.status == statusOK:
			enc, want = le(u32pair(kindReply, 0), m.seq, m.offset, m.length), b[:replyHeader]
		default:
			enc, want = append(append(le(u32pair(kindReply, 1), m.seq), b[16:32]...), m.text...), b
		}
		if !bytes.Equal(enc, want) {
			t.Fatalf("re-encoded %x, want %x", enc, want)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0})
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 2, 'h', 'i'})
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFE})
	f.Add([]byte{0x7F, 0xFF, 0xFF, 0xFF})
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReader(bytes.NewReader(in))
		consumed := 0
		for {
			b, err := readFrame(br, nil)
			if err != nil {
				return
			}
			consumed += 4 + len(b)
			if len(b) > maxMessage || consumed > len(in) {
				t.Fatalf("frame of %d bytes from %d input bytes", len(b), len(in))
			}
			if _, err := parseMessage(b); err == nil && len(b) < 16 {
				t.Fatalf("parsed a %d-byte message", len(b))
			}
		}
	})
}

// ---- benchmark ----

func BenchmarkRoundTrip(b *testing.B) {
	p, _ := startPool(b, fakeOpts{})
	s := pipeline.NewSample(p.Fields())
	fields := [][]byte{s.Fields[0].Data}
	c := ctxFor(0, 0, time.Time{})
	deadline := ctxFor(0, 0, time.Now().Add(time.Hour))
	for _, tc := range []struct {
		name string
		c    *pipeline.Ctx
	}{{"slow lane", c}, {"fast lane", deadline}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var i int64
			for b.Loop() {
				if err := p.Load(tc.c, i%100, &s); err != nil {
					b.Fatal(err)
				}
				p.DropTicket(fields)
				i++
			}
		})
	}
}
