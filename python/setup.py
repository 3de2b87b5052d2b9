"""Builds the generated API modules before packaging.

All metadata is in pyproject.toml. A fresh clone has no generated modules
(they are build output, ignored by git), so `pip install ./python` runs
generate_stubs.py from its build_py step when they are missing or older than
the .proto; scripts/build writes the same files beforehand.
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_stubs  # noqa: E402


class BuildWithStubs(build_py):
    def run(self) -> None:
        if not generate_stubs.up_to_date():
            generate_stubs.generate()
        super().run()


setup(cmdclass={"build_py": BuildWithStubs})
