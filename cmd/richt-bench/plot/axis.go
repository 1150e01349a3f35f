package plot

import (
	"math"
	"strconv"
)

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
