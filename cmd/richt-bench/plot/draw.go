package plot

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/math/fixed"
)

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
