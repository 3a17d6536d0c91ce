package scale

import (
	"strings"
	"testing"
)

func TestDeltaTable(t *testing.T) {
	p := Params{Alpha: 2, Beta: 1, Theta: 0.7, Min: 1, Max: 8}
	tests := []struct {
		name            string
		qAvg, qMax, cpu float64
		want            int
	}{
		{"empty queue, busy cpu: grow by the clip", 0, 4, 1.0, 2},
		{"full queue, idle cpu: shrink", 4, 4, 0.0, -1},
		{"full queue, cpu at theta: hold", 4, 4, 0.7, 0},
		{"half queue, cpu at theta: +1", 2, 4, 0.7, 1},
		{"over-full reading is clamped", 9, 4, 0.7, 0},
	}
	for _, tt := range tests {
		if got := Delta(p, tt.qAvg, tt.qMax, tt.cpu); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
	big := Params{Alpha: 10, Beta: 10, Theta: 0}
	if got := Delta(big, 0, 1, 1); got != 2 {
		t.Errorf("clip: got %d, want 2", got)
	}
	if got := Delta(Params{Alpha: -10}, 0, 1, 0); got != -2 {
		t.Errorf("clip: got %d, want -2", got)
	}
}

func TestNextBounds(t *testing.T) {
	p := Params{Min: 1, Max: 4}
	for _, tt := range []struct{ w, d, want int }{{1, -2, 1}, {4, 2, 4}, {2, 1, 3}, {3, -1, 2}} {
		if got := Next(p, tt.w, tt.d); got != tt.want {
			t.Errorf("Next(%d,%d) = %d, want %d", tt.w, tt.d, got, tt.want)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	text := "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\nintr 1\n"
	got, err := ParseProcStat(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got.Busy != 150 || got.Total != 1000 {
		t.Fatalf("got %+v, want busy 150 total 1000", got)
	}
	next := CPUTimes{Busy: 250, Total: 1200}
	if u := Utilization(got, next); u != 0.5 {
		t.Fatalf("utilization %v, want 0.5", u)
	}
	if _, err := ParseProcStat(strings.NewReader("intr 1\n")); err == nil {
		t.Fatal("no error without a cpu line")
	}
	if _, err := ParseProcStat(strings.NewReader("cpu 1 x 3 4\n")); err == nil {
		t.Fatal("no error on a bad field")
	}
}

func TestCPUMeterReadsProc(t *testing.T) {
	var m CPUMeter
	m.Read()
	if u := m.Read(); u < 0 || u > 1 {
		t.Fatalf("utilization %v out of [0,1]", u)
	}
}

func TestEWMA(t *testing.T) {
	e := EWMA{Weight: 0.5}
	e.Add(4)
	if got := e.Add(0); got != 2 {
		t.Fatalf("got %v, want 2", got)
	}
}
