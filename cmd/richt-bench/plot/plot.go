package plot

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
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

// Layout in pixels. basicfont.Face7x13 is monospaced, so text widths are
// simply rune counts times plotCharW and everything can be laid out up front.
const (
	plotWidth      = 1200
	plotMargin     = 20
	plotCharW      = 7  // glyph advance of basicfont.Face7x13
	plotAscent     = 11 // glyph ascent of basicfont.Face7x13
	plotLabelChars = 60 // labels are promised to be short; longer ones get truncated
	plotTitleH     = 30
	plotLegendH    = 22
	plotRefLabelH  = 18
	plotGroupH     = 24
	plotRowH       = 20
	plotBarH       = 12
	plotAxisH      = 44
	plotValueRoom  = 70 // room right of the ratio axis for "1.234" printed at a bar's end

	// Ratio chart columns: labels on the left, bars to the right of them.
	plotLabelX0 = plotMargin
	plotBarX0   = plotMargin + plotLabelChars*plotCharW + 12
	plotBarX1   = plotWidth - plotMargin - plotValueRoom

	// Scaling chart.
	plotScaleGap    = 20
	plotScaleTitleH = 34
	plotScaleH      = 240
	plotScaleX0     = plotMargin + 70 // room for the y tick labels
	plotScaleX1     = plotWidth - plotMargin - 20
	plotScaleAxisH  = 48
	plotScaleLegH   = 20
)

var (
	plotFace = basicfont.Face7x13

	colWhite   = color.RGBA{0xff, 0xff, 0xff, 0xff}
	colText    = color.RGBA{0x22, 0x22, 0x22, 0xff}
	colMuted   = color.RGBA{0x80, 0x80, 0x80, 0xff}
	colAxis    = color.RGBA{0x55, 0x55, 0x55, 0xff}
	colGrid    = color.RGBA{0xe2, 0xe2, 0xe2, 0xff}
	colStripe  = color.RGBA{0xf4, 0xf6, 0xf9, 0xff}
	colSep     = color.RGBA{0xcc, 0xcc, 0xcc, 0xff}
	colTarget  = color.RGBA{0x00, 0x00, 0x00, 0xff}
	colMeets   = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
	colMisses  = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	colNoGoal  = color.RGBA{0x7f, 0x9c, 0xbf, 0xff}
	colRefLine = color.RGBA{0x44, 0x44, 0x44, 0xff}
)

// seriesPalette deliberately leaves out green and red: in this figure those
// mean "meets/misses its target", and a series in the same colour would read
// as a verdict.
var seriesPalette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0xbc, 0xbd, 0x22, 0xff}, // olive
	{0x44, 0x44, 0x44, 0xff}, // dark grey
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

// barGroup is one comparison of the ratio chart with its bars in input order.
type barGroup struct {
	name string
	bars []Bar
}

// groupBars groups bars by Group in the order groups first appear, so callers
// control the figure's order simply by the order they report results in.
func groupBars(bars []Bar) []barGroup {
	index := map[string]int{}
	var groups []barGroup
	for _, b := range bars {
		b = normalizeBar(b)
		i, ok := index[b.Group]
		if !ok {
			i = len(groups)
			index[b.Group] = i
			groups = append(groups, barGroup{name: b.Group})
		}
		groups[i].bars = append(groups[i].bars, b)
	}
	return groups
}

// normalizeBar turns values that cannot be placed on a 0-based linear axis
// into a note, so a broken measurement shows up as "n/a" rather than as a bar
// that is silently clipped or a panic deep in the drawing code.
func normalizeBar(b Bar) Bar {
	if b.Note == "" && !isPlottable(b.Ratio) {
		b.Note = "n/a"
	}
	if !isPlottable(b.Target) {
		b.Target = 0
	}
	return b
}

// isPlottable reports whether v fits on an axis starting at 0.
func isPlottable(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0
}

// ratioAxisMax is max(1.2, largest ratio or target) rounded up to 0.2; the
// 1.2 floor keeps the "1.0 = built-in" reference line well inside the chart
// even when every bar is far below it.
func ratioAxisMax(groups []barGroup) float64 {
	m := 1.2
	for _, g := range groups {
		for _, b := range g.bars {
			if b.Note != "" {
				continue
			}
			m = max(m, b.Ratio, b.Target)
		}
	}
	// The epsilon keeps 1.2 from being rounded up to 1.4 by float error.
	return math.Ceil(m/0.2-1e-9) * 0.2
}

