"""Build the C simulation core `gpucachex._core` from csrc/.

Every .c file under csrc/ except the C unit tests is compiled into one extension. Set
GPUCACHEX_SANITIZE=1 to build it with AddressSanitizer and UndefinedBehaviorSanitizer (CI does).
"""
import os
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent
sources = sorted(
    str(p.relative_to(HERE))
    for p in (HERE / "csrc").rglob("*.c")
    if "tests" not in p.relative_to(HERE / "csrc").parts
)

compile_args = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fvisibility=hidden"]
link_args = []
if os.environ.get("GPUCACHEX_SANITIZE") == "1":
    flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
    compile_args += ["-O1", "-g"] + flags
    link_args += flags
else:
    compile_args += ["-O3"]

setup(
    ext_modules=[
        Extension(
            "gpucachex._core",
            sources=sources,
            include_dirs=["csrc"],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
    ]
)
