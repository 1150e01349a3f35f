package molecule

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// docsScenario is molecule.yml as Molecule's documentation writes a docker scenario for a
// systemd image.
const docsScenario = `---
dependency:
  name: galaxy
driver:
  name: docker
platforms:
  - name: instance
    image: docker.io/geerlingguy/docker-rockylinux9-ansible:latest
    command: ""
    volumes:
      - /sys/fs/cgroup:/sys/fs/cgroup:rw
    cgroupns_mode: host
    privileged: true
    pre_build_image: true
    groups: [web]
provisioner:
  name: ansible
  env:
    FOO: bar
  options:
    diff: true
    vv: true
  config_options:
    defaults:
      gathering: explicit
  inventory:
    group_vars:
      web: {port: 8080}
    host_vars:
      instance: {note: hi}
verifier:
  name: ansible
`

func TestParseDocsScenario(t *testing.T) {
	c, err := Parse(strings.NewReader(docsScenario))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Platforms[0]
	if p.Name != "instance" || p.Image != "docker.io/geerlingguy/docker-rockylinux9-ansible:latest" || !reflect.DeepEqual(p.Groups, []string{"web"}) {
		t.Errorf("platform = %+v", p)
	}
	if want := []string{"cgroupns_mode", "command", "pre_build_image", "privileged", "volumes"}; !reflect.DeepEqual(p.Subsumed, want) {
		t.Errorf("subsumed = %v, want %v", p.Subsumed, want)
	}
	if c.Provisioner.Env["FOO"] != "bar" || c.Provisioner.HostVars["instance"]["note"] != "hi" || c.Provisioner.GroupVars["web"]["port"] != 8080 {
		t.Errorf("provisioner = %+v", c.Provisioner)
	}
	if got := optionArgs(c.Provisioner.Options); !reflect.DeepEqual(got, []string{"--diff", "-vv"}) {
		t.Errorf("options → %v", got)
	}
	if c.Richt.Repository != "fixtures" {
		t.Errorf("repository default = %q", c.Richt.Repository)
	}
	want := []string{"dependency", "cleanup", "destroy", "syntax", "create", "prepare", "converge", "idempotence", "side_effect", "verify", "cleanup", "destroy"}
	if got := c.Sequence("test"); !reflect.DeepEqual(got, want) {
		t.Errorf("test sequence = %v", got)
	}
}