// ratioTickStep is 0.2 unless that would crowd the axis (only with absurd
// ratios), in which case it grows through 0.5, 1, 2, 5, 10, ….
func ratioTickStep(axisMax float64, widthPx int) float64 {
	step := 0.2
	for i := 0; i < 2000 && float64(widthPx)*step/axisMax < 10; i++ {
		step = nextNiceStep(step)
	}
	return step
}

// nextNiceStep returns the next value of the 1-2-5 sequence after step.
func nextNiceStep(step float64) float64 {
	m := step / math.Pow10(int(math.Floor(math.Log10(step))))
	if m > 1.5 && m < 3 {
		return step * 2.5
	}
	return step * 2
}

// renderRatioSection draws the legend, the grouped bars and the ratio axis.
func renderRatioSection(groups []barGroup) *image.RGBA {
	height := plotLegendH + plotRefLabelH + 6 + plotAxisH
	anyNoTarget := false
	for _, g := range groups {
		height += plotGroupH + len(g.bars)*plotRowH
		for _, b := range g.bars {
			if b.Note == "" && b.Target == 0 {
				anyNoTarget = true
			}
		}
	}
	img := image.NewRGBA(image.Rect(0, 0, plotWidth, height))
	fillRect(img, img.Bounds(), colWhite)

	drawRatioLegend(img, plotLegendH-7, anyNoTarget)

	axisMax := ratioAxisMax(groups)
	xOf := func(v float64) int {
		return plotBarX0 + int(math.Round(v/axisMax*float64(plotBarX1-plotBarX0)))
	}
	plotTop := plotLegendH + plotRefLabelH
	plotBottom := height - plotAxisH

	// Row backgrounds go first so grid lines, bars and text sit on top.
	y := plotTop
	type row struct {
		y  int
		bg color.RGBA
		b  Bar
	}
	var rows []row
	for gi, g := range groups {
		if gi > 0 {
			fillRect(img, image.Rect(plotLabelX0, y+2, plotWidth-plotMargin, y+3), colSep)
		}
		drawTextBold(img, plotLabelX0, y+17, fitText(g.name, plotWidth-2*plotMargin), colText)
		y += plotGroupH
		for i, b := range g.bars {
			bg := colWhite
			if i%2 == 1 {
				// Stripes help the eye cross the gap between a label and its bar.
				bg = colStripe
				fillRect(img, image.Rect(plotLabelX0, y, plotWidth-plotMargin, y+plotRowH), bg)
			}
			rows = append(rows, row{y: y, bg: bg, b: b})
			y += plotRowH
		}
	}

	step := ratioTickStep(axisMax, plotBarX1-plotBarX0)
	decimals := stepDecimals(step)
	lastLabelEnd := math.MinInt
	for i := 0; ; i++ {
		v := float64(i) * step
		if v > axisMax+1e-9 || i > 1000 {
			break
		}
		x := xOf(v)
		if i > 0 {
			fillRect(img, image.Rect(x, plotTop, x+1, plotBottom), colGrid)
		}
		fillRect(img, image.Rect(x, plotBottom, x+1, plotBottom+5), colAxis)
		label := formatNumber(v, decimals)
		lw := textWidth(label)
		lx := x - lw/2
		// Skip labels that would run into the previous one rather than overprint.
		if lx >= lastLabelEnd+8 {
			drawText(img, lx, plotBottom+18, label, colText)
			lastLabelEnd = lx + lw
		}
	}
	fillRect(img, image.Rect(plotBarX0, plotBottom, plotBarX1+1, plotBottom+1), colAxis)
	fillRect(img, image.Rect(plotBarX0, plotTop, plotBarX0+1, plotBottom), colAxis)
	caption := "ratio = ours / built-in median wall time (lower is better)"
	drawText(img, (plotBarX0+plotBarX1-textWidth(caption))/2, plotBottom+36, caption, colText)

	// Reference line at 1.0, labelled just above the plot area.
	refX := xOf(1)
	refLabel := "1.0 = built-in"
	lx := min(max(refX-textWidth(refLabel)/2, plotBarX0), plotWidth-plotMargin-textWidth(refLabel))
	drawText(img, lx, plotTop-6, refLabel, colRefLine)
	for yy := plotTop - 3; yy < plotBottom; yy++ {
		if (yy-plotTop+3)%8 < 5 {
			img.SetRGBA(refX, yy, colRefLine)
		}
	}

	labelRight := plotBarX0 - 10
	for _, r := range rows {
		b := r.b
		label := fitText(b.Label, labelRight-plotLabelX0)
		drawText(img, labelRight-textWidth(label), r.y+14, label, colText)
		if b.Note != "" {
			note := fitText(b.Note, plotWidth-plotMargin-plotBarX0-6)
			drawTextOnBg(img, plotBarX0+6, r.y+14, note, colMuted, r.bg)
			continue
		}
		col := colNoGoal
		switch {
		case b.Target > 0 && b.Ratio <= b.Target:
			col = colMeets
		case b.Target > 0:
			col = colMisses
		}
		end := xOf(b.Ratio)
		top := r.y + (plotRowH-plotBarH)/2
		fillRect(img, image.Rect(plotBarX0+1, top, end, top+plotBarH), col)
		valueX := end
		if b.Target > 0 {
			tx := xOf(b.Target)
			fillRect(img, image.Rect(tx-1, r.y+1, tx+1, r.y+plotRowH-1), colTarget)
			// Print the value past the target tick so the two never overlap.
			valueX = max(valueX, tx+1)
		}
		drawTextOnBg(img, valueX+5, r.y+14, formatRatio(b.Ratio), colText, r.bg)
	}
	return img
}

