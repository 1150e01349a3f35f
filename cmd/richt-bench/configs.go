package main

import (
	"fmt"
	"path/filepath"
)

// configPath is the file both sides of the config rows write: a setting of the demo
// service that a reload takes in.
const configPath = "/etc/demo.conf"

// configService is the demo service as one richt.services.service task that also owns
// configPath: what a user converging the whole service writes. Its process names its
// reactions: the package and the reload drop-in restart it, the settings and the level
// drop-in reload it; the health probe is the demo play's.
func configService(level string) task {
	return task{"name": "ours: the demo service with its config", "richt.services.service": map[string]any{
		"name": "{{ service_name }}", "packages": "{{ service_packages }}", "dropins": "{{ service_dropins }}",
		"configs": []map[string]any{{"name": "settings", "path": configPath,
			"content": "# demo settings, written by richt-bench's service task\nlevel=" + level + "\n"}},
		"processes": []map[string]any{{"unit": "demo.service", "enabled": true, "timeout": "20s",
			"health":     map[string]any{"banner": "127.0.0.1:8080", "expect": "demo ready"},
			"restart_on": []string{"package:demo", "dropin:demo.service/10-reload.conf"},
			"reload_on":  []string{"config:settings", "dropin:demo.service/20-level.conf"}}},
	}}
}

// configBuiltin is what a user writes with the built-ins for the same change: the
// template and a handler that reloads the service.
func configBuiltin(root, level string) []task {
	return []task{
		{"name": "built-in config", "ansible.builtin.template": map[string]any{
			"src": filepath.Join(root, "cmd/richt-bench/config.j2"), "dest": configPath, "mode": "0644"},
			"vars": map[string]any{"bench_level": level}, "notify": "bench config reload"},
		flush(),
	}
}

// configPlay measures a config change that reloads the demo service under row: each
// side writes a level of its own each round, so every measured task is a change.
func configPlay(root, row string, rounds int, mitogen bool) rowsPlay {
	return rowsPlay{name: row, rounds: rounds, mitogen: mitogen, hosts: "one", forks: 1,
		ours: func(r int, side string, mark func(string) task) []task {
			return []task{mark(row), configService(fmt.Sprintf("%s-%d", side, r))}
		},
		builtin: func(r int, side string, mark func(string) task) []task {
			return append([]task{mark(row)}, configBuiltin(root, fmt.Sprintf("%s-%d", side, r))...)
		},
		post: []task{{"name": "remove the bench config", "ansible.builtin.file": map[string]any{"path": configPath, "state": "absent"}}},
	}
}
