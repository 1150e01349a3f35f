package testenv

// WaitForSpares waits until no spare of the pool is booting, for a benchmark that must
// not measure one side while the other's boot runs.
func WaitForSpares() { pool.wg.Wait() }