// drawRatioLegend draws the one-line key of the bar colours at baseline y.
func drawRatioLegend(img *image.RGBA, y int, anyNoTarget bool) {
	x := plotLabelX0
	swatch := func(c color.RGBA, text string) {
		fillRect(img, image.Rect(x, y-9, x+16, y), c)
		x += 22
		drawText(img, x, y, text, colText)
		x += textWidth(text)
	}
	sep := func() {
		// A drawn middle dot, since the 7x13 face only has ASCII glyphs.
		x += 9
		fillRect(img, image.Rect(x, y-5, x+3, y-2), colText)
		x += 3 + 9
	}
	swatch(colMeets, "green: meets its target")
	sep()
	swatch(colMisses, "red: misses it")
	sep()
	fillRect(img, image.Rect(x+2, y-12, x+4, y+2), colTarget)
	x += 10
	drawText(img, x, y, "target", colText)
	x += textWidth("target")
	if anyNoTarget {
		sep()
		swatch(colNoGoal, "blue: no target")
	}
}

// renderScaleSection draws the time-per-host line chart with its legend.
func renderScaleSection(points []Point) *image.RGBA {
	var hosts []int
	var series []string
	seen := map[string]bool{}
	yMaxData := 0.0
	for _, p := range points {
		if !slices.Contains(hosts, p.Hosts) {
			hosts = append(hosts, p.Hosts)
		}
		if !seen[p.Series] {
			seen[p.Series] = true
			series = append(series, p.Series)
		}
		if isPlottable(p.SecondsPerHost) {
			yMaxData = max(yMaxData, p.SecondsPerHost)
		}
	}
	slices.Sort(hosts)
	yTop, yStep := niceAxis(yMaxData)

	legend := layoutSeriesLegend(series)
	legendRows := 1
	if len(legend) > 0 {
		legendRows = legend[len(legend)-1].row + 1
	}
	plotTop := plotScaleGap + plotScaleTitleH
	plotBottom := plotTop + plotScaleH
	height := plotBottom + plotScaleAxisH + legendRows*plotScaleLegH + 4

	img := image.NewRGBA(image.Rect(0, 0, plotWidth, height))
	fillRect(img, img.Bounds(), colWhite)
	drawTextBold(img, plotMargin, plotScaleGap+14, "time per host (s) by number of hosts (forks = hosts)", colText)

	yOf := func(v float64) float64 {
		return float64(plotBottom) - v/yTop*float64(plotBottom-plotTop)
	}
	// Categorical x axis: host counts differ by orders of magnitude and only a
	// handful are measured, so equal spacing reads better than a linear scale.
	xOf := func(i int) float64 {
		return float64(plotScaleX0) + (float64(i)+0.5)*float64(plotScaleX1-plotScaleX0)/float64(len(hosts))
	}

	decimals := stepDecimals(yStep)
	for i := 0; ; i++ {
		v := float64(i) * yStep
		if v > yTop+yStep/1e6 || i > 100 {
			break
		}
		y := int(math.Round(yOf(v)))
		if i > 0 {
			fillRect(img, image.Rect(plotScaleX0+1, y, plotScaleX1, y+1), colGrid)
		}
		fillRect(img, image.Rect(plotScaleX0-5, y, plotScaleX0, y+1), colAxis)
		label := formatNumber(v, decimals)
		drawText(img, plotScaleX0-9-textWidth(label), y+5, label, colText)
	}
	fillRect(img, image.Rect(plotScaleX0, plotTop, plotScaleX0+1, plotBottom+1), colAxis)
	fillRect(img, image.Rect(plotScaleX0, plotBottom, plotScaleX1, plotBottom+1), colAxis)
	for i, h := range hosts {
		x := int(math.Round(xOf(i)))
		fillRect(img, image.Rect(x, plotBottom, x+1, plotBottom+5), colAxis)
		label := strconv.Itoa(h)
		drawText(img, x-textWidth(label)/2, plotBottom+18, label, colText)
	}
	caption := "hosts"
	drawText(img, (plotScaleX0+plotScaleX1-textWidth(caption))/2, plotBottom+36, caption, colText)

	for si, name := range series {
		col := seriesPalette[si%len(seriesPalette)]
		type pt struct{ x, y float64 }
		var pts []pt
		// hosts is sorted, so walking it builds the polyline left to right.
		for hi, h := range hosts {
			for _, p := range points {
				if p.Series == name && p.Hosts == h && isPlottable(p.SecondsPerHost) {
					pts = append(pts, pt{xOf(hi), yOf(p.SecondsPerHost)})
				}
			}
		}
		for i := 1; i < len(pts); i++ {
			drawLine(img, pts[i-1].x, pts[i-1].y, pts[i].x, pts[i].y, 2, col)
		}
		for _, p := range pts {
			fillCircle(img, int(math.Round(p.x)), int(math.Round(p.y)), 4, col)
		}
	}

	legendTop := plotBottom + plotScaleAxisH
	for i, item := range legend {
		col := seriesPalette[i%len(seriesPalette)]
		y := legendTop + item.row*plotScaleLegH + 10
		drawLine(img, float64(item.x), float64(y-4), float64(item.x+22), float64(y-4), 2, col)
		fillCircle(img, item.x+11, y-4, 4, col)
		drawText(img, item.x+30, y+1, item.text, colText)
	}
	return img
}

