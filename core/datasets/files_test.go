package datasets

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minatoloader/minatoloader/core/config"
)

func touch(t *testing.T, path string, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestScanFolderOrdersAsTorchvision(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"dog/b.jpg", "dog/a.PNG", "dog/sub/c.jpeg", "cat/z.jpg", "cat/notes.txt", "Bird/x.webp"} {
		touch(t, filepath.Join(root, p), "x")
	}
	touch(t, filepath.Join(root, "stray.jpg"), "x") // files at the root are not samples
	classes, files, err := ScanFolder(root, ImageExtensions)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Bird", "cat", "dog"}; !slices.Equal(classes, want) {
		t.Fatalf("classes %v, want %v (sorted, case-sensitive)", classes, want)
	}
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(root, f.Path)
		got = append(got, rel+":"+string(rune('0'+f.Label)))
	}
	want := []string{"Bird/x.webp:0", "cat/z.jpg:1", "dog/a.PNG:2", "dog/b.jpg:2", "dog/sub/c.jpeg:2"}
	if !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
}

func TestScanFolderErrors(t *testing.T) {
	root := t.TempDir()
	if _, _, err := ScanFolder(root, ImageExtensions); err == nil || !strings.Contains(err.Error(), "no class folder") {
		t.Fatalf("empty root: %v", err)
	}
	touch(t, filepath.Join(root, "a/x.jpg"), "x")
	touch(t, filepath.Join(root, "b/readme.txt"), "x")
	if _, _, err := ScanFolder(root, ImageExtensions); err == nil || !strings.Contains(err.Error(), "no valid file for the classes b") {
		t.Fatalf("empty class: %v", err)
	}
	if _, _, err := ScanFolder(filepath.Join(root, "missing"), ImageExtensions); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing root: %v", err)
	}
}

func TestReadList(t *testing.T) {
	dir := t.TempDir()
	touch(t, filepath.Join(dir, "l.csv"), "label,path\n3,img/a.jpg\n4,/abs/b.png\n")
	touch(t, filepath.Join(dir, "l.jsonl"), "{\"path\": \"a.jpg\", \"label\": 1}\n\n{\"path\": \"b.jpg\", \"label\": 2}\n")
	got, err := ReadList(filepath.Join(dir, "l.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []File{{filepath.Join(dir, "img/a.jpg"), 3}, {"/abs/b.png", 4}}; !slices.Equal(got, want) {
		t.Fatalf("csv: got %v, want %v", got, want)
	}
	got, err = ReadList(filepath.Join(dir, "l.jsonl"))
	if err != nil || len(got) != 2 || got[1].Label != 2 {
		t.Fatalf("jsonl: got %v, %v", got, err)
	}
	bad := []struct{ name, text, want string }{
		{"h.csv", "file,class\na,1\n", "header row"},
		{"n.csv", "path,label\na,one\n", "line 2: label \"one\""},
		{"e.csv", "path,label\n", "no entries"},
		{"j.jsonl", "{\"path\": \"a\"}\n", "line 1"},
		{"u.jsonl", "{\"path\": \"a\", \"label\": 1, \"x\": 2}\n", "unknown field"},
		{"t.txt", "a 1\n", "unknown format"},
	}
	for _, b := range bad {
		touch(t, filepath.Join(dir, b.name), b.text)
		if _, err := ReadList(filepath.Join(dir, b.name)); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: got %v, want an error containing %q", b.name, err, b.want)
		}
	}
}

func TestReadFileLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	touch(t, p, "0123456789")
	if b, err := readFile(p, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("got %q, %v", b, err)
	}
	if _, err := readFile(p, 9); err == nil || !strings.Contains(err.Error(), "max_file_bytes") {
		t.Fatalf("limit: %v", err)
	}
	if _, err := readFile(p+"-missing", 9); err == nil {
		t.Fatal("missing file: no error")
	}
}

func TestOpenNamesUnknownKind(t *testing.T) {
	d := config.Default().Dataset
	d.Kind = "image_folder"
	if _, err := Open(d); err == nil {
		t.Fatal("no error")
	}
	d.Kind = "synthetic"
	d.Transforms = append(d.Transforms, []byte(`{"op": "normalize"}`))
	if _, err := Open(d); err == nil || !strings.Contains(err.Error(), "dataset.transforms") {
		t.Fatalf("synthetic with transforms: %v", err)
	}
}
