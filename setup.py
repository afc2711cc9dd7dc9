"""Build the C simulation core `gpucachex._core` from csrc/.

Every .c file under csrc/ except the C unit tests is compiled into one extension. Set
GPUCACHEX_SANITIZE=1 to build it with AddressSanitizer and UndefinedBehaviorSanitizer (CI does).
An installed (not editable) package also carries the repository's experiments/ folder, as
gpucachex/experiments/specs, so that `gpucachex reproduce` finds its specs and pages.
"""
import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
sources = sorted(
    str(p.relative_to(HERE))
    for p in (HERE / "csrc").rglob("*.c")
    if "tests" not in p.relative_to(HERE / "csrc").parts
)

# A change to a header must rebuild the extension: without these, build_ext --inplace kept the
# objects compiled against the old header (a changed struct or macro), a stale and wrong core.
headers = sorted(
    str(p.relative_to(HERE))
    for p in (HERE / "csrc").rglob("*.h")
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



class build_py_with_specs(build_py):
    """build_py, plus experiments/ copied into the package: the experiments read their sweep specs
    and pages there once installed (an editable install reads the repository's folder in place)."""

    def run(self):
        super().run()
        if self.editable_mode:
            return
        source = HERE / "experiments"
        target = Path(self.build_lib) / "gpucachex" / "experiments" / "specs"
        for path in sorted(source.rglob("*")):
            if path.is_file():
                dest = target / path.relative_to(source)
                self.mkpath(str(dest.parent))
                self.copy_file(str(path), str(dest))


setup(
    cmdclass={"build_py": build_py_with_specs},
    ext_modules=[
        Extension(
            "gpucachex._core",
            sources=sources,
            depends=headers,
            include_dirs=["csrc"],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
    ]
)