// legendItem is one placed entry of the series legend.
type legendItem struct {
	x, row int
	text   string
}

// layoutSeriesLegend flows the series names left to right, wrapping to new
// rows, so any number of series fits the fixed figure width.
func layoutSeriesLegend(series []string) []legendItem {
	const swatchW, gap = 30, 28
	right := plotWidth - plotMargin
	x, row := plotScaleX0, 0
	var items []legendItem
	for _, s := range series {
		text := fitText(s, right-plotScaleX0-swatchW)
		w := swatchW + textWidth(text)
		if x > plotScaleX0 && x+w > right {
			x, row = plotScaleX0, row+1
		}
		items = append(items, legendItem{x: x, row: row, text: text})
		x += w + gap
	}
	return items
}

// niceAxis returns the top and the tick step of a linear axis from 0 that
// covers maxValue with 3 to 5 intervals (4 to 6 tick labels) of a 1-2-2.5-5
// step. Starting one decade below the value guarantees the first candidate
// gives too many intervals; each next candidate is at most twice the
// previous one, so the first that fits still gives at least 3.
func niceAxis(maxValue float64) (top, step float64) {
	if !isPlottable(maxValue) || maxValue == 0 {
		maxValue = 1
	}
	exp := math.Floor(math.Log10(maxValue)) - 1
	for range 10 {
		for _, m := range []float64{1, 2, 2.5, 5} {
			step = m * math.Pow(10, exp)
			n := math.Ceil(maxValue/step - 1e-9)
			if n <= 5 {
				return n * step, step
			}
		}
		exp++
	}
	return maxValue, maxValue / 5
}

