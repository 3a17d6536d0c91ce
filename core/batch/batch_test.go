package batch

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/config"
)

func TestNewLayout(t *testing.T) {
	f32, i64 := config.DTypes["float32"], config.DTypes["int64"]
	specs := []FieldSpec{{"image", f32, []int64{3, 5}}, {"label", i64, nil}}
	var a GoAllocator
	b, err := New(&a, 7, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if got := b.Fields[0].Shape; len(got) != 3 || got[0] != 7 || got[1] != 3 || got[2] != 5 {
		t.Fatalf("image shape %v, want [7 3 5]", got)
	}
	if len(b.Fields[0].Data) != 7*15*4 || len(b.Fields[1].Data) != 7*8 || len(b.Indices) != 7 {
		t.Fatalf("sizes %d %d %d", len(b.Fields[0].Data), len(b.Fields[1].Data), len(b.Indices))
	}
	for _, p := range []unsafe.Pointer{unsafe.Pointer(&b.Fields[0].Data[0]), unsafe.Pointer(&b.Fields[1].Data[0]), unsafe.Pointer(&b.Indices[0])} {
		if uintptr(p)%Align != 0 {
			t.Fatalf("region at %p not %d-aligned", p, Align)
		}
	}
	if len(b.Fields[0].Row(6)) != 60 || b.Field("label") != &b.Fields[1] || b.Field("nope") != nil {
		t.Fatal("Row or Field lookup wrong")
	}
	b.Release()
	b.Release()
	if a.Live() != 0 {
		t.Fatalf("%d live after double release", a.Live())
	}
}

func TestValidate(t *testing.T) {
	f32 := config.DTypes["float32"]
	tests := []struct {
		specs []FieldSpec
		want  string
	}{
		{nil, "at least one"},
		{[]FieldSpec{{"", f32, nil}}, "no name"},
		{[]FieldSpec{{"a", f32, nil}, {"a", f32, nil}}, "twice"},
		{[]FieldSpec{{"a", f32, []int64{0}}}, ">= 1"},
		{[]FieldSpec{{"a", f32, make([]int64, 8)}}, "dimensions"},
		{[]FieldSpec{{"a", config.DType{}, nil}}, "element type"},
	}
	for _, tt := range tests {
		err := Validate(tt.specs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tt.specs, err, tt.want)
		}
	}
}