func TestParseSequencesAndUpgrade(t *testing.T) {
	c, err := Parse(strings.NewReader(`
platforms: [{name: a, image: almalinux:10}]
richt:
  upgrade: {var: v, from: "1", to: "2", expect: {web.service: restarted}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sequence("test"); !reflect.DeepEqual(got[6:8], []string{"converge", "upgrade"}) {
		t.Errorf("upgrade test sequence = %v", got)
	}
	c, err = Parse(strings.NewReader(`
platforms: [{name: a, image: almalinux:10}]
scenario: {test_sequence: [create, converge, destroy], converge_sequence: [converge]}
richt:
  upgrade: {var: v, from: "1", to: "2", expect: {web.service: restarted}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sequence("test"); !reflect.DeepEqual(got, []string{"create", "converge", "destroy"}) {
		t.Errorf("a given test_sequence wins: %v", got)
	}
	if got := c.Sequence("converge"); !reflect.DeepEqual(got, []string{"converge"}) {
		t.Errorf("converge_sequence = %v", got)
	}
	if c.Sequence("bogus") != nil {
		t.Error("unknown sub-command has a sequence")
	}
}

// Every refusal names what it refuses.
func TestParseRefuses(t *testing.T) {
	const plat = "platforms: [{name: a, image: almalinux:10}]\n"
	for _, tc := range []struct{ name, yml, want string }{
		{"podman driver", "driver: {name: podman}\n" + plat, `driver.name "podman": only docker`},
		{"delegated driver", "driver: {name: default}\n" + plat, `driver.name "default"`},
		{"unmanaged", "driver: {name: docker, options: {managed: false}}\n" + plat, "driver.options.managed"},
		{"no platforms", "driver: {name: docker}\n", "at least one platform"},
		{"unknown top key", "foo: 1\n" + plat, "foo: unknown key"},
		{"lint", "lint: yamllint\n" + plat, "lint:"},
		{"shared_state", "shared_state: true\n" + plat, "shared_state"},
		{"platform dockerfile", "platforms: [{name: a, image: almalinux:10, dockerfile: Dockerfile.j2}]\n", "platforms[0].dockerfile: not supported"},
		{"platform unknown", "platforms: [{name: a, image: almalinux:10, networks: [x]}]\n", "platforms[0].networks"},
		{"platform unnamed", "platforms: [{image: almalinux:10}]\n", "platforms[0].name: missing"},
		{"platform no image", "platforms: [{name: a}]\n", "platforms[0].image: missing"},
		{"platform twice", "platforms: [{name: a, image: almalinux:10}, {name: a, image: almalinux:9}]\n", `"a": given twice`},
		{"bad host name", "platforms: [{name: 'a b', image: almalinux:10}]\n", "not a usable inventory host name"},
		{"bad group", "platforms: [{name: a, image: almalinux:10, groups: [all]}]\n", `"all" is not a usable group`},
		{"provisioner", "provisioner: {name: salt}\n" + plat, `provisioner.name "salt"`},
		{"provisioner key", "provisioner: {ansible_args: [-v]}\n" + plat, "provisioner.ansible_args: not supported"},
		{"inventory links", "provisioner: {inventory: {links: {hosts: x}}}\n" + plat, "provisioner.inventory.links"},
		{"host_vars of no platform", "provisioner: {inventory: {host_vars: {b: {x: 1}}}}\n" + plat, "host_vars.b: no platform"},
		{"playbooks action", "provisioner: {playbooks: {deploy: d.yml}}\n" + plat, "provisioner.playbooks.deploy"},
		{"sequence action", "scenario: {test_sequence: [create, lint]}\n" + plat, `"lint" is not an action`},
		{"scenario key", "scenario: {setup: 1}\n" + plat, "scenario.setup"},
		{"verifier", "verifier: {name: goss}\n" + plat, `verifier.name "goss"`},
		{"verifier disabled", "verifier: {enabled: false}\n" + plat, "verifier.enabled"},
		{"dependency shell", "dependency: {name: shell}\n" + plat, "dependency.name shell"},
		{"dependency options", "dependency: {name: galaxy, options: {role-file: r.yml}}\n" + plat, "dependency.options"},
		{"richt unknown", "richt: {foo: 1}\n" + plat, "richt.foo"},
		{"package field", "richt: {packages: [{name: p, version: '1', colour: red}]}\n" + plat, "richt.packages[0]"},
		{"package no version", "richt: {packages: [{name: p}]}\n" + plat, "name and version are required"},
		{"upgrade no expect", "richt: {upgrade: {var: v, from: 1, to: 2}}\n" + plat, "richt.upgrade.expect"},
		{"upgrade no var", "richt: {upgrade: {from: 1, to: 2, expect: {a: restarted}}}\n" + plat, "var, from and to"},
		{"upgrade outcome", "richt: {upgrade: {var: v, from: 1, to: 2, expect: {a: bounced}}}\n" + plat, `"bounced"`},
		{"not a mapping", "driver: [docker]\n" + plat, "driver: want a mapping"},
		{"not yaml", "platforms: [\n", "molecule.yml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"A": "1", "EMPTY": ""}
	get := func(k string) string { return env[k] }
	for in, want := range map[string]string{
		"x$A":            "x1",
		"${A}x":          "1x",
		"${B:-9}":        "9",
		"${EMPTY:-9}":    "9",
		"${A:-9}":        "1",
		"${B-8}":         "8",
		"$$A":            "$A",
		"${UNSET}-":      "-",
		"image: el${A}0": "image: el10",
	} {
		if got := ExpandEnv(in, get); got != want {
			t.Errorf("ExpandEnv(%q) = %q, want %q", in, got, want)
		}
	}
}

// The test data's scenarios all parse: they are what the end-to-end tests run.
func TestTestdataScenariosParse(t *testing.T) {
	files, _ := filepath.Glob("testdata/*/molecule/*/molecule.yml")
	roleFiles, _ := filepath.Glob("../../roles/*/molecule/*/molecule.yml")
	files = append(files, roleFiles...)
	if len(files) < 6 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(strings.NewReader(ExpandEnv(string(data), func(string) string { return "" })))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, p := range c.Platforms {
			if _, err := GenerationOf(p.Image, ""); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
}
