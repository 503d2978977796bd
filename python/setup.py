"""Builds the compiled module dmlps._dmlps for pip (pyproject.toml).

The module is the project's CMake target _dmlps, built in a folder of the
build's own from the checkout this folder belongs to (Release, for the
interpreter running pip), or in an existing build tree of that checkout
when $DMLPS_BUILD_DIR names one (which then also gives the version).
CMake runs as many jobs as $CMAKE_BUILD_PARALLEL_LEVEL says, else one per
core."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def _build_dir():
    named = os.environ.get("DMLPS_BUILD_DIR")
    return pathlib.Path(named).resolve() if named else None


def _version():
    """The CMake project's version: from the build tree's cache, or from
    the checkout's CMakeLists.txt."""
    build = _build_dir()
    if build is not None:
        cache = (build / "CMakeCache.txt").read_text()
        found = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(\S+)$", cache, re.M)
    else:
        found = re.search(r"project\(dmlps VERSION (\S+)", (ROOT / "CMakeLists.txt").read_text())
    if not found:
        sys.exit("setup.py: cannot tell dmlps' version (no CMake project found)")
    return found.group(1)


class CMakeBuild(build_ext):
    """Builds each extension as the CMake target of its last name."""

    def build_extension(self, ext):
        build = _build_dir()
        if build is None:
            build = pathlib.Path(self.build_temp).resolve() / "cmake"
            if not (build / "CMakeCache.txt").exists():
                # No CUDA backend: the module computes nothing on a device
                # itself (the caller's computation does), and the backend's
                # libdmlps-cuda.so would stay behind in this build folder.
                subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build),
                                "-DCMAKE_BUILD_TYPE=Release", "-DDMLPS_BUILD_TESTS=OFF",
                                "-DDMLPS_BUILD_MAN=OFF", "-DDMLPS_WITH_CUDA=OFF",
                                f"-DPython_EXECUTABLE={sys.executable}",
                                f"-DPYTHON_EXECUTABLE={sys.executable}"], check=True)
        target = ext.name.split(".")[-1]
        command = ["cmake", "--build", str(build), "--target", target]
        if "CMAKE_BUILD_PARALLEL_LEVEL" not in os.environ:
            command += ["--parallel", str(os.cpu_count() or 1)]
        subprocess.run(command, check=True)
        built = build / "python" / "dmlps" / (target + sysconfig.get_config_var("EXT_SUFFIX"))
        if not built.exists():
            sys.exit(f"setup.py: {built} was not built: is {build} configured for "
                     f"{sys.executable}, with pybind11 found?")
        destination = pathlib.Path(self.get_ext_fullpath(ext.name))
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, destination)


setup(version=_version(), ext_modules=[Extension("dmlps._dmlps", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
