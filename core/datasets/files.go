package datasets

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/minatoloader/minatoloader/core/internal/regfile"
)

// File is one sample's file and its label.
type File struct {
	Path  string
	Label int64
}

// ImageExtensions are torchvision's IMG_EXTENSIONS (matched case-insensitively).
var ImageExtensions = []string{".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}

// AudioExtensions are the audio files an audio folder takes.
var AudioExtensions = []string{".wav"}

func hasExt(name string, exts []string) bool {
	lower := strings.ToLower(name)
	for _, e := range exts {
		if strings.HasSuffix(lower, strings.ToLower(e)) {
			return true
		}
	}
	return false
}

// ScanFolder lists root/<class>/.../<file> as torchvision's DatasetFolder
// does: classes are the sorted names of root's sub-directories, numbered
// from 0; each class's files are found by a sorted walk (following links,
// skipping those that lead back to a folder above them: see walkSorted)
// and kept when their name ends with one of exts. A class with no file is
// an error, as in torchvision (allow_empty=False).
func ScanFolder(root string, exts []string) (classes []string, files []File, err error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset root %q: %w", root, err)
	}
	for _, e := range entries {
		if isDir(root, e) {
			classes = append(classes, e.Name())
		}
	}
	slices.Sort(classes)
	if len(classes) == 0 {
		return nil, nil, fmt.Errorf("dataset root %q: no class folder found (expected root/<class>/<file>)", root)
	}
	var empty []string
	for label, class := range classes {
		n := len(files)
		err := walkSorted(root, filepath.Join(root, class), func(path string) {
			if hasExt(path, exts) {
				files = append(files, File{Path: path, Label: int64(label)})
			}
		})
		if err != nil {
			return nil, nil, err
		}
		if len(files) == n {
			empty = append(empty, class)
		}
	}
	if len(empty) > 0 {
		return nil, nil, fmt.Errorf("dataset root %q: found no valid file for the classes %s; supported extensions are %s",
			root, strings.Join(empty, ", "), strings.Join(exts, ", "))
	}
	return classes, files, nil
}

func isDir(dir string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		return err == nil && st.IsDir()
	}
	return false
}

// walkSorted calls f for every non-directory below dir, directories and
// names in sorted order, following symbolic links to directories.
//
// Link cycles: the walk keeps the directories on its current path (root,
// when given, then dir and each folder below it), compared by device and
// inode. A folder (link or not) that is one of them leads back to an
// ancestor and is skipped, so each file of a cycle is listed once, under
// its path without the cycle, and the scan ends whatever links the tree
// holds. This is deterministic (it depends on the tree, not on timing or
// on the order links are met in a sorted walk) and is where we differ from
// torchvision, whose os.walk(followlinks=True) never ends on a cycle. A
// link to a directory that is not an ancestor (two links to one sibling)
// is walked each time, as in torchvision: its files are listed once per
// path. The 64-level depth bound remains, for trees that are deep without
// a cycle.
func walkSorted(root, dir string, f func(path string)) error {
	var path []os.FileInfo // the folders on the current walk path
	if root != "" {
		st, err := os.Stat(root)
		if err != nil {
			return fmt.Errorf("dataset root %q: %w", root, err)
		}
		path = append(path, st)
	}
	onPath := func(st os.FileInfo) bool {
		for _, a := range path {
			if os.SameFile(a, st) {
				return true
			}
		}
		return false
	}
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > 64 {
			return fmt.Errorf("dataset: %q: more than 64 nested folders", dir)
		}
		st, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("dataset: %q: %w", dir, err)
		}
		if onPath(st) {
			return nil // a link back to an ancestor: its files are listed already
		}
		path = append(path, st)
		defer func() { path = path[:len(path)-1] }()
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("dataset: %q: %w", dir, err)
		}
		var dirs []string
		for _, e := range entries {
			if isDir(dir, e) {
				dirs = append(dirs, e.Name())
			} else {
				f(filepath.Join(dir, e.Name()))
			}
		}
		for _, d := range dirs {
			if err := walk(filepath.Join(dir, d), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(dir, 0)
}

// ReadList reads a file list: a .csv with a header row naming the columns
// "path" and "label", or a .jsonl with one {"path": ..., "label": ...}
// object a line. Relative paths are relative to the list's folder. Errors
// name the list and the line.
func ReadList(list string) ([]File, error) {
	f, _, err := openRegular(list)
	if err != nil {
		return nil, fmt.Errorf("file list: %w", err)
	}
	defer f.Close()
	base := filepath.Dir(list)
	resolve := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	var files []File
	switch strings.ToLower(filepath.Ext(list)) {
	case ".csv":
		r := csv.NewReader(f)
		r.FieldsPerRecord = -1
		header, err := r.Read()
		if err != nil {
			return nil, fmt.Errorf("file list %q: reading the header row: %w", list, err)
		}
		pathCol, labelCol := slices.Index(header, "path"), slices.Index(header, "label")
		if pathCol < 0 || labelCol < 0 {
			return nil, fmt.Errorf("file list %q: the header row must name the columns \"path\" and \"label\", got %q", list, header)
		}
		for line := 2; ; line++ {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("file list %q: %w", list, err)
			}
			if len(rec) <= max(pathCol, labelCol) {
				return nil, fmt.Errorf("file list %q line %d: %d columns, want path and label", list, line, len(rec))
			}
			label, err := strconv.ParseInt(strings.TrimSpace(rec[labelCol]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("file list %q line %d: label %q is not an integer", list, line, rec[labelCol])
			}
			if rec[pathCol] == "" {
				return nil, fmt.Errorf("file list %q line %d: empty path", list, line)
			}
			files = append(files, File{Path: resolve(rec[pathCol]), Label: label})
		}
	case ".jsonl":
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				continue
			}
			var row struct {
				Path  *string `json:"path"`
				Label *int64  `json:"label"`
			}
			dec := json.NewDecoder(strings.NewReader(text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&row); err != nil {
				return nil, fmt.Errorf("file list %q line %d: %v", list, line, err)
			}
			if row.Path == nil || *row.Path == "" || row.Label == nil {
				return nil, fmt.Errorf("file list %q line %d: want {\"path\": <non-empty string>, \"label\": <int>}", list, line)
			}
			files = append(files, File{Path: resolve(*row.Path), Label: *row.Label})
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("file list %q: %w", list, err)
		}
	default:
		return nil, fmt.Errorf("file list %q: unknown format: use a .csv (header path,label) or a .jsonl", list)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("file list %q: no entries", list)
	}
	return files, nil
}

