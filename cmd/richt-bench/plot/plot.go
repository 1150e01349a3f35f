package plot

import (
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
)

// Bar is one bar of the ratio chart.
type Bar struct {
	Group  string  // comparison the bar belongs to, e.g. "default strategy", "ours vs built-ins under Mitogen"
	Label  string  // row title, short (up to ~60 chars), e.g. "converged service"
	Ratio  float64 // ours ÷ built-in; ignored when Note != ""
	Target float64 // the row's target ratio (0: none); drawn as a tick/marker on the bar's line
	Note   string  // when not empty the bar is not drawn and this text is shown instead (e.g. "built-in dnf fails under Mitogen")
}

// Point is one point of the scaling chart.
type Point struct {
	Series         string  // e.g. "ours no-op", "built-in no-op", "ours changed", "built-in changed"
	Hosts          int     // 1, 8, 24 …
	SecondsPerHost float64 // median wall time of the run ÷ hosts
}

// Write draws the figure (ratio bars on top, scaling curve below) as a PNG at path.
func Write(path, title string, bars []Bar, points []Point) error {
	if err := writePNGFile(path, renderPlot(title, bars, points)); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}

// writePNGFile encodes img into a temporary file next to path and renames it
// into place, so a failed run never leaves a truncated PNG behind for a reader
// that only checks whether the file exists.
func writePNGFile(path string, img image.Image) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = png.Encode(f, img); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; the figure is meant to be shared.
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// renderPlot lays out and draws the whole figure. Each section renders into
// its own image sized by its content, which keeps height computation next to
// the drawing code instead of in a separate pass that could drift from it.
func renderPlot(title string, bars []Bar, points []Point) *image.RGBA {
	var sections []*image.RGBA
	if len(bars) > 0 {
		sections = append(sections, renderRatioSection(groupBars(bars)))
	}
	if len(points) > 0 {
		sections = append(sections, renderScaleSection(points))
	}

	height := plotMargin + plotTitleH + plotMargin
	for _, s := range sections {
		height += s.Bounds().Dy()
	}
	if len(sections) == 0 {
		height += plotRowH
	}

	img := image.NewRGBA(image.Rect(0, 0, plotWidth, height))
	fillRect(img, img.Bounds(), colWhite)
	drawTextBold(img, plotMargin, plotMargin+plotAscent+2, fitText(title, plotWidth-2*plotMargin), colText)

	y := plotMargin + plotTitleH
	if len(sections) == 0 {
		drawText(img, plotMargin, y+plotAscent+2, "no data", colMuted)
	}
	for _, s := range sections {
		r := image.Rect(0, y, plotWidth, y+s.Bounds().Dy())
		draw.Draw(img, r, s, image.Point{}, draw.Src)
		y = r.Max.Y
	}
	return img
}
