"""Generates the protobuf and gRPC Python modules of the leasekeeper API.

Writes leasekeeper/v1/lock_service_pb2.py (messages), lock_service_pb2.pyi
(their types, for mypy) and lock_service_pb2_grpc.py (the stub) next to the
hand-written package, from proto/leasekeeper/v1/lock_service.proto. The
generated gRPC module imports `leasekeeper.v1.lock_service_pb2`, which is why
the files live inside the `leasekeeper` package under the proto's own path.

Run by scripts/build (the CMake target `leasekeeper_python_stubs`) and by
setup.py when `pip install ./python` builds the package, so a fresh clone
installs without a build. Needs only the standard library, `protoc` and
gRPC's `grpc_python_plugin` (Debian: protobuf-compiler,
protobuf-compiler-grpc).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(os.path.dirname(HERE), "proto")
PROTO = "leasekeeper/v1/lock_service.proto"
OUTPUTS = ("lock_service_pb2.py", "lock_service_pb2.pyi",
           "lock_service_pb2_grpc.py")


def outputs(out_dir: str = HERE) -> list[str]:
    return [os.path.join(out_dir, "leasekeeper", "v1", name)
            for name in OUTPUTS]


def up_to_date(out_dir: str = HERE) -> bool:
    source = os.path.join(PROTO_ROOT, PROTO)
    try:
        built = min(os.path.getmtime(path) for path in outputs(out_dir))
    except OSError:
        return False
    return built >= os.path.getmtime(source)


def generate(protoc: str | None = None, plugin: str | None = None,
             out_dir: str = HERE) -> None:
    protoc = protoc or shutil.which("protoc")
    plugin = plugin or shutil.which("grpc_python_plugin")
    if protoc is None or plugin is None:
        raise SystemExit(
            "generate_stubs: needs protoc and grpc_python_plugin on PATH "
            "(Debian: protobuf-compiler, protobuf-compiler-grpc)")
    subprocess.run(
        [protoc, f"-I{PROTO_ROOT}", f"--python_out={out_dir}",
         f"--pyi_out={out_dir}", f"--grpc_python_out={out_dir}",
         f"--plugin=protoc-gen-grpc_python={plugin}",
         os.path.join(PROTO_ROOT, PROTO)],
        check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protoc")
    parser.add_argument("--plugin")
    parser.add_argument("--out", default=HERE)
    args = parser.parse_args()
    generate(args.protoc, args.plugin, args.out)


if __name__ == "__main__":
    sys.exit(main())
