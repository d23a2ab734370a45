#!/usr/bin/env python3
"""Regenerates the committed seed corpora in fuzz/seeds/ from ../shared/testdata and
tests/fixtures (real data, cut down so the whole set stays small).

Usage: fuzz/make_seeds.py [LEGACY_SEED_DIR]

LEGACY_SEED_DIR holds the small legacy indexes written by
`OPREG_FUZZ_LEGACY_SEEDS=DIR cargo test --release --test fuzz_regressions`; a few of them are
copied (the script `scripts/fuzz.sh` can add all fourteen at run time). Needs PyYAML.
Manifest files are cut to the fields the readers look at (no descriptions, examples, RBAC or
OpenAPI schemas); FBC files are used whole or with their large properties dropped.
"""

import json
import pathlib
import re
import shutil
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "testdata"
OUT = ROOT / "fuzz" / "seeds"
RENDERED = SHARED / "corpus" / "rendered"
BUNDLES = SHARED / "corpus" / "bundles-sample"
COMMUNITY = BUNDLES / "community-operators-prod" / "operators"


def write(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / name).write_bytes(data)


def load_all(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def dump(doc):
    return yaml.safe_dump(doc, sort_keys=False, width=1000)


def keep(v, pointers):
    """The fields of v at the given paths (tuples of keys), with their parents."""
    out = {}
    for p in pointers:
        cur = v
        for k in p:
            if not isinstance(cur, dict) or k not in cur:
                break
            cur = cur[k]
        else:
            o = out
            for k in p[:-1]:
                o = o.setdefault(k, {})
            o[p[-1]] = cur
    return out


def small_csv(csv):
    c = keep(
        csv,
        [
            ("apiVersion",),
            ("kind",),
            ("metadata", "name"),
            ("metadata", "annotations", "olm.skipRange"),
            ("metadata", "annotations", "olm.properties"),
            ("metadata", "annotations", "olm.maxOpenShiftVersion"),
            ("metadata", "annotations", "operators.operatorframework.io/suggested-namespace"),
            ("spec", "version"),
            ("spec", "release"),
            ("spec", "replaces"),
            ("spec", "skips"),
            ("spec", "minKubeVersion"),
            ("spec", "relatedImages"),
            ("spec", "apiservicedefinitions"),
            ("spec", "customresourcedefinitions", "required"),
            ("spec", "keywords"),
            ("spec", "provider"),
            ("spec", "maturity"),
        ],
    )
    spec = csv.get("spec") or {}
    owned = ((spec.get("customresourcedefinitions") or {}).get("owned")) or []
    if owned:
        c.setdefault("spec", {}).setdefault("customresourcedefinitions", {})["owned"] = [
            keep(o, [("name",), ("kind",), ("version",), ("displayName",)]) for o in owned
        ]
    icons = spec.get("icon") or []
    if icons:
        # A short stand-in for the (often huge) base64 icon.
        c.setdefault("spec", {})["icon"] = [
            {"base64data": "iVBORw0KGgo=", "mediatype": icons[0].get("mediatype", "image/png")}
        ]
    c.setdefault("spec", {})["description"] = "A short description."
    deps = []
    for d in (((spec.get("install") or {}).get("spec") or {}).get("deployments")) or []:
        pod = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
        small = {}
        for key in ("initContainers", "containers"):
            if pod.get(key):
                small[key] = [keep(x, [("name",), ("image",)]) for x in pod[key]]
        deps.append({"name": d.get("name"), "spec": {"template": {"spec": small}}})
    c["spec"]["install"] = {"strategy": "deployment", "spec": {"deployments": deps}}
    return c


def small_object(o):
    kind = o.get("kind")
    if kind == "ClusterServiceVersion":
        return small_csv(o)
    if kind == "CustomResourceDefinition":
        c = keep(
            o,
            [
                ("apiVersion",),
                ("kind",),
                ("metadata", "name"),
                ("spec", "group"),
                ("spec", "names", "kind"),
                ("spec", "names", "plural"),
                ("spec", "version"),
                ("spec", "scope"),
            ],
        )
        versions = (o.get("spec") or {}).get("versions")
        if versions:
            c.setdefault("spec", {})["versions"] = [
                keep(v, [("name",), ("served",), ("storage",)]) for v in versions
            ]
        return c
    return keep(o, [("apiVersion",), ("kind",), ("metadata", "name")])


def small_file(path):
    """A manifest file cut down, as YAML text; undecodable files are kept as they are."""
    try:
        docs = load_all(path)
    except yaml.YAMLError:
        return path.read_bytes()
    if not docs or not isinstance(docs[0], dict):
        return path.read_bytes()
    if "packageName" in docs[0] or "annotations" in docs[0] or "dependencies" in docs[0] or "properties" in docs[0]:
        return path.read_bytes()  # package manifests and metadata files are small already
    return dump(small_object(docs[0])).encode()


def files_of(d):
    return sorted(p for p in d.iterdir() if p.is_file() and not p.name.startswith("."))


def nul_join(groups):
    """Groups of files → the NUL framing of the manifest targets (empty file = next group)."""
    return b"\0\0".join(b"\0".join(g) for g in groups)


def fbc_seeds():
    sources = sorted((ROOT / "tests" / "fixtures" / "upgrades").glob("*.yaml"))
    sources.append(ROOT / "tests" / "fixtures" / "deprecations" / "catalog.yaml")
    sources.append(RENDERED / "community-operators-prod-v4.22" / "libredb-studio-operator" / "catalog.yaml")
    for src in sources:
        stem = src.parent.name if src.name == "catalog.yaml" else src.stem
        text = src.read_text()
        write("fbc_yaml", f"{stem}.yaml", text)
        docs = load_all(src)
        lines = "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs)
        write("fbc_json", f"{stem}.json", lines)
    # Bigger rendered catalogs, without their largest properties.
    for pkg in ["nfs-provisioner-operator"]:
        src = RENDERED / "community-operators-prod-v4.22" / pkg / "catalog.yaml"
        docs = load_all(src)
        for d in docs:
            if d.get("schema") == "olm.bundle":
                d["properties"] = [
                    p for p in d.get("properties", []) if p.get("type") not in ("olm.csv.metadata", "olm.bundle.object")
                ]
        write("fbc_yaml", f"{pkg}.yaml", "".join("---\n" + dump(d) for d in docs))
        pretty = "".join(json.dumps(d, indent=2) + "\n" for d in docs)
        write("fbc_json", f"{pkg}.json", pretty)
    # A JSON stream with no separators, a custom meta and a bundle object, all case variants.
    stream = (
        '{"schema":"olm.package","name":"p","defaultChannel":"c","icon":{"base64data":"aGk=","mediatype":"image/svg+xml"}}'
        '{"Schema":"olm.channel","package":"p","name":"c","entries":[{"name":"p.v2","replaces":"p.v1","skips":["p.v0"],"skipRange":"<2.0.0"},{"name":"p.v1"}]}'
        '{"schema":"olm.bundle","package":"p","name":"p.v1","image":"r/p:1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}'
        '{"schema":"olm.bundle","package":"p","name":"p.v2","image":"r/p:2","properties":[{"type":"olm.package","value":{"packageName":"p","version":"2.0.0-rc.1+b"}},'
        '{"type":"olm.bundle.object","value":{"data":"eyJraW5kIjoiQ2x1c3RlclNlcnZpY2VWZXJzaW9uIn0="}},{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"}}],'
        '"relatedImages":[{"name":"op","image":"r/op:2"}]}'
        '{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle","name":"p.v1"},"message":"old"},{"reference":{"schema":"olm.package"},"message":"gone"}]}'
        '{"schema":"custom.meta","package":"p","name":"x","value":[1,2.5e3,-0,null,true,"\\u003c"]}'
    )
    write("fbc_json", "stream-no-newlines.json", stream)
    # The chunked reader: a chunk-size byte, then a JSON stream (non-ASCII text, numbers and
    # literals at the top level, so that chunk boundaries fall inside every kind of token).
    for i, src in enumerate(sorted((OUT / "fbc_json").iterdir())):
        write("fbc_stream", src.name, bytes([i * 7 % 64]) + src.read_bytes())
    write(
        "fbc_stream",
        "scalars-and-utf8.json",
        b"\x02" + '{"schema":"olm.package","name":"p","description":"caf\u00e9 \u2603 \U0001F600"}\n'
        '{"schema":"x","name":"\u00e9\u00e9\u00e9"} 12345 true null -1.5e3 "s" [1,2]\n{"schema":"y"}'.encode(),
    )


def manifest_seeds():
    up = SHARED / "upstream-manifests"
    # Package-manifest trees: the package dir (holding the package manifest), then each version dir.
    for pkg in ["etcd", "prometheus", "strimzi-kafka-operator"]:
        d = up / pkg
        manifest = next(p for p in files_of(d) if p.name.endswith(".package.yaml"))
        groups = [[small_file(p) for p in files_of(d)]]
        for sub in sorted(p for p in d.iterdir() if p.is_dir()):
            groups.append([small_file(p) for p in files_of(sub)])
        write("package_manifest", f"{pkg}.bin", manifest.read_bytes() + b"\0" + nul_join(groups))
    # Bundle directories: pairs of (metadata files, manifests files).
    def bundle(dir_):
        return [
            [small_file(p) for p in files_of(dir_ / "metadata")],
            [small_file(p) for p in files_of(dir_ / "manifests")],
        ]

    etcd = COMMUNITY / "etcd"
    all_etcd = []
    for v in sorted(p for p in etcd.iterdir() if p.is_dir()):
        all_etcd += bundle(v)
    write("bundle_dir", "etcd-all.bin", nul_join(all_etcd))
    for pkg, ver in [
        ("etcd", "0.9.2"),
        ("mercury-operator", "1.0.2"),
        ("dbaas-operator", "0.5.0"),
        ("eventing-kogito", None),
        ("awss3-operator-registry", None),
    ]:
        base = COMMUNITY / pkg
        if ver is None:
            ver = sorted(p.name for p in base.iterdir() if p.is_dir() and (p / "metadata").is_dir())[-1]
        write("bundle_dir", f"{pkg}-{ver}.bin", nul_join(bundle(base / ver)))
    # Single CSVs for the csv target, cut down, plus one untouched small one.
    csvs = {
        "etcd-0.9.2": COMMUNITY / "etcd" / "0.9.2" / "manifests" / "etcdoperator.v0.9.2.clusterserviceversion.yaml",
        "mercury-1.0.2": COMMUNITY / "mercury-operator" / "1.0.2" / "manifests" / "mercury-operator.v1.0.2.clusterserviceversion.yaml",
        "dbaas-0.5.0": COMMUNITY / "dbaas-operator" / "0.5.0" / "manifests" / "dbaas-operator.clusterserviceversion.yaml",
        "strimzi-0.12.2": up / "strimzi-kafka-operator" / "strimzi-cluster-operator.v0.12.2.clusterserviceversion.yaml",
        "prometheus-0.22.2": up / "prometheus" / "0.22.2" / "prometheusoperator.0.22.2.clusterserviceversion.yaml",
    }
    for name, path in csvs.items():
        write("csv", f"{name}.yaml", small_file(path))
    write("csv", "etcd-0.6.1-whole.yaml", (up / "etcd" / "0.6.1" / "etcdoperator.clusterserviceversion.yaml").read_bytes())
    # The same CSV as JSON, which the YAML decoder reads too.
    write("csv", "etcd-0.9.2.json", json.dumps(yaml.safe_load(small_file(csvs["etcd-0.9.2"]))))


def range_seeds():
    text = ""
    for f in ["community-operators.fbc.json", "certified-operators.fbc.json"]:
        p = SHARED / "corpus" / f
        if p.exists():
            text += p.read_text()
    ranges = sorted(set(json.loads('"' + m + '"') for m in re.findall(r'"skipRange":"((?:[^"\\]|\\.)*)"', text)))
    # Every distinct shape once (digits folded), at most 40.
    shapes = {}
    for r in ranges:
        shapes.setdefault(re.sub(r"[0-9]+", "0", r), r)
    real = sorted(shapes.values(), key=lambda r: (len(r), r))[:40]
    versions = ["1.2.3", "v1.2", "0.0.1-alpha.1+build.5", "1.0.0-rc.1", " 01.02.03 ", "2026.5.2-49", "1"]
    extra = [
        ">=1.0.0 <2.0.0",
        ">= 1.0.0 < 2.0.0 || 3.x",
        "1.2.3 - 2.3.4",
        "!1.2.3",
        "!=1.2.3",
        "<=1.x || >=2.1.0-alpha",
        "1.2.x",
        ">1.2.3+build",
        "=v1.2.3",
        "||",
    ]
    for i, r in enumerate(real + extra):
        write("blang", f"range-{i:02}", r + "\0" + versions[i % len(versions)])
    constraints = [
        "^1.2.3",
        "~1.2",
        "~> 1.2.3",
        ">= 1.0, < 2.0 || 3.x",
        "1.2.3 - 2.3.4",
        "!=1.2.3",
        "*",
        "v1.x-beta",
        "=>1.0.0 =<2",
        "1.2.3-alpha.1 - 1.2.3",
        "^0.0.1",
        "~0",
        ">1.2.3-rc.1, <1.3",
        "1.X || 2.*.*",
        "= 1.2.3",
        "^1.2.3+meta",
        "<= 1.2",
        ">1",
    ]
    for i, c in enumerate(constraints):
        write("masterminds", f"constraint-{i:02}", c + "\0" + versions[i % len(versions)])


def legacy_seeds(src):
    for v in ["00", "05", "09", "13"]:
        shutil.copy(pathlib.Path(src) / f"legacy-v{v}.db", OUT / "legacy_index" / f"legacy-v{v}.sqlite")


def main():
    if OUT.exists():
        for d in OUT.iterdir():
            if d.name != "legacy_index":
                shutil.rmtree(d)
    fbc_seeds()
    manifest_seeds()
    range_seeds()
    if len(sys.argv) > 1:
        (OUT / "legacy_index").mkdir(parents=True, exist_ok=True)
        for f in (OUT / "legacy_index").iterdir():
            f.unlink()
        legacy_seeds(sys.argv[1])


if __name__ == "__main__":
    main()
