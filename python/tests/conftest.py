"""Where the tests find hk's tree: HK_SOURCE_DIR (plugins/) and HK_CLI (the
hk command, for list_kernels' comparison), set by ctest; the disk cache in
a folder of the session's own."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(os.environ.get(
    "HK_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session", autouse=True)
def _cache(tmp_path_factory):
    os.environ["HK_CACHE_DIR"] = str(tmp_path_factory.mktemp("hkcache"))
    os.environ.pop("HK_PLUGIN_PATH", None)


@pytest.fixture(scope="session")
def plugins(tmp_path_factory):
    """A plugin folder of two of plugins/' kernels (few to compile on tier
    opt: ctx.wait() waits for them)."""
    d = tmp_path_factory.mktemp("plugins")
    d.chmod(0o700)
    for name in ("saxpy.json", "huber.json"):
        (d / name).write_text((ROOT / "plugins" / name).read_text())
    return d
