"""The man pages (packaging/man_pages.cmake) say what the program's --help says, and render clean.

For gapwatch(1), gapwatchd(1) and gapwatch-<command>(1) of every command `gapwatch --help` lists:
the page exists, every option the --help lists (both spellings, -o and --output-dir) and every
option's description appear in the page as `man` renders it, and neither `man --warnings` nor
`groff -ww` has anything to say about it. Skipped (77) in a build without help2man."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interpose"))
import gwtest  # noqa: E402

MAN_DIR = os.path.join(gwtest.BUILD, "man")
HANG = 120  # seconds: bounds a run that hangs, never a measurement


def help_text(args):
    r = subprocess.run([gwtest.GAPWATCH] + args + ["--help"], capture_output=True, text=True, timeout=HANG)
    if r.returncode != 0:
        raise AssertionError("gapwatch %s --help exited %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def section(help_out, title):
    """The entries of a CLI11 help section ("Options:", "Subcommands:"): (first column, description)."""
    m = re.search(r"^%s:\n((?:  .*\n)*)" % re.escape(title), help_out, re.M)
    if not m:
        return []
    entries = []
    for line in m.group(1).splitlines():
        if line.startswith("    ") and entries:
            # A first column wider than CLI11's puts the description on the next line, indented.
            entries[-1] = (entries[-1][0], (entries[-1][1] + " " + line.strip()).strip())
            continue
        parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        entries.append((parts[0], parts[1] if len(parts) > 1 else ""))
    return entries


def option_names(first_column):
    """'-o,--output-dir TEXT' -> ['-o', '--output-dir']."""
    return [name for name in first_column.split()[0].split(",") if name.startswith("-")]


def squeeze(text):
    return " ".join(text.split())


def render(page):
    """The page as `man -l` shows it, plain text; and what man said on stderr with --warnings."""
    # Wide enough that no line wraps or hyphenates a description; C locale: plain ASCII hyphens.
    env = dict(os.environ, LC_ALL="C", MANWIDTH="1000", MAN_KEEP_FORMATTING="")
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True, env=env, timeout=HANG)
    if r.returncode != 0:
        raise AssertionError("man -l %s exited %d: %s" % (page, r.returncode, r.stderr))
    return r.stdout, r.stderr


class ManPages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.commands = [name for name, _ in section(help_text([]), "Subcommands")]

    def pages(self):
        """(page file, the arguments before --help that print its help)."""
        yield "gapwatch.1", []
        yield "gapwatchd.1", ["collector"]
        for command in self.commands:
            yield "gapwatch-%s.1" % command, [command]

    def test_every_command_has_a_page(self):
        self.assertIn("profile", self.commands)
        self.assertIn("report", self.commands)
        for page, _ in self.pages():
            self.assertTrue(os.path.isfile(os.path.join(MAN_DIR, page)), page)

    def test_every_option_and_its_description_is_in_the_page(self):
        for page, args in self.pages():
            with self.subTest(page=page):
                text, _ = render(os.path.join(MAN_DIR, page))
                flat = squeeze(text)
                entries = section(help_text(args), "Options")
                self.assertTrue(entries, "gapwatch %s --help lists no options" % " ".join(args))
                for first_column, description in entries:
                    for name in option_names(first_column):
                        self.assertRegex(flat, r"(^|[\s,])%s\b" % re.escape(name), "%s lacks %s" % (page, name))
                    self.assertIn(squeeze(description), flat, "%s lacks the description of %s" % (page, first_column))

    def test_gapwatch_page_names_every_command(self):
        text, _ = render(os.path.join(MAN_DIR, "gapwatch.1"))
        for command in self.commands:
            self.assertIn("gapwatch-%s(1)" % command, text)

    def test_pages_render_without_warnings(self):
        for page, _ in self.pages():
            with self.subTest(page=page):
                path = os.path.join(MAN_DIR, page)
                _, man_warnings = render(path)
                self.assertEqual(man_warnings, "")
                r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path], capture_output=True, text=True,
                                   timeout=HANG)
                self.assertEqual((r.returncode, r.stderr), (0, ""))


if __name__ == "__main__":
    if not os.path.isfile(os.path.join(MAN_DIR, "gapwatch.1")):
        print("SKIP: no man pages in %s: help2man was not found when the build was configured "
              "(scripts/setup.sh installs it)" % MAN_DIR)
        sys.exit(77)
    gwtest.main(__name__)
