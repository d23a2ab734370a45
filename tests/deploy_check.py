"""Checks deploy/'s kustomizations field by field (run by tests/deploy.rs with Debian's python3).

Each kustomization is rendered with `kubectl kustomize`; every object of the core, apps, policy
and autoscaling/v1 groups is walked against the API models of Debian's python3-kubernetes
(`openapi_types` for a field's type, `attribute_map` for its JSON name), and the CatalogSource
against the JSON field names of operator-framework/api's CatalogSource type, listed below as
data. A field the model does not have, or a value of the wrong shape, is an error naming the
kustomization, the object and the field's path.

Usage: deploy_check.py KUSTOMIZATION_DIR...   (exit 0: every object checks; 1: errors, listed)
"""

import re
import subprocess
import sys

import kubernetes.client as k8s
import yaml

# operator-framework/api, pkg/operators/v1alpha1/catalogsource_types.go: the JSON names of the
# CatalogSource's fields. A string value is a model class of python3-kubernetes (for the core
# types the OLM type embeds), "str"/"int" a scalar, a dict a struct of OLM's own.
OLM_ICON = {"base64data": "str", "mediatype": "str"}
OLM_CATALOG_SOURCE = {
    "apiVersion": "str",
    "kind": "str",
    "metadata": "V1ObjectMeta",
    "spec": {
        "sourceType": "str",
        "priority": "int",
        "configMap": "str",
        "address": "str",
        "image": "str",
        "grpcPodConfig": {
            "nodeSelector": "dict(str, str)",
            "tolerations": "list[V1Toleration]",
            "affinity": "V1Affinity",
            "priorityClassName": "str",
            "securityContextConfig": "str",
            "memoryTarget": "str",
            "extractContent": {"cacheDir": "str", "configDir": "str"},
        },
        "updateStrategy": {"registryPoll": {"interval": "str"}},
        "secrets": "list[str]",
        "displayName": "str",
        "description": "str",
        "publisher": "str",
        "icon": OLM_ICON,
    },
}

# apiVersion/kind -> the python3-kubernetes model that describes it.
MODELS = {
    ("v1", "Service"): "V1Service",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "V1HorizontalPodAutoscaler",
}
OLM_KINDS = {("operators.coreos.com/v1alpha1", "CatalogSource"): OLM_CATALOG_SOURCE}

SCALARS = {
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
    "float": (int, float),
    "datetime": (str,),
    "date": (str,),
    # IntOrString and Quantity-like fields are `object` in the models.
    "object": (str, int, float),
}


def check(value, typ, path, errors):
    """Checks VALUE against the model type TYP (a type string or an OLM struct dict)."""
    if isinstance(typ, dict):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object, got {value!r}")
            return
        for key, sub in value.items():
            if key not in typ:
                errors.append(f"{path}.{key}: no such field (known: {', '.join(sorted(typ))})")
            else:
                check(sub, typ[key], f"{path}.{key}", errors)
        return
    m = re.fullmatch(r"list\[(.+)\]", typ)
    if m:
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {value!r}")
            return
        for i, item in enumerate(value):
            check(item, m.group(1), f"{path}[{i}]", errors)
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", typ)
    if m:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map, got {value!r}")
            return
        for key, item in value.items():
            check(item, m.group(1), f"{path}[{key}]", errors)
        return
    if typ in SCALARS:
        if isinstance(value, bool) and typ != "bool" or not isinstance(value, SCALARS[typ]):
            errors.append(f"{path}: expected {typ}, got {value!r}")
        return
    model = getattr(k8s, typ, None)
    if model is None:
        errors.append(f"{path}: the checker knows no model {typ}")
        return
    if not isinstance(value, dict):
        errors.append(f"{path}: expected a {typ} object, got {value!r}")
        return
    by_json = {json: attr for attr, json in model.attribute_map.items()}
    for key, sub in value.items():
        attr = by_json.get(key)
        if attr is None:
            errors.append(f"{path}.{key}: {typ} has no field {key!r}")
        else:
            check(sub, model.openapi_types[attr], f"{path}.{key}", errors)


