"""grpcurl_standin: the part of grpcurl that leasekeeper's docs use, for CI.

grpcurl is not a Debian package, so the grpcurl recipes of README.md and
docs/ are run through this stand-in instead (tests/docs/docs_commands_test.py,
which puts it on PATH as `grpcurl`). Like
grpcurl without -proto/-protoset it knows no .proto of the server: every
service, method and message comes from the server's reflection service,
asked for with grpc.reflection.v1 first and grpc.reflection.v1alpha when
the server does not implement v1 (what grpcurl does). Requests are built
from the -d JSON by a dynamic message factory over the descriptors the
server sent, and answers printed as JSON the way grpcurl prints them
(proto3 JSON mapping, camelCase names, 64-bit integers as strings, default
values omitted).

Usage (a subset of grpcurl's):
  grpcurl_standin.py [flags] ADDR list [SERVICE]
  grpcurl_standin.py [flags] ADDR describe [SYMBOL]
  grpcurl_standin.py [flags] ADDR SERVICE/METHOD      (or SERVICE.METHOD)
Flags: -plaintext; -cacert FILE, -cert FILE, -key FILE, -servername NAME
(TLS, as grpcurl); -d JSON (the request; default {}); -v (also print the
reflection version used and the response trailers); -max-time SECONDS;
-reflection-version v1|v1alpha (the stand-in's own: ask only that version).

Exit codes, as grpcurl's: 0 success; 1 a failure before the call (bad
symbol, bad JSON, no reflection); 2 bad usage; 64 + the gRPC status code
when the call fails.

Needs only Debian's python3-grpcio and python3-protobuf, and the Python
module of proto/grpc/reflection/v1/reflection.proto (reflection_pb2, made by
protoc at build time) on the path. The v1 messages serve for v1alpha too:
the two protocols are wire-identical apart from the service's name.
"""

from __future__ import annotations

import sys
from typing import Iterable, Iterator, NoReturn

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format
from google.protobuf import message_factory

import reflection_pb2  # generated from proto/grpc/reflection/v1

REFLECTION_SERVICES = {
    "v1": "grpc.reflection.v1.ServerReflection",
    "v1alpha": "grpc.reflection.v1alpha.ServerReflection",
}


CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


class Failure(Exception):
    """A failure before the call: printed, exit code 1."""


def usage(message: str) -> NoReturn:
    print(f"grpcurl_standin: {message}\n"
          "usage: grpcurl_standin.py [-plaintext] [-d JSON] [-v] ADDR "
          "(list [SERVICE] | describe [SYMBOL] | SERVICE/METHOD)",
          file=sys.stderr)
    sys.exit(2)


class Reflection:
    """The server's descriptors, fetched through reflection on demand."""

    def __init__(self, channel: grpc.Channel, versions: list[str],
                 timeout: float) -> None:
        self._channel = channel
        self._versions = versions
        self._timeout = timeout
        self.used: str | None = None
        self._files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
        self.pool = descriptor_pool.DescriptorPool()
        self._added: set[str] = set()

    def _ask(self, request: reflection_pb2.ServerReflectionRequest
             ) -> reflection_pb2.ServerReflectionResponse:
        last_error: grpc.RpcError | None = None
        for version in list(self._versions):
            method = f"/{REFLECTION_SERVICES[version]}/ServerReflectionInfo"
            call = self._channel.stream_stream(
                method,
                request_serializer=(
                    reflection_pb2.ServerReflectionRequest.SerializeToString),
                response_deserializer=(
                    reflection_pb2.ServerReflectionResponse.FromString))
            try:
                for response in call(iter([request]), timeout=self._timeout):
                    # The first version that answers is the one to keep.
                    self._versions = [version]
                    self.used = REFLECTION_SERVICES[version]
                    return response
            except grpc.RpcError as error:
                last_error = error
                if error.code() == grpc.StatusCode.UNIMPLEMENTED:
                    continue
                raise Failure(
                    f"server reflection failed: {error.code().name}: "
                    f"{error.details()}") from error
            raise Failure("server reflection ended without an answer")
        raise Failure(
            "the server does not support the reflection API"
            + (f" ({last_error.details()})" if last_error else ""))

    def services(self) -> list[str]:
        response = self._ask(
            reflection_pb2.ServerReflectionRequest(list_services=""))
        self._check(response, "list services")
        return sorted(s.name for s in response.list_services_response.service)

    def _check(self, response: reflection_pb2.ServerReflectionResponse,
               what: str) -> None:
        if response.HasField("error_response"):
            error = response.error_response
            code = CODE_NAMES.get(error.error_code, str(error.error_code))
            raise Failure(f"cannot {what}: {code}: {error.error_message}")

    def _take_files(self, response: reflection_pb2.ServerReflectionResponse
                    ) -> list[str]:
        names = []
        for blob in response.file_descriptor_response.file_descriptor_proto:
            file = descriptor_pb2.FileDescriptorProto.FromString(blob)
            self._files.setdefault(file.name, file)
            names.append(file.name)
        return names

    def _add_to_pool(self, name: str) -> None:
        """Adds `name` after its imports (a server may leave out files it
        sent before; those are asked for by name)."""
        if name in self._added:
            return
        if name not in self._files:
            response = self._ask(
                reflection_pb2.ServerReflectionRequest(file_by_filename=name))
            self._check(response, f"find file {name}")
            self._take_files(response)
        file = self._files[name]
        for dependency in file.dependency:
            self._add_to_pool(dependency)
        self.pool.Add(file)
        self._added.add(name)

    def resolve(self, symbol: str) -> None:
        """Makes `symbol` and everything it needs findable in self.pool."""
        response = self._ask(reflection_pb2.ServerReflectionRequest(
            file_containing_symbol=symbol))
        self._check(response, f"resolve symbol {symbol!r}")
        for name in self._take_files(response):
            self._add_to_pool(name)


