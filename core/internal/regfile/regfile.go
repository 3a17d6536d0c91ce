// Package regfile opens files that are safe to read whole: regular files
// only. A FIFO's open waits for a writer, a device such as /dev/zero never
// ends, so every dataset read goes through Open.
package regfile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError reports a path that is not a regular file; Mode is what
// it is (a symbolic link is judged by what it leads to).
type NotRegularError struct{ Mode fs.FileMode }

func (e *NotRegularError) Error() string {
	kind := ""
	switch m := e.Mode; {
	case m&fs.ModeNamedPipe != 0:
		kind = " (a FIFO)"
	case m&fs.ModeDevice != 0:
		kind = " (a device)"
	case m&fs.ModeSocket != 0:
		kind = " (a socket)"
	case m.IsDir():
		kind = " (a directory)"
	}
	return "not a regular file" + kind
}

// Open opens path for reading and returns it with its size, or a
// *NotRegularError (without the path: callers name it their way), or the
// os package's error. The mode is checked before the open (os.Stat) and,
// the file opened without blocking (O_NONBLOCK), again on the descriptor
// (fstat), so a FIFO swapped in between is refused too. The descriptor
// stays non-blocking, which changes nothing for a regular file.
func Open(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, &NotRegularError{Mode: st.Mode()}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &NotRegularError{Mode: st.Mode()}
		}
		return nil, 0, fmt.Errorf("fstat: %w", err)
	}
	return f, st.Size(), nil
}
