package plot

import (
	"image"
	"math"
	"slices"
	"strconv"
)

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
