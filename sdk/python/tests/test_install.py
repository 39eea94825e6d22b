"""`pip install ./sdk/python` works offline: the build backend is in the tree
and needs no package; the wheel, the sdist and what pip installs hold the
package and its py.typed."""

import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

import latchserver

sys.path.insert(0, latchserver.SDK)
import build_backend  # noqa: E402


def pip_install(target: str, what: str) -> None:
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet",
                          "--disable-pip-version-check", "--target", target, what],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                         env=dict(os.environ, PIP_ROOT_USER_ACTION="ignore"))
    if res.returncode != 0:
        raise AssertionError(f"pip install {what} failed:\n{res.stdout}")


def import_from(target: str) -> str:
    code = ("import latch_client, os; d = os.path.dirname(latch_client.__file__); "
            "print(latch_client.__version__, d, os.path.exists(os.path.join(d, 'py.typed')))")
    res = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {target!r}); {code}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=target, timeout=60)
    return res.stdout.strip()


class InstallTest(unittest.TestCase):
    def test_wheel_and_sdist(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            whl = build_backend.build_wheel(d)
            self.assertEqual(whl, "latch_client-0.1.0-py3-none-any.whl")
            names = zipfile.ZipFile(os.path.join(d, whl)).namelist()
            for n in ("latch_client/__init__.py", "latch_client/client.py", "latch_client/errors.py",
                      "latch_client/worker.py", "latch_client/py.typed", "latch_client-0.1.0.dist-info/METADATA",
                      "latch_client-0.1.0.dist-info/WHEEL", "latch_client-0.1.0.dist-info/RECORD"):
                self.assertIn(n, names)
            self.assertFalse([n for n in names if n.startswith("tests/") or "__pycache__" in n], names)
            sdist = build_backend.build_sdist(d)
            members = tarfile.open(os.path.join(d, sdist)).getnames()
            self.assertIn("latch_client-0.1.0/build_backend.py", members)
            self.assertIn("latch_client-0.1.0/src/latch_client/worker.py", members)
            # the sdist builds the same wheel, with nothing but its own files
            with tempfile.TemporaryDirectory() as x:
                tarfile.open(os.path.join(d, sdist)).extractall(x)
                code = "import build_backend, sys; print(build_backend.build_wheel(sys.argv[1]))"
                res = subprocess.run([sys.executable, "-c", code, x],
                                     cwd=os.path.join(x, "latch_client-0.1.0"), stdout=subprocess.PIPE, text=True,
                                     timeout=60)
                self.assertEqual(res.stdout.strip(), whl)
                self.assertEqual(sorted(zipfile.ZipFile(os.path.join(x, whl)).namelist()), sorted(names))

    def test_pip_install_offline(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "site")
            pip_install(target, latchserver.SDK)
            self.assertEqual(import_from(target),
                             f"0.1.0 {os.path.join(target, 'latch_client')} True")


if __name__ == "__main__":
    unittest.main()
