"""Run only because verifier.additional_files_or_dirs names it (not a test_*.py file)."""


def test_web_started_once(host):
    started = host.run("journalctl -u web.service --no-pager -o cat")
    assert started.rc == 0
    assert "Started web.service" in started.stdout
