package unit_override_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/unitfile"
	"github.com/richt/services/testenv"
)

// TestDropInOrderMatchesSystemd lays out drop-ins across every directory systemd reads
// and checks that unitfile.Files (on an identical tree on the host) lists what systemd's
// own DropInPaths lists, in the same order.
func TestDropInOrderMatchesSystemd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	target := testenv.Start(t)
	files := []string{
		"/usr/lib/systemd/system/web-app@.service",
		"/usr/lib/systemd/system/web-app@.service.d/10-vendor.conf",
		"/usr/lib/systemd/system/web-app@blue.service.d/20-same.conf",
		"/etc/systemd/system/web-app@blue.service.d/20-same.conf",
		"/run/systemd/system/service.d/05-all.conf",
		"/etc/systemd/system/web-.service.d/15-prefix.conf",
		"/usr/local/lib/systemd/system/web-app@.service.d/25-local.conf",
		"/run/systemd/system/web-app@blue.service.d/30-run.conf",
		"/etc/systemd/system/web-app@blue.service.d/30-run.conf",
		"/etc/systemd/system/web-app@blue.service.d/40-admin.conf",
		"/etc/systemd/system/service.d/40-admin.conf",
	}
	root := t.TempDir()
	ctx := context.Background()
	for _, f := range files {
		content := "[Service]\n"
		if strings.HasSuffix(f, "@.service") {
			content = "[Service]\nExecStart=/bin/sleep infinity\n"
		}
		require.NoError(t, target.WriteFile(ctx, f, []byte(content), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte(content), 0o644))
	}
	target.MustExec(t, "systemctl", "daemon-reload")
	out := strings.TrimSpace(target.MustExec(t, "systemctl", "show", "--value", "-p", "DropInPaths", "web-app@blue.service"))
	systemd := strings.Fields(out)
	frag, ours := unitfile.Files(root, "web-app@blue.service")
	t.Logf("systemd %s DropInPaths:\n  %s", testenv.Suite(), strings.Join(systemd, "\n  "))
	assert.Equal(t, "/usr/lib/systemd/system/web-app@.service", frag)
	assert.Equal(t, systemd, ours)
}
