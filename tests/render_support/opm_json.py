#!/usr/bin/env python3
"""What `opm render -o json` writes for the FBC files given as arguments, built without opreg.

Independent of opreg's writer: reads the YAML documents with PyYAML, groups and orders them
as opm's writeToEncoder does, lays each object out in the field order of opm's declcfg
structs (omitempty fields left out when empty), keeps property values and custom metas as
opm's loader leaves them (keys sorted), re-encodes icon data from its bytes, moves
olm.bundle.object and olm.csv.metadata properties last and sorts related images by image as
opm's Render does, then prints each object as Go's json.Encoder with SetIndent("", "    ")
and SetEscapeHTML(false) would.
"""
import base64
import json
import sys

import yaml


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """PyYAML's safe loader (libyaml's parser where built in) without its timestamp type: opm
    reads those scalars as strings."""


Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def sort_keys(v):
    if isinstance(v, dict):
        return {k: sort_keys(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [sort_keys(x) for x in v]
    return v


def props(doc):
    return [{"type": p["type"], "value": sort_keys(p.get("value"))} for p in doc.get("properties") or []]


def package(d):
    o = {"schema": "olm.package", "name": d["name"], "defaultChannel": d.get("defaultChannel", "")}
    if d.get("icon") is not None:
        data = base64.b64encode(base64.b64decode(d["icon"].get("base64data", ""))).decode()
        o["icon"] = {"base64data": data, "mediatype": d["icon"].get("mediatype", "")}
    if d.get("description"):
        o["description"] = d["description"]
    if props(d):
        o["properties"] = props(d)
    return o


def channel(d):
    entries = []
    for e in d.get("entries") or []:
        x = {"name": e["name"]}
        for k in ("replaces", "skips", "skipRange"):
            if e.get(k):
                x[k] = e[k]
        entries.append(x)
    o = {"schema": "olm.channel", "name": d["name"], "package": d["package"], "entries": entries}
    if props(d):
        o["properties"] = props(d)
    return o


def bundle(d):
    o = {"schema": "olm.bundle"}
    for k in ("name", "package"):
        if d.get(k):
            o[k] = d[k]
    o["image"] = d.get("image", "")
    ps = props(d)
    last = ("olm.bundle.object", "olm.csv.metadata")
    ps = [p for p in ps if p["type"] not in last] + [p for p in ps if p["type"] in last]
    if ps:
        o["properties"] = ps
    related = sorted(d.get("relatedImages") or [], key=lambda r: r.get("image", ""))
    if related:
        o["relatedImages"] = [{"name": r.get("name", ""), "image": r.get("image", "")} for r in related]
    return o


def deprecations(d):
    entries = []
    for e in d.get("entries") or []:
        ref = {"schema": e["reference"]["schema"]}
        if e["reference"].get("name"):
            ref["name"] = e["reference"]["name"]
        entries.append({"reference": ref, "message": e.get("message", "")})
    return {"schema": "olm.deprecations", "package": d["package"], "entries": entries}


def main():
    groups = {}
    root_others = []
    for path in sys.argv[1:]:
        with open(path) as f:
            for d in yaml.load_all(f, Loader=Loader):
                if d is None:
                    continue
                schema = d.get("schema")
                pkg = d.get("name") if schema == "olm.package" else d.get("package", "")
                if schema not in ("olm.package", "olm.channel", "olm.bundle", "olm.deprecations") and not pkg:
                    root_others.append(sort_keys(d))
                    continue
                g = groups.setdefault(pkg, {"p": [], "c": [], "b": [], "o": [], "d": []})
                if schema == "olm.package":
                    g["p"].append(package(d))
                elif schema == "olm.channel":
                    g["c"].append(channel(d))
                elif schema == "olm.bundle":
                    g["b"].append(bundle(d))
                elif schema == "olm.deprecations":
                    g["d"].append(deprecations(d))
                else:
                    g["o"].append(sort_keys(d))
    out = []
    for name in sorted(groups):
        g = groups[name]
        out += g["p"]
        out += sorted(g["c"], key=lambda c: c["name"])
        out += sorted(g["b"], key=lambda b: b.get("name", ""))
        out += sorted(g["o"], key=lambda o: o["schema"])
        out += g["d"]
    out += root_others
    for o in out:
        text = json.dumps(o, indent=4, ensure_ascii=False)
        # Go escapes these two even without HTML escaping.
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        sys.stdout.write(text + "\n")


main()