// readFile reads a whole file, refusing one larger than limit bytes or
// one that is not a regular file (see openRegular). The read is sized by
// the file: one allocation of exactly its size, filled with io.ReadFull; a
// file that shrinks or grows meanwhile is an error. Errors name the file
// (printably: %q escapes bytes that are not UTF-8).
func readFile(path string, limit int64) ([]byte, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%q: %d bytes, more than the limit of %d (max_file_bytes)", path, size, limit)
	}
	b := make([]byte, size)
	if n, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%q: the file shrank while read (%d bytes when opened, %d read)", path, size, n)
		}
		return nil, fmt.Errorf("%q: %w", path, unwrapPath(err))
	}
	var probe [1]byte
	if n, _ := f.Read(probe[:]); n > 0 {
		return nil, fmt.Errorf("%q: the file grew while read (%d bytes when opened)", path, size)
	}
	return b, nil
}

// openRegular is regfile.Open with errors that name path.
func openRegular(path string) (*os.File, int64, error) {
	f, size, err := regfile.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%q: %w", path, unwrapPath(err))
	}
	return f, size, nil
}

// unwrapPath drops an *fs.PathError's own copy of the path (printed raw),
// keeping the operation and the cause.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// Printable is path as error messages show it: unchanged when it is valid,
// printable UTF-8, else with %q's escapes (\xff for a byte that is not
// UTF-8), without the quotes.
func Printable(path string) string {
	q := strconv.Quote(path)
	if q[1:len(q)-1] == path || !needsQuote(path) {
		return path
	}
	return q[1 : len(q)-1]
}

func needsQuote(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}

// ParseSamples reads file_list's in-memory form, dataset.samples:
// [[path, label], ...] with path a non-empty string, or {"bytes": base64}
// for a file name that is not UTF-8 (JSON strings cannot carry its bytes),
// and label an integer. Paths are used as given (a relative one is
// relative to the working directory). Errors name the entry at fault
// ("dataset.samples[3]").
func ParseSamples(raw json.RawMessage) ([]File, error) {
	bad := func(i int, format string, args ...any) error {
		return fmt.Errorf("config: option \"dataset.samples[%d]\": %s", i, fmt.Sprintf(format, args...))
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || entries == nil {
		return nil, fmt.Errorf("config: option \"dataset.samples\": want a list of [path, label] pairs, got %.40s", raw)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("config: option \"dataset.samples\": no entries")
	}
	files := make([]File, len(entries))
	for i, e := range entries {
		var pair []json.RawMessage
		if err := json.Unmarshal(e, &pair); err != nil || len(pair) != 2 {
			return nil, bad(i, "want a [path, label] pair, got %.60s", e)
		}
		var path string
		switch p := bytes.TrimSpace(pair[0]); {
		case len(p) > 0 && p[0] == '"':
			if err := json.Unmarshal(p, &path); err != nil {
				return nil, bad(i, "path: %v", err)
			}
		case len(p) > 0 && p[0] == '{':
			var b struct {
				Bytes *[]byte `json:"bytes"`
			}
			dec := json.NewDecoder(bytes.NewReader(p))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&b); err != nil || b.Bytes == nil {
				return nil, bad(i, "path: want {\"bytes\": <base64>}, got %.60s", p)
			}
			path = string(*b.Bytes)
		default:
			return nil, bad(i, "path: want a string or {\"bytes\": <base64>}, got %.60s", p)
		}
		if path == "" {
			return nil, bad(i, "empty path")
		}
		if strings.IndexByte(path, 0) >= 0 {
			return nil, bad(i, "path %q: a file name cannot hold a NUL byte", path)
		}
		var label int64
		if l := bytes.TrimSpace(pair[1]); string(l) == "null" || json.Unmarshal(l, &label) != nil {
			return nil, bad(i, "label %.40s is not an integer", pair[1])
		}
		files[i] = File{Path: path, Label: label}
	}
	return files, nil
}
