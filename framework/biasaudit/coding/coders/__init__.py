"""The coders shipped with biasaudit (rules, choice, judge_panel, classifier, claims,
embedding, human): every module of this package is imported here and registers its
coder (`CODERS.add`) as a plug-in's module does, so a new shipped coder is one new
module and no other edit; core code reads a coder only through its `CoderDef`."""

import importlib
import pkgutil

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_module.name}")
