package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "a.bin")
	if err := os.WriteFile(reg, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "x.jpg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	f, size, err := Open(reg)
	if err != nil || size != 5 {
		t.Fatalf("regular file: size %d, err %v", size, err)
	}
	f.Close()
	for _, tc := range []struct{ path, want string }{
		{fifo, "not a regular file (a FIFO)"}, // would block in open(2) without O_NONBLOCK
		{dir, "not a regular file (a directory)"},
	} {
		_, _, err := Open(tc.path)
		var nr *NotRegularError
		if !errors.As(err, &nr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s): got %v, want %q", tc.path, err, tc.want)
		}
	}
	if _, _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}
