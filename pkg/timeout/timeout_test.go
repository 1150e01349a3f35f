package timeout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"5s", 5 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"10m", 10 * time.Minute, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"0s", 0, "positive"},
		{"-1s", 0, "positive"},
		{"5", 5 * time.Second, ""},
		{"1.5", 1500 * time.Millisecond, ""},
		{"0", 0, "positive"},
		{"99999999999999999999", 0, "not a duration"},
		{"1e3", 0, "not a duration"},
		{"NaN", 0, "not a duration"},
		{"", 0, "not a duration"},
		{"five seconds", 0, "not a duration"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := Parse(c.in)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"5s", "1m30s", "-1s", "0", "1h2m3s4ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err == nil && d <= 0 {
			t.Fatalf("Parse(%q) = %v without error", s, d)
		}
	})
}
