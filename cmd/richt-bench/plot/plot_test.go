package plot

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// samplePlotBars is a realistic set of about 20 bars in 3 groups, with one
// bar meeting its target, one missing it, one without a target and one note.
func samplePlotBars() []Bar {
	var bars []Bar
	defaults := []struct {
		label         string
		ratio, target float64
	}{
		{"converged service", 0.412, 0.5},
		{"changed service (start + enable)", 0.587, 0.5},
		{"converged package (dnf)", 0.731, 0.8},
		{"changed package (dnf install)", 0.954, 0.8},
		{"converged file + template", 0.302, 0.5},
		{"changed file + template", 0.488, 0.5},
		{"converged user + group", 0.655, 0},
		{"changed user + group", 1.124, 0},
	}
	for _, d := range defaults {
		bars = append(bars, Bar{Group: "default strategy", Label: d.label, Ratio: d.ratio, Target: d.target})
	}
	for i, d := range defaults[:6] {
		bars = append(bars, Bar{Group: "free strategy", Label: d.label, Ratio: d.ratio * (0.9 + 0.05*float64(i)), Target: d.target})
	}
	bars = append(bars,
		Bar{Group: "ours vs built-ins under Mitogen", Label: "converged service", Ratio: 0.844, Target: 1},
		Bar{Group: "ours vs built-ins under Mitogen", Label: "changed service (start + enable)", Ratio: 1.312, Target: 1},
		Bar{Group: "ours vs built-ins under Mitogen", Label: "converged package (dnf)", Note: "built-in dnf fails under Mitogen"},
		Bar{Group: "ours vs built-ins under Mitogen", Label: "converged file + template", Ratio: 0.97, Target: 1},
		Bar{Group: "ours vs built-ins under Mitogen", Label: "a rather long label that goes well past the sixty characters the column is sized for", Ratio: 0.5},
		Bar{Group: "ours vs built-ins under Mitogen", Label: "zero ratio", Ratio: 0, Target: 0.5},
	)
	return bars
}

// samplePlotPoints is 4 series × 3 host counts, given out of host order to
// check the chart sorts them.
func samplePlotPoints() []Point {
	var pts []Point
	for _, h := range []int{24, 1, 8} {
		f := float64(h)
		pts = append(pts,
			Point{Series: "ours no-op", Hosts: h, SecondsPerHost: 1.2 + 2.0/f},
			Point{Series: "built-in no-op", Hosts: h, SecondsPerHost: 2.9 + 4.0/f},
			Point{Series: "ours changed", Hosts: h, SecondsPerHost: 1.9 + 3.0/f},
			Point{Series: "built-in changed", Hosts: h, SecondsPerHost: 3.6 + 5.5/f},
		)
	}
	return pts
}

// readPNG decodes the PNG at path.
func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img
}

// hasBarColor reports whether any pixel of the bar area (right of the label
// column) is exactly c. The chart draws without anti-aliasing, so bar colours
// survive unblended; the legend swatches in the same colours lie left of
// plotBarX0 and so do not count.
func hasBarColor(img image.Image, c color.RGBA) bool {
	b := img.Bounds()
	b.Min.X = plotBarX0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == c {
				return true
			}
		}
	}
	return false
}