def message_class(descriptor):  # type: ignore[no-untyped-def]
    # protobuf >= 4.22 has GetMessageClass; Debian 12's 4.21 the factory.
    get = getattr(message_factory, "GetMessageClass", None)
    if get is not None:
        return get(descriptor)
    return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(
        descriptor)


def describe(reflection: Reflection, symbol: str) -> str:
    reflection.resolve(symbol)
    pool = reflection.pool
    for find, kind in ((pool.FindServiceByName, "service"),
                       (pool.FindMessageTypeByName, "message"),
                       (pool.FindEnumTypeByName, "enum")):
        try:
            found = find(symbol)
        except KeyError:
            continue
        lines = [f"{symbol} is a {kind}:", f"{kind} {found.name} {{"]
        if kind == "service":
            for method in found.methods:
                stream_in = "stream " if method.client_streaming else ""
                stream_out = "stream " if method.server_streaming else ""
                lines.append(
                    f"  rpc {method.name} ( {stream_in}"
                    f".{method.input_type.full_name} ) returns ( "
                    f"{stream_out}.{method.output_type.full_name} );")
        elif kind == "message":
            for field in found.fields:
                type_name = (
                    "." + (field.message_type or field.enum_type).full_name
                    if field.message_type or field.enum_type else
                    descriptor_pb2.FieldDescriptorProto.Type.Name(
                        field.type)[5:].lower())
                label = "repeated " if field.label == field.LABEL_REPEATED \
                    else ""
                lines.append(f"  {label}{type_name} {field.name} = "
                             f"{field.number};")
        else:
            for value in found.values:
                lines.append(f"  {value.name} = {value.number};")
        lines.append("}")
        return "\n".join(lines)
    raise Failure(f"symbol {symbol!r} is not a service, message or enum")


def split_method(name: str) -> tuple[str, str]:
    if "/" in name:
        service, _, method = name.rpartition("/")
    else:
        service, _, method = name.rpartition(".")
    if not service or not method:
        raise Failure(f"given method name {name!r} is not in the expected "
                      "format: SERVICE/METHOD or SERVICE.METHOD")
    return service, method