// stepDecimals is the number of decimals needed to print multiples of step
// exactly, so tick labels neither lose digits nor show float noise.
func stepDecimals(step float64) int {
	for d := 0; d < 8; d++ {
		s := step * math.Pow10(d)
		if math.Abs(s-math.Round(s)) < 1e-6*math.Max(1, s) {
			return d
		}
	}
	return 8
}

// formatNumber prints a tick value; huge values switch to exponent notation
// so a label stays short enough not to collide with its neighbours.
func formatNumber(v float64, decimals int) string {
	if math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// formatRatio prints a bar's value with 3 decimals, the precision the
// benchmark's text report uses.
func formatRatio(v float64) string {
	if v >= 1e4 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// plotASCII maps text onto the runes basicfont.Face7x13 has (printable
// ASCII). Unknown runes would otherwise render as a replacement box; common
// typographic ones get an ASCII look-alike instead.
func plotASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte(' ')
		case r == '÷':
			b.WriteByte('/')
		case r == '×':
			b.WriteByte('x')
		case r == '·' || r == '•':
			b.WriteByte('-')
		case r == '…':
			b.WriteString("...")
		case r == '–' || r == '—' || r == '−':
			b.WriteByte('-')
		case r == '‘' || r == '’':
			b.WriteByte('\'')
		case r == '“' || r == '”':
			b.WriteByte('"')
		case r == '≤':
			b.WriteString("<=")
		case r == '≥':
			b.WriteString(">=")
		case r == '→':
			b.WriteString("->")
		case r == '\u00a0':
			b.WriteByte(' ')
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// textWidth is the drawn width of s in pixels.
func textWidth(s string) int {
	return font.MeasureString(plotFace, plotASCII(s)).Ceil()
}

// fitText shortens s with "..." so it is at most maxW pixels wide; labels
// that run into the bars would be worse than a truncated one.
func fitText(s string, maxW int) string {
	s = plotASCII(s)
	if textWidth(s) <= maxW {
		return s
	}
	n := maxW/plotCharW - 3
	if n <= 0 {
		return ""
	}
	return s[:n] + "..."
}

// drawText draws s with its baseline at y.
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: plotFace, Dot: fixed.P(x, y)}
	d.DrawString(plotASCII(s))
}

// drawTextBold fakes a bold weight, which the single built-in face lacks, by
// drawing the text twice one pixel apart.
func drawTextBold(img *image.RGBA, x, y int, s string, c color.RGBA) {
	drawText(img, x, y, s, c)
	drawText(img, x+1, y, s, c)
}

// drawTextOnBg clears the text's box to bg first, so grid lines and the
// dashed 1.0 line do not strike through values and notes.
func drawTextOnBg(img *image.RGBA, x, y int, s string, c, bg color.RGBA) {
	fillRect(img, image.Rect(x-2, y-plotAscent-1, x+textWidth(s)+2, y+3), bg)
	drawText(img, x, y, s, c)
}

// fillRect fills r (clipped to img) with c.
func fillRect(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}

// drawLine draws a line of the given width by stamping squares along it at
// half-pixel steps; without anti-aliasing that is as good as a proper
// thick-line algorithm and much shorter.
func drawLine(img *image.RGBA, x0, y0, x1, y1 float64, width int, c color.RGBA) {
	steps := int(math.Ceil(2 * math.Max(math.Abs(x1-x0), math.Abs(y1-y0))))
	steps = min(max(steps, 1), 100000)
	half := width / 2
	for i := 0; i <= steps; i++ {
		t := float64(i) / float64(steps)
		x := int(math.Round(x0 + (x1-x0)*t))
		y := int(math.Round(y0 + (y1-y0)*t))
		fillRect(img, image.Rect(x-half, y-half, x-half+width, y-half+width), c)
	}
}

// fillCircle draws a filled dot of radius r centred on (cx, cy).
func fillCircle(img *image.RGBA, cx, cy, r int, c color.RGBA) {
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			// The +r makes small dots rounder than a strict r² cut-off.
			if dx*dx+dy*dy <= r*r+r {
				img.SetRGBA(cx+dx, cy+dy, c)
			}
		}
	}
}
