package datasets

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minatoloader/minatoloader/core/config"
)

// dataset.samples: file_list's in-memory form, read as given (order,
// duplicates and labels kept), with bytes for names that are not UTF-8.
func TestParseSamples(t *testing.T) {
	ok := []struct {
		name string
		raw  string
		want []File
	}{
		{"strings", `[["/d/b.png", 3], ["/d/a.jpg", 0]]`, []File{{"/d/b.png", 3}, {"/d/a.jpg", 0}}},
		{"duplicates and negative", `[["x.png", -1], ["x.png", -1]]`, []File{{"x.png", -1}, {"x.png", -1}}},
		{"bytes", `[[{"bytes": "L2Qv/y5wbmc="}, 7]]`, []File{{"/d/\xff.png", 7}}},
		{"big label", `[["p", 9007199254740993]]`, []File{{"p", 9007199254740993}}},
	}
	for _, c := range ok {
		got, err := ParseSamples(json.RawMessage(c.raw))
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	bad := []struct {
		name, raw, want string
	}{
		{"not a list", `{"a": 1}`, `"dataset.samples": want a list`},
		{"null", `null`, `"dataset.samples": want a list`},
		{"empty", `[]`, `"dataset.samples": no entries`},
		{"not a pair", `[["a", 1], ["b"]]`, `"dataset.samples[1]": want a [path, label] pair`},
		{"triple", `[["a", 1, 2]]`, `"dataset.samples[0]": want a [path, label] pair`},
		{"object entry", `[{"path": "a", "label": 1}]`, `"dataset.samples[0]": want a [path, label] pair`},
		{"empty path", `[["a", 1], ["", 1]]`, `"dataset.samples[1]": empty path`},
		{"number path", `[[5, 1]]`, `"dataset.samples[0]": path: want a string or {"bytes"`},
		{"bad bytes", `[[{"bytes": "%%"}, 1]]`, `"dataset.samples[0]": path: want {"bytes": <base64>}`},
		{"unknown key", `[[{"bytes": "YQ==", "x": 1}, 1]]`, `"dataset.samples[0]": path: want {"bytes"`},
		{"empty bytes", `[[{"bytes": ""}, 1]]`, `"dataset.samples[0]": empty path`},
		{"nul", `[["a\u0000b", 1]]`, `"dataset.samples[0]": path "a\x00b": a file name cannot hold a NUL byte`},
		{"float label", `[["a", 1], ["b", 2], ["c", 1.5]]`, `"dataset.samples[2]": label 1.5 is not an integer`},
		{"string label", `[["a", "1"]]`, `"dataset.samples[0]": label "1" is not an integer`},
		{"bool label", `[["a", true]]`, `"dataset.samples[0]": label true is not an integer`},
		{"null label", `[["a", null]]`, `"dataset.samples[0]": label null is not an integer`},
	}
	for _, c := range bad {
		_, err := ParseSamples(json.RawMessage(c.raw))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %s", c.name, err, c.want)
		}
	}
}

// A file_list dataset built from samples reads the files named, in order,
// with the labels given; samples and list together are refused.
func TestFileListSamplesConfig(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	touch(t, a, "x")
	touch(t, b, "x")
	raw, _ := json.Marshal([][2]any{{b, 0}, {a, 5}, {b, 0}})
	chain := []json.RawMessage{json.RawMessage(`{"op":"center_crop","size":[1]}`), json.RawMessage(`{"op":"to_tensor"}`)}
	src, err := Open(config.Dataset{Kind: "file_list", Samples: raw, Transforms: chain})
	if err != nil {
		t.Fatal(err)
	}
	s := src.(*imageSource)
	if want := []File{{b, 0}, {a, 5}, {b, 0}}; !slices.Equal(s.files, want) {
		t.Fatalf("files %v, want %v", s.files, want)
	}
	if _, err := Open(config.Dataset{Kind: "file_list", Samples: raw, List: filepath.Join(dir, "l.csv"), Transforms: chain}); err == nil ||
		!strings.Contains(err.Error(), "either samples or list") {
		t.Fatalf("samples and list: %v", err)
	}
	if _, err := Open(config.Dataset{Kind: "file_list", Samples: json.RawMessage(`[["a", 1], [2, 1]]`), Transforms: chain}); err == nil ||
		!strings.Contains(err.Error(), `"dataset.samples[1]"`) {
		t.Fatalf("bad entry: %v", err)
	}
	// Through the config parser, as the C ABI reads it.
	cfg, err := config.Parse([]byte(`{"dataset": {"kind": "file_list", "samples": [[` + string(must(json.Marshal(a))) + `, 2]],
		"transforms": [{"op": "center_crop", "size": [1]}, {"op": "to_tensor"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if src, err := Open(cfg.Dataset); err != nil || src.Len() != 1 {
		t.Fatalf("parsed config: %v", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