def invoke(channel: grpc.Channel, reflection: Reflection, name: str,
           data: str, timeout: float, verbose: bool) -> int:
    service_name, method_name = split_method(name)
    reflection.resolve(service_name)
    try:
        service = reflection.pool.FindServiceByName(service_name)
    except KeyError:
        raise Failure(f"{service_name!r} is not a service") from None
    method = service.methods_by_name.get(method_name)
    if method is None:
        raise Failure(f"service {service_name!r} has no method "
                      f"{method_name!r}")
    if method.client_streaming:
        raise Failure(f"{name}: client-streaming methods are not supported "
                      "by the stand-in")
    request_class = message_class(method.input_type)
    response_class = message_class(method.output_type)
    try:
        request = json_format.Parse(data or "{}", request_class())
    except json_format.ParseError as error:
        raise Failure(f"error getting request data: {error}") from error
    path = f"/{service_name}/{method_name}"
    serializer = request_class.SerializeToString
    deserializer = response_class.FromString
    try:
        if method.server_streaming:
            call = channel.unary_stream(path, request_serializer=serializer,
                                        response_deserializer=deserializer)
            responses: Iterable = call(request, timeout=timeout)
            for response in responses:
                print(json_format.MessageToJson(response, indent=2))
            trailers = responses.trailing_metadata()  # type: ignore
        else:
            call = channel.unary_unary(path, request_serializer=serializer,
                                       response_deserializer=deserializer)
            response, outcome = call.with_call(request, timeout=timeout)
            print(json_format.MessageToJson(response, indent=2))
            trailers = outcome.trailing_metadata()
    except grpc.RpcError as error:
        if verbose:
            print_trailers(error.trailing_metadata())  # type: ignore
        code = error.code()  # type: ignore
        print(f"ERROR:\n  Code: {code.name}\n  Message: {error.details()}",
              file=sys.stderr)  # type: ignore
        return 64 + code.value[0]
    if verbose:
        print_trailers(trailers)
    return 0


def print_trailers(trailers: Iterable | None) -> None:
    print("\nResponse trailers received:", file=sys.stderr)
    for key, value in trailers or ():
        print(f"{key}: {value!r}" if isinstance(value, bytes)
              else f"{key}: {value}", file=sys.stderr)


def parse_args(argv: list[str]) -> tuple[dict, list[str]]:
    flags: dict = {"plaintext": False, "d": "", "v": False,
                   "max-time": 10.0, "reflection-version": None,
                   "cacert": None, "cert": None, "key": None,
                   "servername": None}
    with_value = {"d", "max-time", "reflection-version", "cacert", "cert",
                  "key", "servername"}
    positional: list[str] = []
    args: Iterator[str] = iter(argv)
    for arg in args:
        if not arg.startswith("-") or positional:
            positional.append(arg)
            continue
        name = arg.lstrip("-")
        name, has_value, value = name.partition("=")
        if name not in flags:
            usage(f"flag provided but not defined: -{name}")
        if name in with_value:
            if not has_value:
                value = next(args, None)  # type: ignore[arg-type]
                if value is None:
                    usage(f"flag needs an argument: -{name}")
            flags[name] = float(value) if name == "max-time" else value
        else:
            flags[name] = True
    return flags, positional


def main(argv: list[str]) -> int:
    flags, positional = parse_args(argv)
    if len(positional) < 2:
        usage("too few arguments")
    address, verb, *rest = positional
    version = flags["reflection-version"]
    if version is not None and version not in REFLECTION_SERVICES:
        usage("-reflection-version must be v1 or v1alpha")
    if flags["plaintext"]:
        channel = grpc.insecure_channel(address)
    else:
        def read(path: str | None) -> bytes | None:
            if path is None:
                return None
            with open(path, "rb") as file:
                return file.read()
        credentials = grpc.ssl_channel_credentials(
            read(flags["cacert"]), read(flags["key"]), read(flags["cert"]))
        options = ([("grpc.ssl_target_name_override", flags["servername"])]
                   if flags["servername"] else [])
        channel = grpc.secure_channel(address, credentials, options)
    reflection = Reflection(channel, [version] if version else ["v1",
                                                                 "v1alpha"],
                            flags["max-time"])
    try:
        with channel:
            if verb == "list":
                if rest:
                    reflection.resolve(rest[0])
                    service = reflection.pool.FindServiceByName(rest[0])
                    print("\n".join(sorted(
                        f"{rest[0]}.{m.name}" for m in service.methods)))
                else:
                    print("\n".join(reflection.services()))
                code = 0
            elif verb == "describe":
                symbols = rest or reflection.services()
                print("\n\n".join(describe(reflection, s) for s in symbols))
                code = 0
            else:
                if rest:
                    usage(f"unexpected arguments after the method: {rest}")
                code = invoke(channel, reflection, verb, flags["d"],
                              flags["max-time"], flags["v"])
    except Failure as failure:
        print(f"Failed: {failure}", file=sys.stderr)
        return 1
    if flags["v"] and reflection.used:
        print(f"reflection: {reflection.used}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
