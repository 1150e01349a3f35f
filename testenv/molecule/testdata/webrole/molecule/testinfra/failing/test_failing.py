"""A check that fails on a converged instance: the verifier's failure path."""


def test_web_stopped(host):
    assert not host.service("web").is_running, "web.service is running"


def test_web_enabled(host):
    assert host.service("web").is_enabled
