package override

// PredictChange answers, reading only, whether a run with these arguments would change
// the file's content (what unit_files_changed reports): the service module records the
// reactions a file change will owe before it changes anything.
func PredictChange(root string, args map[string]any) (bool, error) {
	s := Spec()
	vals, err := s.Validate(args)
	if err != nil {
		return false, err
	}
	var v Params
	if err := s.Decode(vals, &v); err != nil {
		return false, err
	}
	_, p, err := target(v)
	if err != nil {
		return false, err
	}
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
