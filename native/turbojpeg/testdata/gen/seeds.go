//go:build ignore

// seeds.go writes the FuzzDecode seed corpus, testdata/fuzz/FuzzDecode/,
// from the fixtures gen.c wrote and a few images image/jpeg encodes:
//
//	cd native/turbojpeg/testdata && go run gen/seeds.go
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"log"
	"os"
	"path/filepath"
	"strconv"
)

type seed struct {
	name          string
	data          []byte
	minW, minH    uint16
	lenient, fast bool
}

func encode(img image.Image) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 75}); err != nil {
		log.Fatal(err)
	}
	return buf.Bytes()
}

func main() {
	var seeds []seed
	fixtures, err := filepath.Glob("*.jpg")
	if err != nil || len(fixtures) == 0 {
		log.Fatal("run in native/turbojpeg/testdata after gen.c: no *.jpg here")
	}
	for _, f := range fixtures {
		data, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		base := f[:len(f)-len(".jpg")]
		seeds = append(seeds, seed{name: base, data: data})
		seeds = append(seeds, seed{name: base + "_min10", data: data, minW: 10, minH: 10, fast: true})
	}

	rgb := image.NewRGBA(image.Rect(0, 0, 24, 17))
	gray := image.NewGray(image.Rect(0, 0, 17, 9))
	for y := 0; y < 17; y++ {
		for x := 0; x < 24; x++ {
			rgb.Set(x, y, color.RGBA{uint8(10 * x), uint8(15 * y), uint8(5 * (x + y)), 255})
			gray.Set(x%17, y%9, color.Gray{uint8(7 * (x + y))})
		}
	}
	ycc := encode(rgb)
	seeds = append(seeds,
		seed{name: "go_ycbcr", data: ycc},
		seed{name: "go_ycbcr_min8x3", data: ycc, minW: 8, minH: 3},
		seed{name: "go_gray", data: encode(gray), minH: 2},
		seed{name: "go_ycbcr_truncated_lenient", data: ycc[:len(ycc)*2/3], lenient: true},
		seed{name: "go_ycbcr_truncated", data: ycc[:len(ycc)*2/3]},
		seed{name: "empty", data: nil},
		seed{name: "soi_eoi", data: []byte{0xff, 0xd8, 0xff, 0xd9}},
	)
	huge := bytes.Clone(ycc)
	sof := bytes.Index(huge, []byte{0xff, 0xc0})
	binary.BigEndian.PutUint16(huge[sof+5:], 40000)
	binary.BigEndian.PutUint16(huge[sof+7:], 40000)
	seeds = append(seeds, seed{name: "go_ycbcr_huge_header", data: huge, lenient: true})

	dir := filepath.Join("fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, s := range seeds {
		text := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nuint16(%d)\nuint16(%d)\nbool(%v)\nbool(%v)\n",
			strconv.Quote(string(s.data)), s.minW, s.minH, s.lenient, s.fast)
		if err := os.WriteFile(filepath.Join(dir, s.name), []byte(text), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%d seeds in %s\n", len(seeds), dir)
}
