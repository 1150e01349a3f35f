package override

import "fmt"

// PredictChange answers, reading only, whether a run with these arguments would change
// the file's content (what unit_files_changed reports): the service module records the
// reactions a file change will owe before it changes anything.
func PredictChange(root string, args map[string]any) (bool, error) {
	_, parsed, err := Spec().ValidateParse(args)
	if err != nil {
		return false, err
	}
	task, ok := parsed.(Task)
	if !ok {
		return false, fmt.Errorf("internal error: unit_override's Spec parsed %T, not a Task", parsed)
	}
	v, p := task.Params, task.Path
	f, err := Observe(root, p)
	if err != nil {
		return false, err
	}
	if v.State == "absent" {
		return f.Exists, nil
	}
	// Content, mode or owner: every change of the file reaches a process as a changed
	// trigger (the owner is root unless the task names another, as in the service module).
	w := Want{Unit: v.Unit, Path: p, Present: true, Content: []byte(v.content()), Mode: v.Mode}
	plan, err := Decide(w, f)
	if err != nil {
		return false, err
	}
	return plan.Changed(), nil
}
