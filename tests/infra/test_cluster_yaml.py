"""The autoscaler cluster definition is valid for Ray's own schema and matches what cluster/ requests."""

from __future__ import annotations

import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from cluster.model_actors import ModelSpec, placement
from tests.helpers.paths import REPO_ROOT


def test_autoscaler_yaml_validates_and_offers_the_gpu_label_model_actors_request():
    config = yaml.safe_load((REPO_ROOT / "infra" / "ray-cluster-aws.yaml").read_text())
    validate_config(prepare_config(config))  # defaults filled as `ray up` does; raises on a schema error
    gpu_pool = config["available_node_types"]["gpu_workers"]
    options = placement(ModelSpec("judge", "vllm", {"tensor_parallel_size": 1}, accelerator_type="H100"))
    assert options["num_gpus"] == 1 and f"accelerator_type:{options['accelerator_type']}" in gpu_pool["resources"]
    assert config["available_node_types"]["cpu_workers"]["min_workers"] == 0  # CPU pool autoscales


def test_the_schema_check_catches_a_misspelt_field():
    import pytest

    config = yaml.safe_load((REPO_ROOT / "infra" / "ray-cluster-aws.yaml").read_text())
    config["available_node_types"]["cpu_workers"]["max_worker"] = config["available_node_types"]["cpu_workers"].pop("max_workers")
    with pytest.raises(Exception, match="max_worker"):
        validate_config(prepare_config(config))
