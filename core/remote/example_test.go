package remote_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/remote"
)

// exampleWorker plays a Python worker (docs/worker-protocol.md): HELLO, then
// each GET is answered with a block holding the index, at offset 128.
func exampleWorker(conn *os.File, arena *os.File) {
	defer conn.Close()
	frame := func(payload ...uint64) {
		b := binary.BigEndian.AppendUint32(nil, uint32(8*len(payload)))
		for _, v := range payload {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		conn.Write(b)
	}
	frame(2, uint64(os.Getpid())) // HELLO: kind 2, status 0; pid
	for {
		get := make([]byte, 44)
		if _, err := io.ReadFull(conn, get); err != nil {
			return // EOF: the pool was closed
		}
		seq := binary.LittleEndian.Uint64(get[4+8:])
		index := binary.LittleEndian.Uint64(get[4+24:])
		const off, length = 128, 8
		block := make([]byte, 64+length)
		binary.LittleEndian.PutUint32(block[0:], 1) // state: in use
		binary.LittleEndian.PutUint64(block[8:], uint64(len(block)))
		binary.LittleEndian.PutUint64(block[16:], length)
		binary.LittleEndian.PutUint64(block[64:], index)
		arena.WriteAt(block, off)
		frame(3, seq, off, length) // REPLY: kind 3, status 0; seq, offset, length
	}
}

func Example() {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		panic(err)
	}
	arena, err := os.CreateTemp("", "arena") // a memfd in real use
	if err != nil {
		panic(err)
	}
	defer os.Remove(arena.Name())
	defer arena.Close()
	arena.Truncate(1 << 16)
	go exampleWorker(os.NewFile(uintptr(fds[1]), "worker"), arena)

	pool, err := remote.New([]remote.Proc{{
		FD: fds[0], PID: os.Getpid(), ArenaFD: int(arena.Fd()), ArenaSize: 1 << 16,
	}}, 10)
	if err != nil {
		panic(err)
	}
	defer pool.Close()

	var c pipeline.Ctx
	c.Reset(1, 0, 3, 0, time.Now().Add(time.Second)) // seed 1, epoch 0, index 3, step 0
	s := pipeline.NewSample(pool.Fields())
	if err := pool.Load(&c, 3, &s); err != nil {
		panic(err)
	}
	t := s.Fields[0].Data
	fmt.Printf("worker %d, block at %d, payload %d bytes, seq %d\n",
		binary.LittleEndian.Uint64(t[0:]), binary.LittleEndian.Uint64(t[8:]),
		binary.LittleEndian.Uint64(t[16:]), binary.LittleEndian.Uint64(t[24:]))
	pool.DropTicket([][]byte{t}) // never consumed: free the block
	// Output: worker 0, block at 128, payload 8 bytes, seq 1
}
