"""pip installs the package from the checkout's python/ folder, offline,
with Debian's pip, setuptools and wheel (docs/your-model.md, "Installing
with pip"): into a virtual environment that sees Debian's packages, from a
copy of python/ (so the source tree stays clean), reusing the build tree
the tests run against (DMLPS_BUILD_DIR) instead of building the library
again. The installed package imports from the environment, holds its
typed stubs and py.typed, and works. Exits 77 (skipped) without pip,
setuptools, wheel or venv, or when the module under test is not a build
tree's."""

import os
import shutil
import subprocess
import sys
import time

import harness

import dmlps

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(dmlps.__file__))))


def skip(why):
    print(f"skip: {why}")
    sys.exit(77)


for module in ("pip", "setuptools", "wheel", "venv", "ensurepip"):
    if subprocess.run([sys.executable, "-c", f"import {module}"],
                      capture_output=True).returncode != 0:
        skip(f"no {module} (Debian: python3-pip python3-setuptools python3-wheel python3-venv)")
if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
    skip(f"{dmlps.__file__} is not in a CMake build tree")

started = time.monotonic()
source = os.path.join(harness.WORK, "python")
shutil.copytree(os.path.join(SOURCE, "python"), source,
                ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
env_dir = os.path.join(harness.WORK, "env")
subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", env_dir], check=True,
               timeout=120)
python = os.path.join(env_dir, "bin", "python")
environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
environment.update({"DMLPS_BUILD_DIR": BUILD, "PIP_NO_INDEX": "1",
                    "PIP_DISABLE_PIP_VERSION_CHECK": "1", "CMAKE_BUILD_PARALLEL_LEVEL": "2"})
install = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", source],
                         capture_output=True, text=True, timeout=300, env=environment)
if install.returncode != 0:
    harness.fail(f"pip install failed:\n{install.stdout[-3000:]}\n{install.stderr[-3000:]}")

# Imported from the environment (not from the build tree), from another folder.
check = """
import inspect, os, sys
import dmlps
folder = os.path.dirname(dmlps.__file__)
assert folder.startswith(sys.prefix), folder
for name in ("_dmlps.pyi", "py.typed", "torch.py"):
    assert os.path.exists(os.path.join(folder, name)), name
assert dmlps._dmlps.__file__.startswith(folder)
assert "rank" in inspect.signature(dmlps.Worker).parameters
assert issubclass(dmlps.UnavailableError, TimeoutError)
x, y = dmlps.load_train("fashion-mnist", 0, 100)
assert x.shape == (600, 784) and y.shape == (600,), (x.shape, y.shape)
print(dmlps.__version__, folder)
"""
run = subprocess.run([python, "-c", check], capture_output=True, text=True, timeout=120,
                     env=environment, cwd=harness.WORK)
if run.returncode != 0:
    harness.fail(f"the installed package does not work:\n{run.stdout}\n{run.stderr}")
version, folder = run.stdout.split()
if version != dmlps.__version__:
    harness.fail(f"pip installed version {version}, the build is {dmlps.__version__}")
show = subprocess.run([python, "-m", "pip", "show", "dmlps"], capture_output=True, text=True,
                      timeout=60, env=environment)
if f"Version: {version}" not in show.stdout:
    harness.fail(f"pip show dmlps:\n{show.stdout}{show.stderr}")
print(f"ok: pip installed dmlps {version} into {folder} in "
      f"{time.monotonic() - started:.0f} s")
