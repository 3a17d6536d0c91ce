// Package scale adapts the fast lane's worker count while it runs, with
// formulas (1)-(2) of the MinatoLoader paper (§4.3):
//
//	Δ = α·(1 − Qavg/Qmax) + β·(C − θ),  clipped to [−2, 2] and rounded
//	workers = min(max_workers, max(1, workers + Δ))
//
// Qavg is a moving average of the batch queue's occupancy, C the machine's
// CPU utilization in [0, 1] read from /proc/stat.
package scale

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// Params are the formula's constants.
type Params struct {
	Alpha, Beta, Theta float64
	Min, Max           int
}

// Delta is formula (2), clipped to [-2, 2] and rounded to an integer.
func Delta(p Params, qAvg, qMax, cpu float64) int {
	fill := 0.0
	if qMax > 0 {
		fill = min(max(qAvg/qMax, 0), 1)
	}
	d := p.Alpha*(1-fill) + p.Beta*(cpu-p.Theta)
	d = min(max(d, -2), 2)
	return int(math.Round(d))
}

// Next is formula (1).
func Next(p Params, workers, delta int) int {
	lo := max(p.Min, 1)
	return min(p.Max, max(lo, workers+delta))
}

// EWMA is an exponentially weighted moving average.
type EWMA struct {
	Weight float64 // of a new observation, in (0, 1]
	value  float64
	primed bool
}

// Add records x and returns the average.
func (e *EWMA) Add(x float64) float64 {
	if !e.primed {
		e.value, e.primed = x, true
	} else {
		e.value += e.Weight * (x - e.value)
	}
	return e.value
}

// CPUTimes are the aggregate jiffies of /proc/stat's "cpu" line.
type CPUTimes struct {
	Busy, Total uint64
}

// ParseProcStat reads the aggregate "cpu" line of /proc/stat.
func ParseProcStat(r io.Reader) (CPUTimes, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 || string(f[0]) != "cpu" {
			continue
		}
		var t CPUTimes
		for i, v := range f[1:] {
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("scale: /proc/stat field %d: %w", i+1, err)
			}
			t.Total += n
			// user nice system idle iowait irq softirq steal guest guest_nice:
			// idle (3) and iowait (4) are not busy; guest time is already
			// counted in user, so skip fields 8 and 9 from the total.
			switch i {
			case 3, 4:
			case 8, 9:
				t.Total -= n
			default:
				t.Busy += n
			}
		}
		return t, nil
	}
	if err := sc.Err(); err != nil {
		return CPUTimes{}, err
	}
	return CPUTimes{}, fmt.Errorf("scale: no aggregate cpu line in /proc/stat")
}

// Utilization is the busy share between two readings, in [0, 1].
func Utilization(prev, cur CPUTimes) float64 {
	if cur.Total <= prev.Total {
		return 0
	}
	return min(float64(cur.Busy-prev.Busy)/float64(cur.Total-prev.Total), 1)
}

// CPUMeter reads /proc/stat; each Read returns the utilization since the
// previous one. Not safe for concurrent use.
type CPUMeter struct {
	Path string // default /proc/stat
	prev CPUTimes
	ok   bool
}

// Read returns the machine's CPU utilization since the last Read (0 on the
// first call or when /proc/stat is unreadable, e.g. outside Linux).
func (m *CPUMeter) Read() float64 {
	path := m.Path
	if path == "" {
		path = "/proc/stat"
	}
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	cur, err := ParseProcStat(f)
	if err != nil {
		return 0
	}
	u := 0.0
	if m.ok {
		u = Utilization(m.prev, cur)
	}
	m.prev, m.ok = cur, true
	return u
}
