package plot

import (
	"image/color"

	"golang.org/x/image/font/basicfont"
)

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
