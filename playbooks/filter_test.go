package playbooks_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// The role's trigger filter reads a drop-in's `reload` by Ansible's boolean rules: the
// string "false" does not reload (Python's bool("false") is True), junk is an error naming
// the drop-in.
func TestServiceTriggersReloadFlag(t *testing.T) {
	coll, err := collection()
	require.NoError(t, err)
	code := `
from ansible_collections.richt.services.plugins.filter.service import service_triggers
from ansible.errors import AnsibleFilterError
proc = {"unit": "demo"}
def dropins(flag):
    return {"changed": True, "results": [{"changed": True, "item": {"unit": "demo", "name": "x.conf", "reload": flag}}]}
for flag, reloads in [("false", False), ("no", False), (False, False), ("0", False),
                      ("true", True), ("yes", True), (True, True)]:
    t = service_triggers(proc, dropins=dropins(flag))
    restart_hits = len(t["restart_on"][2]["drop-ins"]["results"])
    reload_hits = len(t["reload_on"][0]["reload drop-ins"]["results"]) if t["reload_on"] else 0
    assert (reload_hits, restart_hits) == ((1, 0) if reloads else (0, 1)), (flag, t)
try:
    service_triggers(proc, dropins=dropins("perhaps"))
    raise SystemExit("junk accepted")
except AnsibleFilterError as e:
    assert "x.conf" in str(e) and "perhaps" in str(e), str(e)
# The role's one loop over unit files then drop-ins: an item with a name is a drop-in.
files = {"changed": True, "results": [
    {"changed": True, "item": {"unit": "demo", "content": "x"}},
    {"changed": True, "item": {"unit": "demo", "name": "r.conf", "reload": True}},
    {"changed": False, "item": {"unit": "demo", "name": "s.conf"}},
    {"changed": True, "item": {"unit": "other", "name": "o.conf"}}]}
t = service_triggers(proc, files=files)
assert [r["item"].get("name") for r in t["restart_on"][1]["unit files"]["results"]] == [None], t
assert [r["item"]["name"] for r in t["restart_on"][2]["drop-ins"]["results"]] == ["s.conf"], t
assert [r["item"]["name"] for r in t["reload_on"][0]["reload drop-ins"]["results"]] == ["r.conf"], t
print("ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", code)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+coll)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "ok\n", string(out))
}
