package remote

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/pipeline"
)

// startPoolPIDs is startPool with the given pids (real processes, whose CPU
// use LimitCPU reads) and a CPU limit.
func startPoolPIDs(t *testing.T, slots int, pids []int, opts ...fakeOpts) (*Pool, []*fake) {
	t.Helper()
	var fakes []*fake
	var procs []Proc
	for i, o := range opts {
		f, pr := newFake(t, o)
		pr.PID = pids[i]
		fakes = append(fakes, f)
		procs = append(procs, pr)
	}
	p, err := New(procs, 100)
	if err != nil {
		t.Fatal(err)
	}
	p.LimitCPU(slots)
	for i, f := range fakes {
		if i > 0 {
			time.Sleep(20 * time.Millisecond) // worker 0 says HELLO first: it takes the first sample
		}
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

func proc(t *testing.T, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// A timed-out sample whose process computes keeps its CPU slot: the next
// sample waits for it instead of oversubscribing the cores. One whose
// process waits (I/O, sleep) gives the slot up and a spare takes the next.
func TestLimitCPU(t *testing.T) {
	if _, ok := cpuNS(1); !ok {
		t.Skip("/proc/<pid>/schedstat is not available")
	}
	for _, c := range []struct {
		name   string
		script string
		blocks bool
	}{
		{"computing", "while :; do :; done", true},
		{"waiting", "sleep 30", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			gate := make(chan struct{})
			slow := fakeOpts{gate: map[int64]chan struct{}{7: gate}}
			p, _ := startPoolPIDs(t, 1, []int{proc(t, c.script), proc(t, "sleep 30")}, slow, fakeOpts{})
			waitFor(t, "HELLOs", func() bool { return p.Ready() == 2 })
			time.Sleep(30 * time.Millisecond) // let the busy loop accrue CPU time
			s := pipeline.NewSample(p.Fields())
			err := p.Load(ctxFor(0, 7, time.Now().Add(100*time.Millisecond)), 7, &s)
			if !errors.Is(err, pipeline.ErrTimedOut) {
				t.Fatalf("slow sample: %v", err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := load(p, ctxFor(0, 1, time.Time{}), 1)
				done <- err
			}()
			select {
			case err := <-done:
				if c.blocks {
					t.Fatalf("the next sample started while the slow one computes (err %v)", err)
				}
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(300 * time.Millisecond):
				if !c.blocks {
					t.Fatal("the next sample waited although the slow one's process is idle")
				}
			}
			close(gate) // the slow sample ends: its slot frees
			if err := p.Load(ctxFor(0, 7, time.Time{}), 7, &s); err != nil {
				t.Fatal(err)
			}
			if c.blocks {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A free names the reply it was made for: a ticket whose block the worker
// has since reused for another GET frees nothing.
func TestStaleDropFreesNothing(t *testing.T) {
	p, fakes := startPool(t, fakeOpts{})
	waitFor(t, "HELLO", func() bool { return p.Ready() == 1 })
	s1, err := load(p, ctxFor(0, 1, time.Time{}), 1)
	if err != nil {
		t.Fatal(err)
	}
	stale := append([]byte(nil), s1.Fields[0].Data...)
	p.DropTicket([][]byte{stale})
	s2, err := load(p, ctxFor(0, 2, time.Time{}), 2)
	if err != nil {
		t.Fatal(err)
	}
	t1, t2 := ticketOf(&s1), ticketOf(&s2)
	if t1.offset != t2.offset {
		t.Fatalf("the fake did not reuse the block (%d, %d)", t1.offset, t2.offset)
	}
	p.DropTicket([][]byte{stale}) // late, for the old reply
	if st := fakes[0].state(t2.offset); st != 1 {
		t.Fatalf("a stale free released the reused block (state %d)", st)
	}
	p.DropTicket([][]byte{s2.Fields[0].Data})
	if st := fakes[0].state(t2.offset); st != 0 {
		t.Fatalf("the block's own free did not release it (state %d)", st)
	}
}