func TestWritePlot(t *testing.T) {
	tests := []struct {
		name               string
		bars               []Bar
		points             []Point
		wantGreen, wantRed bool
	}{
		{name: "realistic", bars: samplePlotBars(), points: samplePlotPoints(), wantGreen: true, wantRed: true},
		{name: "no bars", points: samplePlotPoints()},
		{name: "no points", bars: samplePlotBars(), wantGreen: true, wantRed: true},
		{name: "nothing"},
		{
			name: "unplottable ratios",
			bars: []Bar{
				{Group: "g", Label: "nan", Ratio: math.NaN(), Target: 0.9},
				{Group: "g", Label: "+inf", Ratio: math.Inf(1), Target: 0.9},
				{Group: "g", Label: "-inf", Ratio: math.Inf(-1)},
				{Group: "g", Label: "negative", Ratio: -0.5, Target: 0.9},
			},
			points: []Point{{Series: "s", Hosts: 1, SecondsPerHost: math.NaN()}},
		},
		{
			name:      "zero values and a single host",
			bars:      []Bar{{Label: "zero", Ratio: 0, Target: 0.5}, {Label: "tiny", Ratio: 0.01, Target: 0.5}, {Label: "bad target", Ratio: 0.7, Target: math.NaN()}},
			points:    []Point{{Series: "a", Hosts: 1}, {Series: "b", Hosts: 1}},
			wantGreen: true,
		},
		{
			name: "huge ratio and many series",
			bars: []Bar{{Group: "g", Label: "slow", Ratio: 1e9, Target: 1}},
			points: func() []Point {
				var pts []Point
				for i := range 12 {
					pts = append(pts, Point{Series: fmt.Sprintf("series number %d with a long name", i), Hosts: i, SecondsPerHost: 1e-4 * float64(i)})
				}
				return pts
			}(),
			wantRed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A missing parent directory must be created.
			path := filepath.Join(t.TempDir(), "out", "plot.png")
			if err := Write(path, "richt-bench: ours ÷ built-in", tt.bars, tt.points); err != nil {
				t.Fatal(err)
			}
			img := readPNG(t, path)
			if w := img.Bounds().Dx(); w < 1000 {
				t.Errorf("width = %d, want >= 1000", w)
			}
			if got := hasBarColor(img, colMeets); got != tt.wantGreen {
				t.Errorf("green (meets target) pixel present = %v, want %v", got, tt.wantGreen)
			}
			if got := hasBarColor(img, colMisses); got != tt.wantRed {
				t.Errorf("red (misses target) pixel present = %v, want %v", got, tt.wantRed)
			}
			entries, err := os.ReadDir(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("output directory holds %d entries, want only the PNG", len(entries))
			}
		})
	}
}

func TestWritePlotHeightGrowsWithBars(t *testing.T) {
	all := samplePlotBars()
	prev := 0
	for _, n := range []int{1, 5, 10, len(all)} {
		path := filepath.Join(t.TempDir(), "plot.png")
		if err := Write(path, "growth", all[:n], nil); err != nil {
			t.Fatal(err)
		}
		h := readPNG(t, path).Bounds().Dy()
		if h <= prev {
			t.Errorf("%d bars: height %d, want > %d (height with fewer bars)", n, h, prev)
		}
		prev = h
	}
}

func TestWritePlotError(t *testing.T) {
	// A regular file where the parent directory should be makes MkdirAll fail.
	blocker := filepath.Join(t.TempDir(), "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(blocker, "plot.png")
	err := Write(path, "t", samplePlotBars(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "write plot "+path+": ") {
		t.Fatalf("err = %v, want it prefixed with %q", err, "write plot "+path+": ")
	}
}

func TestNiceAxis(t *testing.T) {
	tests := []struct {
		max           float64
		wantTop, step float64
	}{
		{max: 0, wantTop: 1, step: 0.2},
		{max: math.NaN(), wantTop: 1, step: 0.2},
		{max: 1, wantTop: 1, step: 0.2},
		{max: 7.3, wantTop: 8, step: 2},
		{max: 10, wantTop: 10, step: 2},
		{max: 11, wantTop: 12.5, step: 2.5},
		{max: 0.034, wantTop: 0.04, step: 0.01},
		{max: 123456, wantTop: 125000, step: 25000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			top, step := niceAxis(tt.max)
			if math.Abs(top-tt.wantTop) > 1e-9*tt.wantTop || math.Abs(step-tt.step) > 1e-9*tt.step {
				t.Errorf("niceAxis(%v) = %v, %v; want %v, %v", tt.max, top, step, tt.wantTop, tt.step)
			}
		})
	}
	// Whatever the value, the axis covers it with 4 to 6 tick labels.
	for v := 1e-3; v < 1e5; v *= 1.37 {
		top, step := niceAxis(v)
		labels := int(math.Round(top/step)) + 1
		if top < v || labels < 4 || labels > 6 {
			t.Errorf("niceAxis(%v) = %v, %v: %d labels", v, top, step, labels)
		}
	}
}

func TestRatioAxisMax(t *testing.T) {
	tests := []struct {
		name string
		bars []Bar
		want float64
	}{
		{"floor", []Bar{{Ratio: 0.3}}, 1.2},
		{"exact multiple", []Bar{{Ratio: 1.2}}, 1.2},
		{"rounded up", []Bar{{Ratio: 1.21}}, 1.4},
		{"target counts", []Bar{{Ratio: 0.3, Target: 1.5}}, 1.6},
		{"notes ignored", []Bar{{Ratio: 9, Note: "skipped"}}, 1.2},
		{"nan ignored", []Bar{{Ratio: math.NaN()}}, 1.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ratioAxisMax(groupBars(tt.bars)); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("ratioAxisMax = %v, want %v", got, tt.want)
			}
		})
	}
}
