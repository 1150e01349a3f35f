package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSetPausedGoesOnPastAFailure(t *testing.T) {
	cases := []struct {
		name   string
		pause  bool
		fails  string // the container whose docker call fails
		want   []string
		errHas string
	}{
		{"all paused", true, "", []string{"pause a", "pause b", "pause c"}, ""},
		{"a failed pause still reaches the others", true, "b", []string{"pause a", "pause b", "pause c"}, "docker pause b: no such container"},
		{"a failed resume still resumes the others", false, "a", []string{"unpause a", "unpause b", "unpause c"}, "docker unpause a: no such container"},
		{"nothing to do", false, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids := []string{"a", "b", "c"}
			if c.want == nil {
				ids = nil
			}
			var calls []string
			err := setPaused(ids, c.pause, func(verb, id string) error {
				calls = append(calls, verb+" "+id)
				if id == c.fails {
					return errors.New("no such container")
				}
				return nil
			})
			assert.Equal(t, c.want, calls)
			if c.errHas == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, c.errHas)
			}
		})
	}
}
