"""Build the native core: Cython modules in src/hanzo_engine/_native over the C in csrc/.

HANZO_DEBUG=1 builds with bounds checks, -O0 -g and Cython assertions, for debugging.
HANZO_SANITIZE=1 builds the release Cython code (same directives, so the generated .c files are shared) with
AddressSanitizer and UndefinedBehaviorSanitizer, -O1 -g and C assertions on; `./dev test` builds such a copy
into build/sanitize (`build_ext --build-lib build/sanitize`) and runs the native property tests against it.
Python is not built with ASan, so the runtime must be preloaded: LD_PRELOAD=$(gcc -print-file-name=libasan.so).
"""

import os
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("HANZO_DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("HANZO_SANITIZE", "") not in ("", "0")
ROOT = Path(__file__).parent
NATIVE = ROOT / "src" / "hanzo_engine" / "_native"

if DEBUG:
    compile_args = ["-O0", "-g", "-UNDEBUG"]
    directives = {"boundscheck": True, "wraparound": True, "initializedcheck": True, "cdivision": False}
else:
    # no FMA contraction: native BM25 must give the floats the Python definition gives
    compile_args = ["-O3", "-DNDEBUG", "-fno-strict-aliasing", "-ffp-contract=off"]
    directives = {"boundscheck": False, "wraparound": False, "initializedcheck": False, "cdivision": True}
link_args: list[str] = []
if SANITIZE:
    sanitizers = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
    compile_args = ["-O1", "-g", "-UNDEBUG", "-fno-strict-aliasing", "-ffp-contract=off", *sanitizers]
    link_args = sanitizers
directives.update({"language_level": "3", "embedsignature": True})


def native_extension(pyx: Path) -> Extension:
    # Each .pyx links the C files it names in a `# csrc: a.c b.c` header line.
    csources: list[str] = []
    for line in pyx.read_text().splitlines()[:5]:
        if line.startswith("# csrc:"):
            csources = [f"csrc/{name}" for name in line.split(":", 1)[1].split()]
    return Extension(
        f"hanzo_engine._native.{pyx.stem}",
        sources=[str(pyx.relative_to(ROOT)), *csources],
        include_dirs=["csrc", numpy.get_include()],
        depends=sorted(str(h.relative_to(ROOT)) for h in (ROOT / "csrc").glob("*.h")),
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


setup(
    ext_modules=cythonize(
        [native_extension(p) for p in sorted(NATIVE.glob("*.pyx"))],
        compiler_directives=directives,
        annotate=os.environ.get("HANZO_ANNOTATE", "") not in ("", "0"),
    )
)
