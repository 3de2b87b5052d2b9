"""deploy/kubernetes, checked without a cluster: images are pinned to this
release, and the single-node StatefulSet's ports, probes and Prometheus
annotations agree with the daemon flags in its args; those args, run on a
real leasekeeperd (listeners moved to loopback, the TLS secret and the
policy ConfigMap replaced by local files), answer the kubelet's gRPC probe
without a client certificate and serve /metrics where the annotations say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import yaml

from deploy_support import (DEPLOY, VERSION, Daemon, ctl, daemon_flags,
                            flag_values, make_pki, port_of, scrape)

KUBERNETES = DEPLOY / "kubernetes"
WORKLOADS = {"StatefulSet", "Deployment", "DaemonSet", "ReplicaSet", "Job"}
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def load(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def kustomizations() -> Iterator[Path]:
    yield from sorted(KUBERNETES.rglob("kustomization.yaml"))


def resources(kustomization: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for name in load(kustomization)[0].get("resources", []):
        path = kustomization.parent / name
        if path.is_dir():
            continue  # another kustomization: checked on its own
        for doc in load(path):
            yield path, doc


def containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    spec = workload["spec"]["template"]["spec"]
    return spec.get("initContainers", []) + spec["containers"]


def split_image(image: str) -> tuple[str, str]:
    """(name, tag); tag "" when none (Docker's default: latest)."""
    if "@" in image:
        return image.split("@", 1)[0], "@" + image.split("@", 1)[1]
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:
        return image, ""
    return name, tag


def test_every_image_is_pinned_to_this_release_with_and_without_kustomize() -> None:
    assert VERSION, "ctest passes the CMake project version"
    seen = 0
    for kustomization in kustomizations():
        rewrites = {entry["name"]: entry
                    for entry in load(kustomization)[0].get("images", [])}
        for path, doc in resources(kustomization):
            if doc.get("kind") not in WORKLOADS:
                continue
            for container in containers(doc):
                seen += 1
                where = f"{path.name}: {container['name']}"
                name, tag = split_image(container["image"])
                assert tag == VERSION, (
                    f"{where}: {container['image']} applied without "
                    f"kustomize must be pinned to {VERSION}")
                rewrite = rewrites.get(name, {})
                final_tag = str(rewrite.get("newTag", tag))
                assert "digest" in rewrite or final_tag == VERSION, (
                    f"{where}: kustomize makes it {name}:{final_tag}")
                assert container.get("imagePullPolicy") != "Always"
    assert seen > 0


def single_node() -> tuple[dict[str, Any], dict[str, Any]]:
    """The single-node StatefulSet and its leasekeeperd container."""
    [statefulset] = [doc for doc in load(KUBERNETES / "statefulset.yaml")
                     if doc["kind"] == "StatefulSet"]
    assert statefulset["spec"]["replicas"] == 1
    [container] = [c for c in containers(statefulset)
                   if c["name"] == "leasekeeperd"]
    return statefulset, container


def test_ports_probes_and_scrape_annotations_match_the_daemon_flags() -> None:
    statefulset, container = single_node()
    flags = flag_values(container["args"])
    assert set(flags) <= daemon_flags(), "every arg is a leasekeeperd flag"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert port_of(flags["--listen"]) == ports["grpc"]
    assert port_of(flags["--health-listen"]) == ports["health"]
    assert port_of(flags["--metrics-listen"]) == ports["metrics"]
    for flag in ("--listen", "--health-listen", "--metrics-listen"):
        # The kubelet and Prometheus come from outside the pod.
        assert flags[flag].startswith("0.0.0.0:"), flag
    for probe in PROBES:
        grpc = container[probe]["grpc"]
        # The plaintext health port: the kubelet has no client certificate.
        assert grpc["port"] == ports["health"], probe
        assert grpc.get("service", "") == "", "the whole server's health"
    annotations = statefulset["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == ports["metrics"]
    assert annotations["prometheus.io/path"] == "/metrics"
    # SIGTERM drains within --shutdown-grace (at most 4 s) before the kill.
    assert statefulset["spec"]["template"]["spec"][
        "terminationGracePeriodSeconds"] > 4


def test_services_reach_the_grpc_and_metrics_ports_by_name() -> None:
    _, container = single_node()
    names = {p["name"] for p in container["ports"]}
    services = {doc["metadata"]["name"]: doc
                for doc in load(KUBERNETES / "service.yaml")}
    client = {p["name"]: p for p in services["leasekeeper"]["spec"]["ports"]}
    assert client["grpc"]["targetPort"] == "grpc" and "grpc" in names
    assert client["metrics"]["targetPort"] == "metrics" and "metrics" in names


def test_the_manifest_args_answer_the_probes_and_the_scrape(
        tmp_path: Path) -> None:
    _, container = single_node()
    flags = flag_values(container["args"])
    pki = make_pki(tmp_path, client_identity="ops-oncall")
    [configmap] = load(KUBERNETES / "policy-configmap.yaml")
    policy = tmp_path / "policy.json"
    policy.write_text(configmap["data"]["policy.json"])
    mounted = {"/etc/leasekeeper/tls/tls.crt": pki.server_cert,
               "/etc/leasekeeper/tls/tls.key": pki.server_key,
               "/etc/leasekeeper/tls/ca.crt": pki.ca_cert,
               "/etc/leasekeeper/policy/policy.json": policy}
    for flag, value in flags.items():
        if value in mounted:
            flags[flag] = str(mounted.pop(value))
    assert not mounted, f"the manifest no longer reads {sorted(mounted)}"
    flags["--data-dir"] = str(tmp_path / "data")
    with Daemon(flags) as daemon:
        # What the kubelet's grpc probe asks: Health/Check, service "".
        probe = ctl(f"--server={daemon.health_address}", "--timeout=3s",
                    "health")
        assert (probe.returncode, probe.stdout) == (0, "SERVING\n"), (
            probe.stderr)
        # The gRPC port itself wants mutual TLS: the policy's admin gets in.
        admin = ctl(f"--server={daemon.address}", f"--ca={pki.ca_cert}",
                    f"--cert={pki.client_cert}", f"--key={pki.client_key}",
                    "--tls-server-name=localhost", "-o", "json", "locks")
        assert admin.returncode == 0, admin.stderr
        assert json.loads(admin.stdout) == {"locks": []}
        assert "leasekeeper_build_info{" in scrape(daemon.metrics_address)
