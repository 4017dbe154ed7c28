"""Hydra config source serving audit spec files as the `spec` config group.

Spec files live in `specs/` (not under `conf/`), are plain YAML without Hydra headers,
and are merged at the root of the composed config (package `_global_`), so any spec
key can be overridden or swept from the command line (`stimuli.source=...`).
"""

from __future__ import annotations

import copy
import functools
import os
from typing import Any

from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from omegaconf import OmegaConf

SCHEME = "biasaudit-specs"
GROUP = "spec"


@functools.lru_cache(maxsize=64)
def _parsed_at(path: str, mtime_ns: int, size: int) -> tuple[str, Any]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text, OmegaConf.to_container(OmegaConf.create(text), resolve=False)


def _parsed(path: str) -> tuple[str, Any]:
    """The spec's text and parsed YAML, memoised by (path, mtime, size): Hydra loads a
    config several times per composition, and a sweep composes once per job (a large grid
    spec takes a good second to parse)."""
    st = os.stat(path)
    return _parsed_at(path, st.st_mtime_ns, st.st_size)


class SpecsConfigSource(ConfigSource):
    @staticmethod
    def scheme() -> str:
        return SCHEME

    def _file(self, config_path: str) -> str | None:
        from biasaudit._util.paths import find_spec_file

        if not config_path.startswith(GROUP + "/"):
            return None
        name = config_path[len(GROUP) + 1 :]
        if name.endswith(".yaml"):
            name = name[: -len(".yaml")]
        found = find_spec_file(name)
        return str(found) if found else None

    def load_config(self, config_path: str) -> ConfigResult:
        path = self._file(config_path)
        if path is None:
            raise ConfigLoadError(f"Spec not found: {config_path}")
        from pathlib import Path

        from biasaudit.spec.source import check_spec_file

        check_spec_file(Path(path))  # refuses Hydra settings, import paths, resolvers
        text, parsed = _parsed(path)
        header = ConfigSource._get_header_dict(text[:512])
        if header.get("package") not in (None, "", "_global_"):
            # `# @package hydra` would turn the spec's keys into Hydra settings
            from biasaudit.errors import SpecError

            raise SpecError(f"a spec cannot choose its package ({header['package']!r})", file=path,
                            key="# @package", hint="remove the `# @package` line")
        header["package"] = "_global_"
        cfg = OmegaConf.create(copy.deepcopy(parsed))
        return ConfigResult(
            config=cfg, path=f"{SCHEME}://{self.path}", provider=self.provider, header=header
        )

    def available(self) -> bool:
        return True

    def is_group(self, config_path: str) -> bool:
        return config_path in ("", GROUP)

    def is_config(self, config_path: str) -> bool:
        return self._file(config_path) is not None

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        from biasaudit._util.paths import list_specs

        if config_path == "":
            return [GROUP] if results_filter in (None, ObjectType.GROUP) else []
        if config_path != GROUP or results_filter == ObjectType.GROUP:
            return []
        return list_specs()
