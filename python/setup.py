"""Builds `import hk`: the _hk extension (C, NumPy C API) and the package,
bundling libhk.so beside it (found at run time through an $ORIGIN rpath).

libhk comes from, in this order:
  - HK_BUILD_DIR: a CMake build folder of this tree (holds libhk.so);
  - otherwise a build of this tree made here with CMake (the tree is the
    folder above this one; needs cmake and hk's build dependencies:
    tools/setup.sh installs them), in python/build-libhk.

    python3 -m venv --system-site-packages venv
    venv/bin/pip install --no-build-isolation ./python
"""
import glob
import os
import shutil
import subprocess

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
# hk's tree (include/, CMakeLists.txt): the folder above, unless a copy of
# python/ is built elsewhere (tests do: HK_SOURCE_DIR)
ROOT = os.environ.get("HK_SOURCE_DIR") or os.path.dirname(HERE)


def libhk_build_dir():
    """A CMake build folder holding libhk.so (built here when not given)."""
    given = os.environ.get("HK_BUILD_DIR")
    if given:
        return os.path.abspath(given)
    out = os.path.join(HERE, "build-libhk")
    subprocess.check_call(
        ["cmake", "-S", ROOT, "-B", out, "-DCMAKE_BUILD_TYPE=Release",
         "-DHK_TESTS=OFF", "-DHK_PYTHON=OFF"])
    subprocess.check_call(["cmake", "--build", out, "--target", "hk_shared",
                           "-j", str(os.cpu_count() or 2)])
    return out


class BuildExt(build_ext):
    """Builds libhk first (or takes HK_BUILD_DIR's) and bundles it."""

    def run(self):
        bdir = libhk_build_dir()
        libs = sorted(glob.glob(os.path.join(bdir, "libhk.so.*")))
        if not libs:
            raise SystemExit("hk: no libhk.so in %s (HK_BUILD_DIR)" % bdir)
        for ext in self.extensions:
            ext.include_dirs += [os.path.join(ROOT, "include"),
                                 os.path.join(bdir, "generated", "include")]
            ext.library_dirs.append(bdir)
        super().run()
        # the SONAME file (libhk.so.0) beside _hk, where $ORIGIN finds it
        soname = min(libs, key=len)
        dest = os.path.join(self.build_lib, "hk")
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(soname, dest)
        if self.inplace:
            shutil.copy2(soname, os.path.join(HERE, "hk"))


setup(
    name="hk",
    version="0.1.0",
    description="hk kernels for NumPy and GPU arrays, over libhk",
    packages=["hk"],
    package_data={"hk": ["py.typed", "*.pyi"]},
    ext_modules=[Extension(
        "hk._hk",
        sources=sorted(glob.glob(os.path.join("src", "*.c"))),
        include_dirs=[numpy.get_include()],
        libraries=["hk"],
        extra_compile_args=["-std=c11", "-fvisibility=hidden"],
        extra_link_args=["-Wl,-rpath,$ORIGIN"],
    )],
    cmdclass={"build_ext": BuildExt},
    python_requires=">=3.8",
)
