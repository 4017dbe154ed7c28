"""Build hooks (setuptools `cmdclass`, see pyproject.toml): ship `conf/` and `specs/`.

The Hydra config tree and the shipped specs (with their sample data) live at the top of
the repository, where auditors read and edit them. A wheel must carry them too, so that
an installed `biasaudit` runs without the checkout: `build_py` copies both folders into
the built package as `biasaudit/shipped/{conf,specs}` (found by `biasaudit._util.paths`), with
the specs' JSON Schemas as `biasaudit/shipped/docs/schema`, and `sdist` adds them to
the source archive so a wheel built from it gets them as well. An editable (development)
install copies nothing: it reads the repository's folders.

Not part of the installed package: setuptools imports this module from `framework/`
only while building.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

# docs/schema/ goes along: each shipped spec's `# yaml-language-server: $schema=` line
# points at ../docs/schema/, which resolves the same way inside biasaudit/shipped/.
SHIPPED = ("conf", "specs", "docs/schema")
TARGET = Path("biasaudit") / "shipped"
_SKIP = ("__pycache__", ".")


def _files(root: Path) -> list[Path]:
    """Every plain file under `root`, skipping caches and hidden files."""
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and not any(part.startswith(_SKIP) for part in p.relative_to(root).parts))


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the editable install reads the repository's own conf/ and specs/
        for name in SHIPPED:
            src = Path(name)
            if not src.is_dir():
                raise FileNotFoundError(f"{src.resolve()} is missing: the wheel must ship it")
            dest = Path(self.build_lib) / TARGET / name
            shutil.rmtree(dest, ignore_errors=True)
            for f in _files(src):
                out = dest / f.relative_to(src)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, out)


class SDist(sdist):
    def make_distribution(self) -> None:
        # setuptools takes the file list from egg_info; add ours just before the archive
        self.filelist.append(str(Path("framework") / Path(__file__).name))
        for name in SHIPPED:
            self.filelist.extend(str(f) for f in _files(Path(name)))
        super().make_distribution()
