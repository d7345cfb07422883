"""The Debian package (packaging/CMakeLists.txt, `cpack -G DEB`) installs on a clean Debian 12 and
runs there.

The .deb is made from the build with cpack, then checked: its version is the project's, it holds
the product only (gapwatch, gapwatchd, libgapwatch.so, docs, man pages, the user unit; no test
program, no simulator) and depends on the Debian packages of the libraries its programs need. A
copy of the clean root scripts/setup.sh prepared (debootstrap --variant=minbase bookworm, with
the dependencies' .deb files in its apt cache: scripts/prepare-debian-root.sh) gets them and the
package with `dpkg -i`, offline; there `gapwatch --version`, `gapwatchd --version`, `gapwatch
--where` and `gapwatch report` of a recording run, the unit file passes `systemd-analyze verify`
(where the host has it), and `dpkg --purge` takes everything away again.

Skipped (77), saying why, only when there is no prepared root or no root privileges (chroot).
Timeouts only bound a hang; nothing here asserts how fast anything is."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402

ROOT = os.path.join(gwtest.BUILD, "_deps", "debian12-root")
READY = os.path.join(ROOT, ".gapwatch-packages")  # written last by prepare-debian-root.sh
HANG = 600  # seconds: bounds a run that hangs, never a measurement
UNIT = "/usr/lib/systemd/user/gapwatchd.service"


def project_version():
    with open(os.path.join(gwtest.REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(gapwatch VERSION ([0-9.]+)", f.read()).group(1)


def run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=HANG, **kwargs)


_packages = None  # the cpack output directory, made once for both classes


def build_deb():
    """The .deb cpack makes from the build, in a temporary directory removed at exit."""
    global _packages
    if _packages is None:
        _packages = tempfile.TemporaryDirectory()
        out = _packages.name
        r = run(["cpack", "-G", "DEB", "--config", os.path.join(gwtest.BUILD, "CPackConfig.cmake"), "-B", out])
        if r.returncode != 0:
            raise AssertionError("cpack -G DEB failed:\n" + r.stdout + r.stderr)
    debs = glob.glob(os.path.join(_packages.name, "*.deb"))
    if len(debs) != 1:
        raise AssertionError("cpack made %s, not one .deb" % debs)
    return debs[0]


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.deb = build_deb()

    def field(self, name):
        return run(["dpkg-deb", "--field", self.deb, name]).stdout.strip()

    def test_package_has_the_projects_name_and_version(self):
        self.assertEqual(self.field("Package"), "gapwatch")
        self.assertEqual(self.field("Version"), project_version())
        self.assertEqual(os.path.basename(self.deb), "gapwatch_%s_%s.deb" % (project_version(),
                                                                              self.field("Architecture")))

    def test_package_depends_on_the_libraries_packages(self):
        depends = {d.strip().split()[0] for d in self.field("Depends").split(",") if d.strip()}
        # What gapwatch links on Debian 12 (CMakeLists.txt's find_package list), by package
        # (spdlog's shlibs name what its package provides, libspdlog1.10-fmt9).
        for package in ("libc6", "libstdc++6", "libprotobuf32", "libspdlog1.10", "libmicrohttpd12", "libsimdjson14",
                        "zlib1g"):
            self.assertTrue([d for d in depends if d == package or d.startswith(package + "-")], (package, depends))
        self.assertFalse({d for d in depends if d.endswith("-dev")}, "depends on a -dev package")

    def test_package_holds_the_product_only(self):
        listing = run(["dpkg-deb", "--contents", self.deb]).stdout
        files = sorted(re.sub(r"^\./", "/", line.split()[5]) for line in listing.splitlines()
                       if not line.startswith("d"))
        programs = [f for f in files if f.startswith("/usr/bin/")]
        self.assertEqual(programs, ["/usr/bin/gapwatch", "/usr/bin/gapwatchd"])
        libraries = [f for f in files if re.search(r"\.so(\.|$)", f)]
        self.assertEqual(len(libraries), 1, libraries)
        self.assertRegex(libraries[0], r"^/usr/lib/(x86_64-linux-gnu/)?libgapwatch\.so$")
        self.assertIn(UNIT, files)
        self.assertIn("/usr/share/man/man1/gapwatch-profile.1", files)
        self.assertIn("/usr/share/doc/gapwatch/install.md", files)
        # Nothing else: no test program, benchmark or simulator anywhere.
        allowed = r"^(/usr/bin/gapwatchd?|%s|%s|/usr/share/doc/gapwatch/.*\.(md|png|env)|/usr/share/man/man1/gapwatch[a-z-]*\.1)$"
        others = [f for f in files if not re.match(allowed % (re.escape(libraries[0]), re.escape(UNIT)), f)]
        self.assertEqual(others, [])


def root_missing():
    if os.geteuid() != 0:
        return "not root: chroot needs it"
    if not os.path.isfile(READY):
        return ("no prepared Debian 12 root in %s: scripts/setup.sh makes it (scripts/prepare-debian-root.sh; "
                "left out offline, without debootstrap, or with GAPWATCH_SKIP_DEBIAN_ROOT=1)" % ROOT)
    return None


class InstalledInACleanDebian12(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Beside the prepared root (same file system); removed at the end, with the copy in it.
        cls.tmp = tempfile.TemporaryDirectory(prefix="deb-install-test-", dir=os.path.join(gwtest.BUILD, "_deps"))
        cls.root = os.path.join(cls.tmp.name, "root")
        # A fresh copy each run: the prepared root stays clean for the next.
        r = run(["cp", "-a", "--one-file-system", ROOT, cls.root])
        if r.returncode != 0:
            raise AssertionError("cannot copy %s: %s" % (ROOT, r.stderr))
        shutil.copy(build_deb(), os.path.join(cls.root, "tmp", "gapwatch.deb"))
        shutil.copy(os.path.join(gwtest.REPO, "tests", "golden", "healthy.gwt"), os.path.join(cls.root, "tmp"))
        # The dependencies from the root's apt cache, then the package: dpkg, no network.
        archives = sorted(os.path.relpath(p, cls.root)
                          for p in glob.glob(os.path.join(cls.root, "var", "cache", "apt", "archives", "*.deb")))
        cls.dpkg_deps = cls.chroot(["dpkg", "-i"] + ["/" + a for a in archives]) if archives else None
        cls.dpkg = cls.chroot(["dpkg", "-i", "/tmp/gapwatch.deb"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def chroot(cls, cmd):
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8",
               "DEBIAN_FRONTEND": "noninteractive", "HOME": "/root"}
        # /proc for the programs (gapwatch finds itself by /proc/self/exe), mounted in a mount
        # namespace of the command's own: nothing stays mounted in the copy when it is removed.
        return run(["unshare", "--fork", "--pid", "--mount-proc=" + os.path.join(cls.root, "proc"),
                    "chroot", cls.root] + cmd, env=env)

    def assert_ok(self, r, what):
        self.assertEqual(r.returncode, 0, "%s exited %d:\n%s%s" % (what, r.returncode, r.stdout, r.stderr))

    def test_dpkg_installs_the_package_and_its_dependencies(self):
        if self.dpkg_deps is not None:
            self.assert_ok(self.dpkg_deps, "dpkg -i of the dependencies")
        self.assert_ok(self.dpkg, "dpkg -i gapwatch.deb")
        self.assertIn("ii  gapwatch", self.chroot(["dpkg", "-l", "gapwatch"]).stdout)

    def test_gapwatch_and_gapwatchd_run_there(self):
        self.assert_ok(self.dpkg, "dpkg -i gapwatch.deb")
        for program in ("gapwatch", "gapwatchd"):
            r = self.chroot([program, "--version"])
            self.assert_ok(r, program + " --version")
            self.assertRegex(r.stdout, r"^gapwatch %s " % re.escape(project_version()))
        r = self.chroot(["gapwatchd", "--help"])
        self.assert_ok(r, "gapwatchd --help")
        self.assertIn("--output-dir", r.stdout)

    def test_where_names_the_packaged_library(self):
        self.assert_ok(self.dpkg, "dpkg -i gapwatch.deb")
        r = self.chroot(["gapwatch", "--where"])
        self.assert_ok(r, "gapwatch --where")
        self.assertRegex(r.stdout, r"^/usr/lib/(x86_64-linux-gnu/)?libgapwatch\.so\n$")

    def test_report_of_a_recording_runs_there(self):
        self.assert_ok(self.dpkg, "dpkg -i gapwatch.deb")
        r = self.chroot(["gapwatch", "report", "--json", "/tmp/healthy.gwt"])
        self.assert_ok(r, "gapwatch report")
        self.assertIn('"inputs"', r.stdout)

    def test_user_unit_verifies(self):
        self.assert_ok(self.dpkg, "dpkg -i gapwatch.deb")
        unit = self.root + UNIT
        self.assertTrue(os.path.isfile(unit))
        with open(unit) as f:
            text = f.read()
        self.assertIn("EnvironmentFile=-%h/.config/gapwatch/gapwatchd.env", text)
        self.assertRegex(text, r"(?m)^ExecStart=/usr/bin/gapwatchd ")
        if not shutil.which("systemd-analyze"):
            self.skipTest("no systemd-analyze on this machine")
        # The host's systemd-analyze, as the user manager would load the unit. It checks that the
        # programs named exist here, not in the root: the copy names the root's gapwatchd.
        with tempfile.TemporaryDirectory() as d:
            runtime = os.path.join(d, "runtime")
            os.mkdir(runtime, 0o700)
            copy = os.path.join(d, "gapwatchd.service")
            with open(copy, "w") as f:
                f.write(text.replace("ExecStart=/usr/bin/gapwatchd ", "ExecStart=%s/usr/bin/gapwatchd " % self.root))
            r = run(["systemd-analyze", "verify", "--user", "--man=no", copy],
                    env=dict(os.environ, XDG_RUNTIME_DIR=runtime))
        self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)

    def test_purge_takes_everything_away(self):
        self.assert_ok(self.dpkg, "dpkg -i gapwatch.deb")
        listed = self.chroot(["dpkg", "-L", "gapwatch"]).stdout.split()
        self.assert_ok(self.chroot(["dpkg", "--purge", "gapwatch"]), "dpkg --purge gapwatch")
        left = [p for p in listed if os.path.isfile(self.root + p) or os.path.islink(self.root + p)]
        self.assertEqual(left, [])
        # Later tests in this class install it again from the same state.
        type(self).dpkg = self.chroot(["dpkg", "-i", "/tmp/gapwatch.deb"])


if __name__ == "__main__":
    reason = root_missing()
    if reason:
        # The package itself is still checked; what needs the root is skipped, and the run says so.
        print("SKIP: the install into a clean Debian 12 root: " + reason)
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(DebianPackage)
        ok = unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful()
        sys.exit(77 if ok else 1)
    gwtest.main(__name__)
