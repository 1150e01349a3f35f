// Package plot draws richt-bench's figure: ratio bars (ours ÷ built-in, one group per
// comparison, each bar with its target) above the scaling curve (seconds per host against
// the number of targets). It knows nothing of the rows: the bench hands it bars and points.
package plot
