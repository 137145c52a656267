"""tools/bench/bench-e2e as a module, for the tests of its pure parts (it has
no .py suffix; importing it runs nothing). MOONCAKE_SOURCE_DIR, when set,
names the source tree."""
import importlib.machinery
import importlib.util
import os

SOURCE = os.environ.get("MOONCAKE_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load():
    """A fresh module object of bench-e2e."""
    loader = importlib.machinery.SourceFileLoader(
        "bench_e2e", os.path.join(SOURCE, "tools", "bench", "bench-e2e"))
    spec = importlib.util.spec_from_loader("bench_e2e", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod
