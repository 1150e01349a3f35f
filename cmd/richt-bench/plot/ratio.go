package plot

import (
	"image"
	"image/color"
	"math"
)

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
