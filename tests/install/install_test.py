"""`cmake --install` (issue 23): what lands under the prefix works from there.

- The installed libgapwatch.so keeps the injected library's rules (the same checks as the build
  tree's, tests/interpose/library_rules_test.py).
- The installed `gapwatch --where` prints the installed library, and `gapwatch profile` records a
  job on the simulated stack without GAPWATCH_LIBRARY: the lookup goes from the binary to its
  library by the install layout, under any prefix or DESTDIR.
- The same in a /usr-like Debian layout (libdir lib/x86_64-linux-gnu), with the binary built for
  that layout (gapwatch_multiarch_layout: main.cpp configured with that libdir), and the one-line
  error naming every path tried when the library is not there.
- Docs, man pages and the user unit are installed where docs/install.md says.

Timeouts only bound a hang; nothing here asserts how fast anything is."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402
import library_rules_test as rules  # noqa: E402

HANG = 300  # seconds: bounds a run that hangs, never a measurement
MULTIARCH = os.environ.get("GAPWATCH_MULTIARCH_GAPWATCH")  # the binary built for lib/x86_64-linux-gnu


def cmake_cache(name):
    with open(os.path.join(gwtest.BUILD, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    raise AssertionError("%s is not in %s/CMakeCache.txt" % (name, gwtest.BUILD))


def install(prefix, destdir=None):
    env = dict(os.environ)
    env.pop("DESTDIR", None)
    if destdir:
        env["DESTDIR"] = destdir
    r = subprocess.run(["cmake", "--install", gwtest.BUILD, "--prefix", prefix], env=env, capture_output=True,
                       text=True, timeout=HANG)
    if r.returncode != 0:
        raise AssertionError("cmake --install failed:\n" + r.stdout + r.stderr)


def clean_env(extra=None):
    """The caller's environment without any gapwatch setting (GAPWATCH_LIBRARY above all), plus
    the simulated CUPTI (never the toolkit's real one on these machines) and `extra`."""
    env = gwtest.gapwatch_env(None, extra=extra)
    env.pop("GAPWATCH_LIBRARY", None)
    return env


class InstallUnderAPrefix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.prefix = os.path.join(cls.tmp.name, "prefix")
        install(cls.prefix)
        cls.libdir = cmake_cache("CMAKE_INSTALL_LIBDIR")
        cls.library = os.path.join(cls.prefix, cls.libdir, "libgapwatch.so")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_installed(self, args, env=None, cwd=None):
        return subprocess.run([os.path.join(self.prefix, "bin", "gapwatch")] + args, env=env or clean_env(),
                              cwd=cwd or self.tmp.name, capture_output=True, text=True, timeout=HANG)

    def test_installed_library_exports_only_the_entry_point_hooks_and_gapwatch_symbols(self):
        self.assertTrue(os.path.isfile(self.library), self.library)
        self.assertEqual(rules.unexpected_exports(self.library), set())

    def test_installed_library_needs_no_cuda_protobuf_spdlog_fmt_or_cxx_runtime(self):
        self.assertEqual(rules.forbidden_needs(self.library), [])

    def test_installed_library_loads_on_glibc_2_35(self):
        too_new = [(v, n) for v, n in rules.glibc_versions_needed(self.library) if v > rules.NEWEST_GLIBC]
        self.assertEqual(too_new, [])

    def test_where_prints_the_installed_library(self):
        r = self.run_installed(["--where"])
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(r.stdout, os.path.realpath(self.library) + "\n")

    def test_gapwatchd_is_the_collector_and_answers_version(self):
        gapwatchd = os.path.join(self.prefix, "bin", "gapwatchd")
        self.assertEqual(os.readlink(gapwatchd), "gapwatch")
        r = subprocess.run([gapwatchd, "--version"], capture_output=True, text=True, timeout=HANG)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^gapwatch \d+\.\d+\.\d+ ")
        r = subprocess.run([gapwatchd, "--help"], capture_output=True, text=True, timeout=HANG)
        self.assertIn("Usage: gapwatch collector", r.stdout)

    def test_installed_profile_records_without_GAPWATCH_LIBRARY(self):
        runtime = os.path.join(self.tmp.name, "runtime-profile")
        os.mkdir(runtime, 0o700)
        out = os.path.join(self.tmp.name, "run")
        r = self.run_installed(
            ["profile", "-o", out, "--", gwtest.SIM, os.path.join(gwtest.SCENARIOS, "healthy.json"), "--quiet"],
            env=clean_env({"XDG_RUNTIME_DIR": runtime}))
        self.assertEqual(r.returncode, 0, r.stderr)
        recordings = glob.glob(os.path.join(out, "*.gwt"))
        self.assertEqual(len(recordings), 1, r.stderr)
        self.assertTrue(any(e["type"] == "activity" for e in gwtest.dump(recordings[0])), "no device activity recorded")

    def test_docs_man_pages_and_user_unit_are_installed(self):
        docs = os.path.join(self.prefix, "share", "doc", "gapwatch")
        for name in ("cli.md", "collector.md", "install.md", "usage.md", "gapwatchd.env",
                     os.path.join("images", "report-nccl-bound-desktop.png")):
            self.assertTrue(os.path.isfile(os.path.join(docs, name)), name)
        self.assertFalse(os.path.exists(os.path.join(docs, "design")), "developer design notes installed")
        man1 = os.path.join(self.prefix, "share", "man", "man1")
        for page in ("gapwatch.1", "gapwatchd.1", "gapwatch-profile.1", "gapwatch-report.1"):
            self.assertTrue(os.path.isfile(os.path.join(man1, page)), page)
        with open(os.path.join(self.prefix, "lib", "systemd", "user", "gapwatchd.service")) as f:
            unit = f.read()
        self.assertIn("\nExecStart=%s/bin/gapwatchd " % self.prefix, unit)

    def test_nothing_but_the_product_is_installed(self):
        programs = sorted(os.listdir(os.path.join(self.prefix, "bin")))
        self.assertEqual(programs, ["gapwatch", "gapwatchd"])
        libraries = [os.path.relpath(p, self.prefix) for p in glob.glob(os.path.join(self.prefix, "**", "*.so*"),
                                                                         recursive=True)]
        self.assertEqual(libraries, [os.path.join(self.libdir, "libgapwatch.so")])


@unittest.skipUnless(MULTIARCH, "GAPWATCH_MULTIARCH_GAPWATCH is not set (tests/install/CMakeLists.txt sets it)")
class DebianMultiarchLayout(unittest.TestCase):
    """/usr/bin/gapwatch and /usr/lib/x86_64-linux-gnu/libgapwatch.so, as the .deb of a build
    configured with --prefix /usr has them, installed into a DESTDIR."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.root = os.path.join(self.tmp.name, "root")
        install("/usr", destdir=self.root)
        self.bin = os.path.join(self.root, "usr", "bin")
        # The build's own layout has libdir `lib` (its prefix is not /usr): put the library where
        # a /usr build puts it, and the binary built for that layout in place of the build's.
        libdir = os.path.join(self.root, "usr", "lib", "x86_64-linux-gnu")
        os.makedirs(libdir, exist_ok=True)
        installed = os.path.join(self.root, "usr", cmake_cache("CMAKE_INSTALL_LIBDIR"), "libgapwatch.so")
        self.library = os.path.join(libdir, "libgapwatch.so")
        if installed != self.library:
            os.rename(installed, self.library)
        shutil.copy(MULTIARCH, os.path.join(self.bin, "gapwatch"))

    def run_installed(self, args):
        return subprocess.run([os.path.join(self.bin, "gapwatch")] + args, env=clean_env(), capture_output=True,
                              text=True, timeout=HANG)

    def test_where_finds_the_library_in_the_multiarch_libdir(self):
        r = self.run_installed(["--where"])
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(r.stdout, os.path.realpath(self.library) + "\n")

    def test_the_library_missing_is_one_line_naming_every_path_tried(self):
        os.remove(self.library)
        r = self.run_installed(["--where"])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn(os.path.join(self.root, "usr", "lib", "x86_64-linux-gnu", "libgapwatch.so"), r.stderr)
        self.assertIn(os.path.join(self.root, "usr", "lib", "libgapwatch.so"), r.stderr)
        self.assertIn("GAPWATCH_LIBRARY", r.stderr)
        # profile looks up the same way, and says so in the same terms.
        r = self.run_installed(["profile", "-o", os.path.join(self.tmp.name, "out"), "--", "true"])
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"^gapwatch profile: .*x86_64-linux-gnu/libgapwatch\.so")

    def test_the_wheel_layout_lib_beside_bin_still_works(self):
        # gapwatch/bin and gapwatch/lib: the second place looked in.
        fallback = os.path.join(self.root, "usr", "lib", "libgapwatch.so")
        os.rename(self.library, fallback)
        r = self.run_installed(["--where"])
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(r.stdout, os.path.realpath(fallback) + "\n")


if __name__ == "__main__":
    gwtest.main(__name__)
