"""What the coding stage allocates and holds (issue 42, section 1), by part, measured with
`tracemalloc` on the paper-scale grid of `bench/scale_spec.py` (`model=scripted`).

One `biasaudit run` in this process with `pipeline.code` wrapped: tracing starts as the
coding stage starts; a snapshot is taken when each layer's coder is first asked for codes
(every input and answer of the layer then held: the layer's high-water mark) and when
the stage returns (what it holds for measuring and the report). Each traced block is
charged to the innermost frame of biasaudit's own code that allocated it, then to a part
(the table below). Bytes per request = bytes / planned requests.

    PYTHONPATH=framework python bench/code_memory.py 100250 [200500 ...]
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import tempfile
import tracemalloc
from collections import defaultdict
from pathlib import Path

FRAMES = 6
PARTS = (  # (part, "file" or "file:function" of the allocating biasaudit frame), first match wins
    ("units (Unit objects, ids)", ("coding/stage.py:make_units", "coding/units.py", "records/codes.py:Unit",
                                   "records/codes.py:unit_id",
                                   "records/codes.py:UnitTable", "records/codes.py:UnitRows")),
    ("unit index (id -> position)", ("records/codes.py:UnitIndex", "records/codes.py:PlanUnitIndex")),
    ("code tables (CodeTable columns)", ("records/codes.py",)),
    ("codes built per unit (Code records)", ("records/construct.py",)),
    ("judge panel (requests, votes, evidence)", ("coding/coders/judge_panel.py",)),
    ("rules / choice coders", ("coding/coders/rules.py", "coding/coders/choice.py")),
    ("coding answers (routes, engine, store)", ("coding/routes.py", "engine/", "store/", "records/responses.py")),
    ("layer inputs (resolve_inputs)", ("coding/stage.py:resolve_inputs", "coding/stage.py:strip_span")),
    ("per-layer dicts (stage)", ("coding/stage.py",)),
    ("templates", ("spec/templates.py",)),
)
_FUNCS: dict[str, list[tuple[int, int, str]]] = {}


def _function(path: str, line: int) -> str:
    """The outermost class or function around `line` of `path` ('' at module level)."""
    import ast

    if path not in _FUNCS:
        try:
            tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            tree = ast.Module(body=[], type_ignores=[])
        _FUNCS[path] = [(n.lineno, n.end_lineno or n.lineno, n.name) for n in tree.body
                        if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    return next((name for a, b, name in _FUNCS[path] if a <= line <= b), "")


def part_of(tb: tracemalloc.Traceback) -> str:
    for fr in reversed(tb):  # (a Traceback runs oldest first) innermost first
        f = fr.filename.replace("\\", "/")
        if "/biasaudit/" not in f:
            continue
        where = f.split("/biasaudit/", 1)[1]
        func = _function(fr.filename, fr.lineno)
        for name, frags in PARTS:
            if any(x == where or x == f"{where}:{func}" or (x.endswith("/") and where.startswith(x)) for x in frags):
                return name
        return f"other biasaudit ({where}:{func})"
    return "outside biasaudit"


def by_part(snap: tracemalloc.Snapshot, base: tracemalloc.Snapshot | None) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for st in snap.statistics("traceback"):
        out[part_of(st.traceback)] += st.size
    for part, size in (by_part(base, None) if base is not None else {}).items():
        out[part] -= size
    return dict(out)


def main(sizes: list[int]) -> None:
    import biasaudit.coding.layers as layers
    import biasaudit.runner.pipeline as pipeline
    from biasaudit.cli.app import main as cli

    spec = importlib.util.spec_from_file_location("scale", Path(__file__).resolve().parent / "scale.py")
    assert spec is not None and spec.loader is not None
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    for n in sizes:
        snaps: dict[str, tracemalloc.Snapshot] = {}
        peaks: dict[str, int] = {}
        real_code, real_build = pipeline.code, layers.Layer.build

        def build(self: layers.Layer, real_build=real_build, snaps=snaps, peaks=peaks) -> object:  # type: ignore[no-untyped-def]
            coder = real_build(self)
            inner = coder.code
            seen = [False]

            def code(units, inputs, answers, _name=self.name, inner=inner, seen=seen):  # type: ignore[no-untyped-def]
                if not seen[0]:
                    seen[0] = True
                    snaps[f"layer {_name}"] = tracemalloc.take_snapshot()
                    peaks[f"layer {_name}"] = tracemalloc.get_traced_memory()[0]
                return inner(units, inputs, answers)

            coder.code = code
            return coder

        def wrapped(*a, real_code=real_code, snaps=snaps, peaks=peaks, **k):  # type: ignore[no-untyped-def]
            gc.collect()
            tracemalloc.start(FRAMES)
            snaps["before"] = tracemalloc.take_snapshot()
            try:
                return real_code(*a, **k)
            finally:
                gc.collect()
                snaps["after"] = tracemalloc.take_snapshot()
                peaks["peak"] = tracemalloc.get_traced_memory()[1]
                peaks["after"] = tracemalloc.get_traced_memory()[0]
                tracemalloc.stop()

        pipeline.code, layers.Layer.build = wrapped, build  # type: ignore[assignment,method-assign]
        try:
            with tempfile.TemporaryDirectory(prefix="code-memory-") as tmp:
                t = Path(tmp)
                spec_path, planned = scale.write_spec(t / "spec", n)
                cli(["run", "--fail-on", "never", f"spec={spec_path}", "model=scripted",
                     f"runtime.cache={t / 'c.sqlite'}", f"runtime.reports_dir={t / 'reports'}",
                     "runtime.progress=false"])
        finally:
            pipeline.code, layers.Layer.build = real_code, real_build  # type: ignore[method-assign]
        base = snaps["before"]
        print(f"\n== {planned:,} requests: traced peak during coding {peaks['peak'] / planned:,.0f} B/request, "
              f"held after {sum(by_part(snaps['after'], base).values()) / planned:,.0f} B/request")
        cols = [k for k in snaps if k.startswith("layer ")] + ["after"]
        tables = {c: by_part(snaps[c], base) for c in cols}
        parts = sorted({p for tb in tables.values() for p in tb}, key=lambda p: -max(tb.get(p, 0) for tb in tables.values()))
        print(f"{'B/request by part':46s}" + "".join(f"{c[:18]:>20s}" for c in cols))
        for p in parts:
            vals = [tables[c].get(p, 0) / planned for c in cols]
            if max(abs(v) for v in vals) >= 2:
                print(f"{p[:46]:46s}" + "".join(f"{v:20,.0f}" for v in vals))
        print(f"{'total':46s}" + "".join(f"{sum(tables[c].values()) / planned:20,.0f}" for c in cols))


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [100_250])
