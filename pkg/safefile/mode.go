package safefile

import (
	"fmt"
	"os"
	"strings"

	"github.com/richt/services/pkg/filemode"
)

// CheckMode refuses a mode that lets anyone but the owner change what root runs or reads,
// and the set-id and sticky bits, which mean nothing on such a file but a mistake. param
// names the parameter ("mode", "configs[0].mode"), what the file ("unit file").
func CheckMode(param string, m os.FileMode, what string) error {
	var why []string
	if m&0o022 != 0 {
		why = append(why, fmt.Sprintf("lets group or others write the %s; a %s writable by a non-root user is a root escalation", what, what))
	}
	if special := m & (os.ModeSetuid | os.ModeSetgid | os.ModeSticky); special != 0 {
		var bits []string
		for _, b := range []struct {
			bit  os.FileMode
			name string
		}{{os.ModeSetuid, "setuid"}, {os.ModeSetgid, "setgid"}, {os.ModeSticky, "sticky"}} {
			if special&b.bit != 0 {
				bits = append(bits, b.name)
			}
		}
		why = append(why, fmt.Sprintf("sets the %s bit, which a %s must never carry", strings.Join(bits, " and "), what))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %04o %s; use 0644 or stricter (0600 to keep it from being read too); nothing was written", param, filemode.Unix(m), strings.Join(why, "; it "))
}
