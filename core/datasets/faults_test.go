package datasets

// Regression tests of issue 9's file faults: blocked reads (FIFOs, device
// links), reads sized by the file, link cycles in folder scans.

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/volume"
)

// readUnblocked runs read in a goroutine and returns its error. While it
// runs, the FIFO at fifo gets a writer whenever a reader has it open (an
// open for writing without blocking succeeds only then), which is closed
// at once: a read that blocked on the FIFO then ends (with EOF) instead of
// hanging the test. The FIFO must never have had a reader: the stat before
// the open refuses it, so a reader seen means an open that would block.
func readUnblocked(t *testing.T, fifo string, read func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	for {
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Millisecond):
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
				t.Errorf("%s was opened for reading: with no writer that open blocks", fifo)
			}
		}
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func TestReadFileRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.jpg")
	mkfifo(t, p)
	err := readUnblocked(t, p, func() error { _, err := readFile(p, 1<<20); return err })
	if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), p) {
		t.Fatalf("readFile of a FIFO: %v, want an error naming %s as not a regular file", err, p)
	}
}

func TestReadNpyFileRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "case_x.npy")
	mkfifo(t, p)
	err := readUnblocked(t, p, func() error { _, err := volume.ReadNpyFile(p, nil); return err })
	if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), p) {
		t.Fatalf("ReadNpyFile of a FIFO: %v, want an error naming %s as not a regular file", err, p)
	}
}

func TestReadFileRefusesDevZeroLink(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	p := filepath.Join(t.TempDir(), "x.jpg")
	if err := os.Symlink("/dev/zero", p); err != nil {
		t.Fatal(err)
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFile(p, 64<<20)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "not a regular file (a device)") || !strings.Contains(err.Error(), p) {
		t.Fatalf("readFile of a link to /dev/zero: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("refusing /dev/zero allocated %d bytes", got)
	}
	// The npy reader refuses it too.
	if _, err := volume.ReadNpyFile(p, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("ReadNpyFile of a link to /dev/zero: %v", err)
	}
}

// A read allocates the file's size once, not a doubling buffer.
func TestReadFileAllocatesTheFileSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.bin")
	const size = 8<<20 + 123
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := readFile(p, 1<<30)
	runtime.ReadMemStats(&after)
	if err != nil || len(b) != size {
		t.Fatalf("readFile: %d bytes, %v", len(b), err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > size+64<<10 {
		t.Fatalf("reading %d bytes allocated %d (want the size plus a little)", size, got)
	}
}

// A file whose size is not what stat says (here a /proc file: size 0, with
// content) is refused, not read to an unbounded length.
func TestReadFileRefusesAFileThatGrew(t *testing.T) {
	const p = "/proc/self/status"
	st, err := os.Stat(p)
	if err != nil || st.Size() != 0 {
		t.Skip("no /proc/self/status of size 0")
	}
	if _, err := readFile(p, 1<<20); err == nil || !strings.Contains(err.Error(), "grew while read") {
		t.Fatalf("readFile(%s): %v, want a 'grew while read' error", p, err)
	}
}

// Two link cycles (one at each of two depths) and a link to a sibling:
// the scan ends; the cycles' files are listed once, the sibling's once per
// path, as torchvision lists them.
func TestScanFolderLinkCycles(t *testing.T) {
	root := t.TempDir()
	touch(t, filepath.Join(root, "c/x.jpg"), "x")
	touch(t, filepath.Join(root, "c/s/y.jpg"), "x")
	touch(t, filepath.Join(root, "d/z.jpg"), "x")
	for link, target := range map[string]string{
		"c/loop1":   ".",     // c -> c
		"c/s/loop2": "..",    // c/s -> c
		"c/s/up":    "../..", // c/s -> root (above the class)
		"c/t":       "s",     // a second path to c/s, not a cycle
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	classes, files, err := ScanFolder(root, ImageExtensions)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(classes, ",") != "c,d" {
		t.Fatalf("classes %v", classes)
	}
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(root, f.Path)
		got = append(got, rel)
	}
	// c/s/up leads to the dataset root, an ancestor of every class
	// folder: skipped like the cycles within c.
	want := "c/x.jpg c/s/y.jpg c/t/y.jpg d/z.jpg"
	if strings.Join(got, " ") != want {
		t.Fatalf("files\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}

// One cycle used to end the scan with the 64-level error.
func TestScanFolderOneLinkCycle(t *testing.T) {
	root := t.TempDir()
	touch(t, filepath.Join(root, "c/x.jpg"), "x")
	if err := os.Symlink(".", filepath.Join(root, "c/self")); err != nil {
		t.Fatal(err)
	}
	_, files, err := ScanFolder(root, ImageExtensions)
	if err != nil || len(files) != 1 {
		t.Fatalf("%d files, %v; want c/x.jpg once", len(files), err)
	}
}
