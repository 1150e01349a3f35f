# Run by pkg/rollback (keep.go) as: PYTHON -I -c <this file> MODE DEST BUILD...
#
# MODE is "check" (say which builds the repositories offer) or "fetch" (also download
# them and copy each into DEST). Each BUILD is one JSON object with the keys nevra, name,
# epoch, version, release, arch and file (the kept file's name in DEST), and may name the
# repository it must come from ("repo": a fetch that carries out a plan takes each build
# from the repository the plan named, never from another one that has it). A fetched build
# is copied to a temporary file beside DEST/file, ".FILE.richt-DIGITS", mode 0600 and
# synced; keep.go renames it into place. The answer is one JSON object on the last stdout
# line that starts with MARKER, so whatever DNF or a plugin prints cannot break it:
#   {"found": {NEVRA: {"repo": ID, "path": TEMPORARY FILE or "", "gpgcheck": BOOL}}, "missing": [NEVRA, ...]}
# or {"error": MESSAGE} with a non-zero exit. A found build also says whether its
# repository has gpgcheck on ("gpgcheck": true, in both modes): in fetch mode its signature was then checked here as
# DNF checks it before installing from that repository (the key imported from the
# repository's gpgkey as `dnf -y` would), and a build it refuses (unsigned, a bad or
# unknown signature) is an error, never kept: a rollback installs the kept file as a local
# package, which DNF does not check unless told to.
#
# Check mode writes nothing: the repositories' metadata goes to a temporary cache
# directory, removed when the script ends, not to DNF's cache.
#
# DNF 4's Python API, because targets have no `dnf download` (dnf-plugins-core) and
# `dnf reinstall --downloadonly --downloaddir` copies nothing from file:// repositories.
# The copy is made here, before base.close(): with keepcache off, close() deletes what
# download_packages fetched. Written for the oldest interpreter DNF 4 runs on (EL 8's
# Python 3.6).
import json
import os
import random
import shutil
import sys
import tempfile

MARKER = "RICHT-KEEP-RESULT "
KEYS = ("nevra", "name", "epoch", "version", "release", "arch", "file")


