package datasets

import (
	"bufio"
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
// from 0; each class's files are found by a sorted walk (following links)
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
		err := walkSorted(filepath.Join(root, class), func(path string) {
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
// names in sorted order, following symbolic links to directories (with a
// depth bound against link cycles).
func walkSorted(dir string, f func(path string)) error {
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > 64 {
			return fmt.Errorf("dataset: %q: more than 64 nested folders (a symbolic link cycle?)", dir)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("dataset: %w", err)
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
	f, err := os.Open(list)
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

// readFile reads a whole file, refusing one larger than limit bytes.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%q: %d bytes, more than the limit of %d (max_file_bytes)", path, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%q: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%q: more than the limit of %d bytes (max_file_bytes)", path, limit)
	}
	return b, nil
}
