"""The webrole's state as testinfra sees it inside the instance."""

import os


def test_web_running_and_enabled(host):
    web = host.service("web")
    assert web.is_running
    assert web.is_enabled


def test_unit_file_names_the_version(host):
    unit = host.file("/etc/systemd/system/web.service")
    assert unit.is_file
    assert unit.mode == 0o644
    assert "Description=web 1\n" in unit.content_string
    assert "ExecStart=/bin/sleep infinity\n" in unit.content_string


def test_molecule_environment():
    assert os.environ["MOLECULE_SCENARIO_NAME"] == "testinfra"
    assert os.environ["WEB_VERIFIER_ENV"] == "from verifier.env"
