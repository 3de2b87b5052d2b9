"""deploy/kubernetes/cluster, checked without a cluster: the StatefulSet's
args are flags leasekeeperd knows, each node advertises its stable name in
the headless Service, the etcd endpoints are the etcd StatefulSet's members,
and the probes and ports agree with the flags.

Run by ctest with LEASEKEEPERD pointing at the built daemon."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "deploy" / "kubernetes" / "cluster"


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((CLUSTER / name).read_text()) if d]


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def flags_of(args: list[str]) -> dict[str, str]:
    flags = {}
    for arg in args:
        name, _, value = arg.partition("=")
        flags[name] = value
    return flags


def daemon_flags() -> set[str]:
    binary = os.environ.get("LEASEKEEPERD",
                            str(ROOT / "build" / "bin" / "leasekeeperd"))
    help_text = subprocess.run([binary, "--help"], capture_output=True,
                               text=True, timeout=30).stdout
    return set(re.findall(r"^\s+(--[a-z0-9-]+)", help_text, re.MULTILINE))


def leasekeeper() -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    [statefulset] = of_kind(load("statefulset.yaml"), "StatefulSet")
    [container] = statefulset["spec"]["template"]["spec"]["containers"]
    return statefulset, flags_of(container["args"]), container


def test_every_arg_is_a_leasekeeperd_flag() -> None:
    _, flags, _ = leasekeeper()
    unknown = set(flags) - daemon_flags()
    assert not unknown, f"not leasekeeperd flags: {sorted(unknown)}"
    for needed in ("--cluster", "--etcd-endpoints", "--node-id",
                   "--advertise", "--data-dir"):
        assert needed in flags, needed


def test_three_nodes_each_advertising_its_stable_name() -> None:
    statefulset, flags, container = leasekeeper()
    assert statefulset["spec"]["replicas"] == 3
    service = statefulset["spec"]["serviceName"]
    [headless] = [s for s in of_kind(load("service.yaml"), "Service")
                  if s["metadata"]["name"] == service]
    assert headless["spec"]["clusterIP"] == "None"
    grpc_port = {p["name"]: p["containerPort"]
                 for p in container["ports"]}["grpc"]
    assert flags["--node-id"] == "$(POD_NAME)"
    assert flags["--advertise"] == (
        f"$(POD_NAME).{service}.$(POD_NAMESPACE).svc:{grpc_port}")
    assert flags["--listen"] == f"0.0.0.0:{grpc_port}"
    env = {e["name"] for e in container["env"]}
    assert {"POD_NAME", "POD_NAMESPACE"} <= env


def test_the_etcd_endpoints_are_the_etcd_members() -> None:
    _, flags, _ = leasekeeper()
    etcd_docs = load("etcd.yaml")
    [etcd] = of_kind(etcd_docs, "StatefulSet")
    name = etcd["metadata"]["name"]
    service = etcd["spec"]["serviceName"]
    [member] = etcd["spec"]["template"]["spec"]["containers"]
    client_port = {p["name"]: p["containerPort"]
                   for p in member["ports"]}["client"]
    expected = [f"{name}-{i}.{service}.$(POD_NAMESPACE).svc:{client_port}"
                for i in range(etcd["spec"]["replicas"])]
    assert flags["--etcd-endpoints"].split(",") == expected
    initial = flags_of(member["args"])["--initial-cluster"].split(",")
    assert len(initial) == etcd["spec"]["replicas"] == 3


def test_probes_use_the_health_port_and_liveness_is_not_leadership() -> None:
    _, flags, container = leasekeeper()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert flags["--health-listen"] == f"0.0.0.0:{ports['health']}"
    for probe in ("startupProbe", "readinessProbe"):
        assert container[probe]["grpc"]["port"] == ports["health"], probe
    # A follower without a leader is NOT_SERVING: restarting it would not
    # help, so liveness only asks whether the process answers at all.
    assert "grpc" not in container["livenessProbe"]


def test_kustomize_lists_every_cluster_manifest_but_etcd() -> None:
    [kustomization] = load("kustomization.yaml")
    resources = set(kustomization["resources"])
    assert resources == {"policy-configmap.yaml", "service.yaml",
                         "statefulset.yaml"}