def answer(obj, code):
    # A newline first: DNF may have left a line unfinished.
    sys.stdout.flush()
    sys.stdout.write("\n" + MARKER + json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()
    sys.exit(code)


def parse_builds(args):
    builds = []
    for arg in args:
        try:
            b = json.loads(arg)
        except ValueError as e:
            answer({"error": "build argument %r is not JSON: %s" % (arg, e)}, 2)
        if not isinstance(b, dict) or any(k not in b for k in KEYS):
            answer({"error": "build argument %r lacks one of %s" % (arg, ", ".join(KEYS))}, 2)
        builds.append(b)
    return builds


def is_local(pkg):
    # A build that a local repository carries needs no download.
    check = getattr(pkg, "_is_local_pkg", None)
    try:
        return bool(check()) if check else False
    except Exception:
        return False


def preference(pkg):
    repo = getattr(pkg, "repo", None)
    return (
        0 if is_local(pkg) else 1,
        getattr(repo, "priority", 99),
        getattr(repo, "cost", 1000),
        str(getattr(pkg, "reponame", "")),
    )


def lookup(base, builds):
    available = base.sack.query().available()
    found, missing = {}, []
    for b in builds:
        matches = list(available.filter(
            name=b["name"], epoch=int(b["epoch"]), version=b["version"],
            release=b["release"], arch=b["arch"]))
        if b.get("repo"):
            matches = [m for m in matches if str(getattr(m, "reponame", "")) == b["repo"]]
        if not matches:
            missing.append(b["nevra"])
            continue
        matches.sort(key=preference)
        found[b["nevra"]] = matches[0]
    return found, missing


def read_repos(base, cachedir=None):
    base.conf.read()
    if cachedir:
        base.conf.cachedir = cachedir
    # The CLI reads /etc/dnf/vars; an API script has to ask (older DNF 4 has no varsdir).
    subst = base.conf.substitutions
    if hasattr(subst, "update_from_etc"):
        try:
            subst.update_from_etc(base.conf.installroot, varsdir=base.conf.varsdir)
        except TypeError:
            subst.update_from_etc(base.conf.installroot)
    base.read_all_repos()
    # One repository that cannot be reached must not hide the builds the others carry.
    for repo in base.repos.iter_enabled():
        repo.skip_if_unavailable = True
    base.fill_sack(load_system_repo=False, load_available_repos=True)


def copy_into(src, dest, name):
    """Copies src to a new ".NAME.richt-DIGITS" in dest (0600, synced); returns its path."""
    for _ in range(100):
        tmp = os.path.join(dest, ".%s.richt-%d" % (name, random.randint(0, 2 ** 32 - 1)))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        break
    else:
        raise RuntimeError("no free temporary name for %s in %s" % (name, dest))
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


class Refused(Exception):
    """A build DNF would not install from its repository: its message is the answer."""


def gpgcheck_on(pkg):
    return bool(getattr(getattr(pkg, "repo", None), "gpgcheck", False))


def check_signature(base, pkg, nevra):
    """Checks pkg's signature when its repository has gpgcheck on, as DNF does before it
    installs from there; returns whether it was checked. Raises when DNF would refuse it."""
    if not gpgcheck_on(pkg):
        return False
    code, msg = base.package_signature_check(pkg)
    if code == 1:
        # The signing key is not in rpm's keyring yet: imported from the repository's
        # gpgkey as `dnf -y install` does (DNF verifies it is the key the package names).
        try:
            base._get_key_for_package(pkg, askcb=lambda *a: True, fullaskcb=lambda *a: True)
        except Exception as e:
            msg = "%s; its key could not be imported from the repository's gpgkey: %s" % (msg, e)
        else:
            code, msg = base.package_signature_check(pkg)
    if code != 0:
        raise Refused(
            "%s from repository %s, which has gpgcheck on, fails DNF's signature check (%s): DNF "
            "would not install it from there, so it is not kept for a rollback to install"
            % (nevra, pkg.reponame, (msg or "not signed").strip()))
    return True


def fetch(base, found, files, dest):
    base.download_packages(list(found.values()))
    out, made = {}, []
    try:
        for nevra, pkg in found.items():
            path = pkg.localPkg()
            if not os.path.isfile(path):
                raise RuntimeError("%s from repository %s: %s is not a file after download"
                                   % (nevra, pkg.reponame, path))
            # A download is checked against the repository's checksum, and so is a file
            # of a local repository in download_packages; checked again here, right
            # before the copy, since a local repository's file can change at any time.
            if not pkg.verifyLocalPkg():
                raise RuntimeError("%s from repository %s: %s does not match the repository's checksum"
                                   % (nevra, pkg.reponame, path))
            gpgcheck = check_signature(base, pkg, nevra)
            tmp = copy_into(path, dest, files[nevra])
            made.append(tmp)
            out[nevra] = {"repo": pkg.reponame, "path": tmp, "gpgcheck": gpgcheck}
    except BaseException:
        for tmp in made:
            os.unlink(tmp)
        raise
    return out


def main(args):
    if len(args) < 2 or args[0] not in ("check", "fetch") or not os.path.isabs(args[1]):
        answer({"error": "usage: check|fetch DEST BUILD..."}, 2)
    mode, dest, builds = args[0], args[1], parse_builds(args[2:])
    try:
        import dnf
    except ImportError as e:
        answer({"error": "%s cannot import dnf (DNF 4's Python API): %s" % (sys.executable, e)}, 1)
    base = dnf.Base()
    cachedir = tempfile.mkdtemp(prefix="richt-keep-check-") if mode == "check" else None
    try:
        read_repos(base, cachedir)
        found, missing = lookup(base, builds)
        if mode == "fetch" and found:
            files = dict((b["nevra"], b["file"]) for b in builds)
            out = fetch(base, found, files, dest)
        else:
            out = dict((n, {"repo": p.reponame, "path": "", "gpgcheck": gpgcheck_on(p)})
                       for n, p in found.items())
        answer({"found": out, "missing": missing}, 0)
    except SystemExit:
        raise
    except Refused as e:
        answer({"error": str(e)}, 1)
    except Exception as e:
        answer({"error": "%s: %s" % (type(e).__name__, e)}, 1)
    finally:
        base.close()
        if cachedir:
            shutil.rmtree(cachedir, ignore_errors=True)


main(sys.argv[1:])
