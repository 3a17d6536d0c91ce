package datasets

import (
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/remote"
)

// Kind "python": a Python Dataset in worker processes, one sample per
// request (docs/worker-protocol.md). The loader owns the channels.
func init() {
	builders["python"] = func(d config.Dataset) (pipeline.Source, error) {
		procs := make([]remote.Proc, len(d.Procs))
		for i, p := range d.Procs {
			procs[i] = remote.Proc{FD: p.FD, PID: p.PID, ArenaFD: p.ArenaFD, ArenaSize: p.ArenaSize}
		}
		p, err := remote.New(procs, d.Length)
		if err != nil {
			return nil, err
		}
		p.LimitCPU(d.CPUSlots)
		return p, nil
	}
}
