"""bench/build/fetch-peer: the upstream peer through a private apt configuration,
and its bad inputs as one-line errors.  Needs the Debian mirror (as make
deps does)."""

import hashlib
import json
import os
import subprocess

from tests.guest import BUILD_DIR, REPO


def fetch(tmp, **env):
    e = dict(os.environ, BUILD_DIR=str(tmp), **env)
    return subprocess.run([str(REPO / "bench/build/fetch-peer")], env=e, capture_output=True, text=True,
                          timeout=600)


def errors(r):
    return [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]


def test_unknown_suite_or_package_is_one_line_error_and_system_apt_untouched(tmp_path):
    r = fetch(tmp_path, PEER_SUITE="no-such-suite-backports")
    assert r.returncode != 0 and len(errors(r)) == 1, r.stderr
    assert "apt-get update of no-such-suite-backports" in errors(r)[0] and "fetch-peer.log" in errors(r)[0]
    r = fetch(tmp_path, PEER_PACKAGE="linux-source-0.0")
    assert r.returncode != 0 and len(errors(r)) == 1, r.stderr
    assert "package linux-source-0.0 not found in trixie-backports" in errors(r)[0]
    # the private configuration lives under BUILD_DIR and names the system's mirror
    src = (tmp_path / "apt" / "peer" / "sources.list").read_text()
    assert "trixie-backports main" in src and "signed-by=" in src
    assert not (tmp_path / "peer" / "peer-info.json").exists()


def test_peer_info_records_version_and_sha256():
    info = BUILD_DIR / "peer" / "peer-info.json"
    if not info.exists():  # make test does not fetch the peer itself
        r = fetch(BUILD_DIR)
        assert r.returncode == 0, r.stderr
    d = json.loads(info.read_text())
    assert d["package"] == "linux-source-7.3" and len(d["sha256"]) == 64 and d["version"]
    assert d["config_package"] == "linux-config-7.3" and len(d["config_sha256"]) == 64
    assert d["config"].endswith("/config.amd64_none_amd64.xz") and os.path.isfile(d["config"])
    # The record describes the packages on disk, not an earlier download.
    for pkg, key in ((d["package"], "sha256"), (d["config_package"], "config_sha256")):
        debs = sorted((BUILD_DIR / "peer").glob(f"{pkg}_*.deb"))
        assert len(debs) == 1, debs
        assert hashlib.sha256(debs[0].read_bytes()).hexdigest() == d[key], debs[0]
