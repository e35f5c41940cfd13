"""The documentation site builds strictly (every Sphinx warning an error: a broken reference, a
docstring that does not parse, a page outside the table of contents) and its API reference
documents every public name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import streamnb

ROOT = Path(__file__).resolve().parents[2]

#: Public names documented beside ``streamnb.__all__``.
ALSO_DOCUMENTED = ["streamnb.persistence", "streamnb.persistence.save", "streamnb.persistence.load",
                   "streamnb.spam.OperatingPoint", "streamnb.perkey", "streamnb.perkey.DirectoryStore",
                   "streamnb.stores", "streamnb.stores.open_blobs", "streamnb.stores.parse_url",
                   "streamnb.stores.Blobs"]  # fmt: skip


def test_the_site_builds_strictly_with_every_public_name_in_the_api_reference(tmp_path):
    out = tmp_path / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-E", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr

    api = "".join(page.read_text(encoding="utf-8") for page in sorted((out / "api").glob("*.html")))
    documented = set(re.findall(r'<dt class="sig sig-object py" id="([\w.]+)"', api))
    documented |= set(re.findall(r'id="module-([\w.]+)"', api))
    missing = [f"streamnb.{name}" for name in streamnb.__all__ if f"streamnb.{name}" not in documented]
    missing += [name for name in ALSO_DOCUMENTED if name not in documented]
    assert not missing, f"not in the API reference: {missing}"
    # the methods come with the classes (inherited from streamnb's own bases)
    assert {"streamnb.MixedNB.learn_one", "streamnb.TANClassifier.merge", "streamnb.SpamFilter.classify_one"} <= documented
    for page in ["index", "getting-started", "concepts", "river", "operations", "scaleout", "mail", "benchmarks"]:
        assert (out / f"{page}.html").exists(), page
