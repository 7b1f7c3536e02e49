# Installed on PYTHONPATH by `strata record` when layer level (or deeper) is recorded: arms the
# framework tracers, then runs the sitecustomize this one shadows (if any), so site setup is unchanged.
import importlib.machinery
import importlib.util
import os
import sys


def _strata_startup() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from strata import _autotrace
        _autotrace.install()
    except Exception as exc:  # a broken Strata install must not break the program
        sys.stderr.write(f"strata: startup hook failed: {exc}\n")
    others = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_strata_startup()
del _strata_startup
