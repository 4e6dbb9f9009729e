"""The KubeRay manifests have the fields KubeRay's v1 CRDs require, run the image infra/Dockerfile
builds, and ask for what cluster/ and jobs/ expect (GPU resource, S3 Secret, MLflow URI, entrypoint)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import ray
import yaml

from cluster.model_actors import ModelSpec, placement
from tests.helpers.paths import REPO_ROOT

KUBERAY = REPO_ROOT / "infra" / "kuberay"
DOCKERFILE = REPO_ROOT / "infra" / "Dockerfile"

# Field names of KubeRay's ray.io/v1 types (ray-project.github.io/kuberay/reference/api): a name
# outside these sets is a misspelling the API server would drop or reject.
CLUSTER_SPEC = {"authOptions", "suspend", "managedBy", "autoscalerOptions", "headServiceAnnotations",
                "enableInTreeAutoscaling", "gcsFaultToleranceOptions", "headGroupSpec", "rayVersion",
                "workerGroupSpecs"}  # fmt: skip
HEAD_GROUP = {"template", "headService", "enableIngress", "rayStartParams", "serviceType"}
WORKER_GROUP = {"suspend", "groupName", "replicas", "minReplicas", "maxReplicas", "idleTimeoutSeconds",
                "rayStartParams", "template", "scaleStrategy", "numOfHosts"}  # fmt: skip
JOB_SPEC = {"activeDeadlineSeconds", "backoffLimit", "rayClusterSpec", "submitterPodTemplate", "metadata",
            "clusterSelector", "submitterConfig", "managedBy", "deletionStrategy", "entrypoint", "runtimeEnvYAML",
            "jobId", "submissionMode", "entrypointResources", "entrypointNumCpus", "entrypointNumGpus",
            "ttlSecondsAfterFinished", "shutdownAfterJobFinishes", "suspend"}  # fmt: skip


def _unknown(where: str, mapping: dict, allowed: set[str]) -> list[str]:
    return [f"{where}.{key}: not a field of KubeRay v1" for key in mapping if key not in allowed]


def _check_pod(where: str, template: Any) -> list[str]:
    containers = (template or {}).get("spec", {}).get("containers") if isinstance(template, dict) else None
    if not isinstance(containers, list) or not containers:
        return [f"{where}.template.spec.containers: required, a non-empty list"]
    return [f"{where}.template.spec.containers[{i}].{field}: required"
            for i, c in enumerate(containers) for field in ("name", "image") if not c.get(field)]  # fmt: skip


def _check_start_params(where: str, params: Any) -> list[str]:
    if not isinstance(params, dict):
        return [f"{where}.rayStartParams: required, a mapping (may be empty)"]
    return [f"{where}.rayStartParams.{k}: must be a string (CRD map[string]string), got {type(v).__name__}"
            for k, v in params.items() if not isinstance(v, str)]  # fmt: skip


def check_cluster_spec(where: str, spec: Any) -> list[str]:
    if not isinstance(spec, dict):
        return [f"{where}: required, a mapping"]
    errors = _unknown(where, spec, CLUSTER_SPEC)
    head = spec.get("headGroupSpec")
    if not isinstance(head, dict):
        errors.append(f"{where}.headGroupSpec: required")
    else:
        errors += _unknown(f"{where}.headGroupSpec", head, HEAD_GROUP)
        errors += _check_start_params(f"{where}.headGroupSpec", head.get("rayStartParams"))
        errors += _check_pod(f"{where}.headGroupSpec", head.get("template"))
    for i, group in enumerate(spec.get("workerGroupSpecs") or []):
        at = f"{where}.workerGroupSpecs[{i}]"
        errors += _unknown(at, group, WORKER_GROUP)
        for field in ("groupName", "replicas", "minReplicas", "maxReplicas"):
            if field not in group:
                errors.append(f"{at}.{field}: required")
        counts = [group.get(f) for f in ("minReplicas", "replicas", "maxReplicas")]
        if all(isinstance(c, int) for c in counts) and not counts[0] <= counts[1] <= counts[2]:
            errors.append(f"{at}: needs minReplicas <= replicas <= maxReplicas, got {counts}")
        errors += _check_start_params(at, group.get("rayStartParams"))
        errors += _check_pod(at, group.get("template"))
    return errors


def check_manifest(path: Path, doc: Any) -> list[str]:
    """Every structural error of one RayCluster / RayJob document, each naming file and field."""
    errors = []
    if doc.get("apiVersion") != "ray.io/v1":
        errors.append(f"apiVersion: must be ray.io/v1, got {doc.get('apiVersion')!r}")
    kind, spec = doc.get("kind"), doc.get("spec")
    if not doc.get("metadata", {}).get("name"):
        errors.append("metadata.name: required")
    if kind == "RayCluster":
        errors += check_cluster_spec("spec", spec)
    elif kind == "RayJob":
        spec = spec or {}
        errors += _unknown("spec", spec, JOB_SPEC)
        if not spec.get("entrypoint"):
            errors.append("spec.entrypoint: required")
        if "rayClusterSpec" not in spec and "clusterSelector" not in spec:
            errors.append("spec.rayClusterSpec: required (or spec.clusterSelector)")
        if "rayClusterSpec" in spec:
            errors += check_cluster_spec("spec.rayClusterSpec", spec["rayClusterSpec"])
        if "submitterPodTemplate" in spec:
            errors += _check_pod("spec.submitterPodTemplate", {"spec": spec["submitterPodTemplate"].get("spec")})
    else:
        errors.append(f"kind: must be RayCluster or RayJob, got {kind!r}")
    return [f"{path.name}: {e}" for e in errors]


def _load(name: str) -> dict:
    return yaml.safe_load((KUBERAY / name).read_text())


def _containers(node: Any) -> list[dict]:
    """Every container (a mapping with an image) anywhere in a document."""
    if isinstance(node, dict):
        found = [node] if "image" in node and "name" in node else []
        return found + [c for v in node.values() for c in _containers(v)]
    if isinstance(node, list):
        return [c for v in node for c in _containers(v)]
    return []


def _cluster_spec(doc: dict) -> dict:
    return doc["spec"]["rayClusterSpec"] if doc["kind"] == "RayJob" else doc["spec"]


MANIFESTS = ["raycluster.yaml", "rayjob.yaml"]


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest_has_the_fields_kuberay_requires(name):
    assert check_manifest(KUBERAY / name, _load(name)) == []


def test_the_structural_check_names_a_misspelt_or_missing_field():
    doc = _load("raycluster.yaml")
    group = doc["spec"]["workerGroupSpecs"][0]
    group["minReplica"] = group.pop("minReplicas")
    doc["spec"]["headGroupSpec"]["rayStartParams"]["num-cpus"] = 0
    del doc["spec"]["workerGroupSpecs"][1]["template"]["spec"]["containers"]
    assert check_manifest(KUBERAY / "raycluster.yaml", doc) == [
        "raycluster.yaml: spec.headGroupSpec.rayStartParams.num-cpus: must be a string (CRD map[string]string), got int",
        "raycluster.yaml: spec.workerGroupSpecs[0].minReplica: not a field of KubeRay v1",
        "raycluster.yaml: spec.workerGroupSpecs[0].minReplicas: required",
        "raycluster.yaml: spec.workerGroupSpecs[1].template.spec.containers: required, a non-empty list",
    ]


def test_every_pod_runs_the_image_the_dockerfile_builds_on_the_installed_ray():
    text = DOCKERFILE.read_text()
    base = re.search(r"^FROM rayproject/ray:(\S+)-py(\d)(\d+)\s*$", text, re.M)
    assert base, "infra/Dockerfile: FROM rayproject/ray:<version>-py<XY> expected"
    assert base.group(1) == ray.__version__ and (base.group(2), base.group(3)) == ("3", "11")
    image = re.search(r'org\.opencontainers\.image\.ref\.name="([^"]+)"', text).group(1)
    assert f"-t {image} " in text  # the build command in its header tags that name
    for name in MANIFESTS:
        doc = _load(name)
        images = {c["image"] for c in _containers(doc)}
        assert images == {image}, f"{name}: images {images} != the Dockerfile's {image}"
        assert _cluster_spec(doc)["rayVersion"] == ray.__version__


@pytest.mark.parametrize("name", MANIFESTS)
def test_groups_offer_cpu_workers_and_the_gpu_resource_model_actors_request(name):
    spec = _cluster_spec(_load(name))
    groups = {g["groupName"]: g for g in spec["workerGroupSpecs"]}
    assert groups["cpu-workers"]["minReplicas"] == 0 and groups["cpu-workers"]["maxReplicas"] > 1  # autoscales
    gpu = groups["gpu-model-actors"]
    options = placement(ModelSpec("judge", "vllm", {"tensor_parallel_size": 1}, accelerator_type="H100"))
    resources = json.loads(json.loads(gpu["rayStartParams"]["resources"]))  # KubeRay's quoted-JSON form
    assert resources == {f"accelerator_type:{options['accelerator_type']}": 1}
    assert int(gpu["rayStartParams"]["num-gpus"]) >= options["num_gpus"]
    for container in gpu["template"]["spec"]["containers"]:
        assert container["resources"]["limits"]["nvidia.com/gpu"] == gpu["rayStartParams"]["num-gpus"]


@pytest.mark.parametrize("name", MANIFESTS)
def test_ray_pods_take_s3_credentials_from_a_secret_and_mlflow_from_env(name):
    doc = _load(name)
    ray_pods = [c for c in _containers(_cluster_spec(doc))]
    assert len(ray_pods) == 3
    for container in ray_pods:
        env = {e["name"]: e for e in container["env"]}
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            assert "value" not in env[key], f"{name}: {key} must come from a Secret, not a literal"
            assert env[key]["valueFrom"]["secretKeyRef"]["key"] == key
        assert env["MLFLOW_TRACKING_URI"]["value"].startswith("http")


def test_rayjob_entrypoint_is_run_corpus_with_arguments_it_accepts():
    from jobs.run_corpus import build_config, parse_args

    argv = shlex.split(_load("rayjob.yaml")["spec"]["entrypoint"])
    assert argv[:2] == ["python", "jobs/run_corpus.py"]
    argv = [a if a != "$MLFLOW_TRACKING_URI" else "http://mlflow:5000" for a in argv[2:]]
    config = build_config(parse_args(argv))  # the config file exists and parses; flags are known
    assert config.storage.startswith("s3://") and config.tracking_uri == "http://mlflow:5000"
