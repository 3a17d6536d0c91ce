package sched_test

import (
	"context"
	"fmt"
	"io"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/sched"
)

func ExampleLoader() {
	cfg, err := config.Parse([]byte(`{"batch_size": 4, "workers": 2, "in_order": true,
		"dataset": {"length": 10, "shape": [2], "heavy_cost_us": 500, "heavy_every": 3}}`))
	if err != nil {
		panic(err)
	}
	var alloc batch.GoAllocator
	l, err := sched.Open(cfg, &alloc)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	l.StartEpoch(0)
	for {
		b, err := l.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(b.Seq, b.Field("data").Shape, b.Indices)
		b.Release()
	}
	// Output:
	// 0 [4 2] [0 1 2 3]
	// 1 [4 2] [4 5 6 7]
	// 2 [2 2] [8 9]
}