PROBE = ["grpc_health_probe", "-addr=:50051"]


def expect(directory, objects, errors):
    """What deploy/ promises, beyond field names: OLM's probe, OLM's restricted security
    context, a CatalogSource whose address is the Service, and the HA overlay's guarantees."""
    by_kind = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)

    def fail(msg):
        errors.append(f"{directory}: {msg}")

    deps, svcs, cats = by_kind.get("Deployment", []), by_kind.get("Service", []), by_kind.get("CatalogSource", [])
    if len(deps) != 1 or len(svcs) != 1 or len(cats) != 1:
        fail("expected one Deployment, one Service and one CatalogSource")
        return
    dep, svc, cat = deps[0], svcs[0], cats[0]
    pod = dep["spec"]["template"]["spec"]
    labels = dep["spec"]["template"]["metadata"].get("labels", {})
    for c in pod["containers"]:
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            if c.get(probe, {}).get("exec", {}).get("command") != PROBE:
                fail(f"container {c['name']}: {probe} is not {' '.join(PROBE)}")
        sc = c.get("securityContext", {})
        if sc.get("readOnlyRootFilesystem") is not True or sc.get("allowPrivilegeEscalation") is not False:
            fail(f"container {c['name']}: not read-only root without privilege escalation")
        if "requests" not in c.get("resources", {}):
            fail(f"container {c['name']}: no resource requests")
    if pod.get("securityContext", {}).get("runAsNonRoot") is not True:
        fail("the pod does not require a non-root user")
    if not pod.get("topologySpreadConstraints"):
        fail("the pod is not spread across nodes")
    if any(labels.get(k) != v for k, v in svc["spec"]["selector"].items()):
        fail("the Service does not select the Deployment's pods")
    port = svc["spec"]["ports"][0]["port"]
    want = f"{svc['metadata']['name']}.{svc['metadata'].get('namespace', 'default')}.svc:{port}"
    spec = cat["spec"]
    if spec.get("sourceType") != "grpc" or spec.get("address") != want or "image" in spec:
        fail(f"the CatalogSource is not in address mode on {want}: {spec}")
    if cat["metadata"].get("namespace") != svc["metadata"].get("namespace"):
        fail("the CatalogSource and the Service are in different namespaces")
    for pdb in by_kind.get("PodDisruptionBudget", []):
        if any(labels.get(k) != v for k, v in pdb["spec"]["selector"]["matchLabels"].items()):
            fail("the PodDisruptionBudget does not select the Deployment's pods")
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        if hpa["spec"]["scaleTargetRef"]["name"] != dep["metadata"]["name"]:
            fail("the HorizontalPodAutoscaler scales another object")
    if "PodDisruptionBudget" in by_kind:
        if dep["spec"].get("replicas", 1) < 2:
            fail("an HA overlay with fewer than two replicas")
        if pod["topologySpreadConstraints"][0]["whenUnsatisfiable"] != "DoNotSchedule":
            fail("an HA overlay that lets two replicas share a node")


def render(directory):
    out = subprocess.run(
        ["kubectl", "kustomize", directory], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"{directory}: kubectl kustomize failed: {out.stderr.strip()}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def main(dirs):
    errors = []
    for directory in dirs:
        objects = render(directory)
        if not objects:
            errors.append(f"{directory}: renders no object")
        for obj in objects:
            key = (obj.get("apiVersion"), obj.get("kind"))
            name = f"{directory}: {key[1]} {obj.get('metadata', {}).get('name')}"
            if key in MODELS:
                check(obj, MODELS[key], name, errors)
            elif key in OLM_KINDS:
                check(obj, OLM_KINDS[key], name, errors)
            else:
                errors.append(f"{name}: no model to check apiVersion {key[0]} kind {key[1]} against")
            print(f"checked {name}")
        expect(directory, objects, errors)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
