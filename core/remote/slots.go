package remote

// CPU slots: at most n samples compute at once; a process blocked in
// I/O gives its slot to a spare.

import (
	"os"
	"strconv"
	"time"
)

// LimitCPU makes at most n samples compute at once (n is the fast lane's
// width, torch's num_workers); the processes beyond n (spares) then run
// only samples whose predecessors were found waiting rather than
// computing. Call it once, before the first Load. n < 1 lifts the limit.
func (p *Pool) LimitCPU(n int) {
	if n < 1 || n >= len(p.workers) {
		return
	}
	p.slots = make(chan struct{}, n)
	p.primary.Store(int64(n))
	p.watch = map[*call]struct{}{}
	p.monitor.Go(p.watchSlots)
}

// minLook is the shortest window a busy share is judged on: the
// scheduler's time slices make shorter ones noisy.
const minLook = 20 * time.Millisecond

// busyShare is the fraction of the time since the last look that cl's
// process spent running or runnable; ok is false while the window is
// shorter than minLook. When the kernel does not say, the process counts
// as computing (it keeps its slot).
func (cl *call) busyShare(now time.Time) (share float64, ok bool) {
	dt := now.Sub(cl.seen)
	if dt < minLook {
		return 0, false
	}
	cpu, known := cpuNS(cl.w.pid)
	if !known {
		return 1, true
	}
	share = float64(cpu-cl.cpu) / float64(dt)
	cl.cpu, cl.seen = cpu, now
	return share, true
}

// waiting is the busy share below which a process counts as waiting.
const waiting = 0.5

// timedOut is called when cl's budget ran out: a waiting process gives its
// slot back at once, a computing one is watched until it waits or replies.
func (p *Pool) timedOut(cl *call) {
	if p.slots == nil || !cl.slot.Load() {
		return
	}
	if share, ok := cl.busyShare(time.Now()); ok && share < waiting {
		p.releaseSlot(cl)
		return
	}
	p.watchMu.Lock()
	p.watch[cl] = struct{}{}
	p.watchMu.Unlock()
}

func (p *Pool) releaseSlot(cl *call) {
	if cl.slot.CompareAndSwap(true, false) {
		<-p.slots
	}
}

// watchSlots re-looks at watched calls every few milliseconds.
func (p *Pool) watchSlots() {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.closed:
			return
		case now := <-t.C:
			p.watchMu.Lock()
			for cl := range p.watch {
				share, ok := cl.busyShare(now)
				if !cl.slot.Load() || (ok && share < waiting) {
					p.releaseSlot(cl)
					delete(p.watch, cl)
				}
			}
			p.watchMu.Unlock()
		}
	}
}

// cpuNS is the time pid's main thread spent running or runnable (waiting
// for a CPU) in ns: /proc/<pid>/schedstat's first two fields, nanosecond
// resolution where /proc/<pid>/stat has 10 ms ticks. A process blocked in
// I/O or sleep accrues neither; one that computes on a busy machine
// accrues both.
func cpuNS(pid int) (int64, bool) {
	var buf [96]byte
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0, false
	}
	n, _ := f.Read(buf[:])
	f.Close()
	var total int64
	fields := 0
	for i := 0; i < n && fields < 2; {
		j := i
		for j < n && buf[j] >= '0' && buf[j] <= '9' {
			j++
		}
		if j == i {
			return 0, false
		}
		v, err := strconv.ParseInt(string(buf[i:j]), 10, 64)
		if err != nil {
			return 0, false
		}
		total += v
		fields++
		i = j + 1
	}
	return total, fields == 2
}
