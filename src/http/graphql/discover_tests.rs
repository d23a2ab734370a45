//! catalogd's discovery cases (graphql_test.go, discovery_test.go): the same blobs, the same
//! verdicts.

use super::*;

/// A blob of `schema` added as catalogd's `Meta{Schema, Blob}`.
fn discover(metas: &[(&str, &str)]) -> CatalogSchema {
    let mut cs = CatalogSchema::default();
    for (schema, blob) in metas {
        cs.add_blob(schema, blob.as_bytes());
    }
    cs
}

fn analyze(json: &str) -> SchemaInfo {
    let mut info = SchemaInfo::default();
    info.add_object(&RawObject::parse(json).unwrap());
    info
}

pub(super) const PACKAGE: &str = r#"{
    "schema": "olm.package",
    "name": "test-package",
    "defaultChannel": "stable",
    "icon": {"base64data": "...", "mediatype": "image/svg+xml"},
    "description": "A test package"
}"#;

pub(super) const CHANNEL: &str = r#"{
    "schema": "olm.channel",
    "name": "stable",
    "package": "test-package",
    "entries": [
        {"name": "test-package.v1.0.0"},
        {"name": "test-package.v1.1.0", "replaces": "test-package.v1.0.0"}
    ]
}"#;

pub(super) const BUNDLE: &str = r#"{
    "schema": "olm.bundle",
    "name": "test-package.v1.0.0",
    "package": "test-package",
    "image": "registry.io/test-package@sha256:abc123",
    "properties": [
        {"type": "olm.package", "value": {"packageName": "test-package", "version": "1.0.0"}},
        {"type": "olm.gvk", "value": {"group": "example.com", "version": "v1", "kind": "TestResource"}}
    ],
    "relatedImages": [{"name": "operator", "image": "registry.io/test-package@sha256:abc123"}]
}"#;

#[test]
fn discover_schema_from_metas() {
    let cs = discover(&[
        ("olm.package", PACKAGE),
        ("olm.channel", CHANNEL),
        ("olm.bundle", BUNDLE),
    ]);
    assert_eq!(cs.schemas.len(), 3);
    let pkg = &cs.schemas["olm.package"];
    assert_eq!(pkg.total_objects, 1);
    for f in ["name", "defaultChannel", "icon", "description", "schema"] {
        assert!(pkg.fields.contains_key(&field_name(f)), "{f}");
    }
    let bundle = &cs.schemas["olm.bundle"];
    assert_eq!(bundle.total_objects, 1);
    let props = &bundle.fields["properties"];
    assert!(props.is_array);
    for f in ["type", "value"] {
        assert!(props.nested.contains_key(f), "{f}");
    }
    assert_eq!(cs.schemas["olm.channel"].total_objects, 1);
}

#[test]
fn analyze_json_object_field_types() {
    let info = analyze(
        r#"{"name": "test-package", "version": "1.0.0", "count": 42, "active": true,
            "tags": ["tag1", "tag2"], "numbers": [1, 2, 3], "nested": {"key": "value"},
            "nullField": null, "emptyArray": [], "floatValue": 3.14,
            "mixedArray": ["string", 123, true]}"#,
    );
    assert_eq!(info.fields.len(), 11);
    for (field, want) in [
        ("name", "String"),
        ("version", "String"),
        ("count", "Int"),
        ("active", "Boolean"),
        ("tags", "[String]"),
        ("numbers", "[Int]"),
        ("nested", "String"),
        ("nullField", "String"),
        ("emptyArray", "[String]"),
        ("floatValue", "Float"),
        ("mixedArray", "[String]"),
    ] {
        assert_eq!(
            info.fields[&field_name(field)].type_string(),
            want,
            "{field}"
        );
    }
}

#[test]
fn bundle_properties_analysis() {
    let info = analyze(
        r#"{"name": "test-bundle", "package": "test-package", "properties": [
            {"type": "olm.package", "value": {"packageName": "test-package", "version": "1.0.0"}},
            {"type": "olm.gvk", "value": {"group": "example.com", "version": "v1", "kind": "TestResource"}},
            {"type": "olm.csv.metadata", "value": {"name": "test-operator",
                "namespace": "test-namespace", "annotations": {"description": "A test operator"}}}
        ]}"#,
    );
    let props = &info.fields["properties"];
    assert!(props.is_array);
    assert_eq!(props.nested.keys().collect::<Vec<_>>(), ["type", "value"]);
    // An object value is served as JSON text.
    assert_eq!(props.nested["value"].type_string(), "String");
}

#[test]
fn integer_type_detection() {
    let cs = discover(&[(
        "test.schema",
        r#"{"schema": "test.schema", "integerField": 42, "floatField": 3.14,
            "integerArray": [1, 2, 3], "floatArray": [1.5, 2.5, 3.5]}"#,
    )]);
    let s = &cs.schemas["test.schema"];
    assert_eq!(s.fields["integerField"].type_string(), "Int");
    assert_eq!(s.fields["floatField"].type_string(), "Float");
    assert_eq!(s.fields["integerArray"].type_string(), "[Int]");
    assert_eq!(s.fields["floatArray"].type_string(), "[Float]");
}

#[test]
fn skips_empty_schema() {
    let cs = discover(&[("", r#"{"name":"x"}"#)]);
    assert!(cs.schemas.is_empty());
}

#[test]
fn skips_malformed_blob() {
    let cs = discover(&[("test", "{invalid json")]);
    assert_eq!(cs.schemas["test"].total_objects, 0);
}

#[test]
fn real_world_example() {
    let cs = discover(&[
        (
            "olm.package",
            r#"{"defaultChannel": "alpha", "icon": {"base64data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==", "mediatype": "image/png"}, "name": "nginx-ingress-operator", "schema": "olm.package"}"#,
        ),
        (
            "olm.channel",
            r#"{"entries": [{"name": "nginx-ingress-operator.v0.0.1"}, {"name": "nginx-ingress-operator.v0.0.2", "replaces": "nginx-ingress-operator.v0.0.1"}], "name": "alpha", "package": "nginx-ingress-operator", "schema": "olm.channel"}"#,
        ),
        (
            "olm.bundle",
            r#"{"image": "quay.io/operatorhubio/nginx-ingress-operator@sha256:abc123", "name": "nginx-ingress-operator.v0.0.2", "package": "nginx-ingress-operator", "properties": [{"type": "olm.package", "value": {"packageName": "nginx-ingress-operator", "version": "0.0.2"}}, {"type": "olm.gvk", "value": {"group": "k8s.nginx.org", "kind": "NginxIngress", "version": "v1"}}, {"type": "olm.bundle.mediatype", "value": "registry+v1"}], "relatedImages": [{"image": "quay.io/operatorhubio/nginx-ingress-operator@sha256:abc123", "name": "operator"}], "schema": "olm.bundle"}"#,
        ),
    ]);
    assert_eq!(cs.schemas.len(), 3);
    let bundle = &cs.schemas["olm.bundle"];
    let props = &bundle.fields["properties"];
    assert!(
        props.is_array && props.nested.contains_key("type") && props.nested.contains_key("value")
    );
    let pkg = &cs.schemas["olm.package"];
    assert!(pkg.fields.contains_key("icon"));
    assert_eq!(pkg.total_objects, 1);
    assert_eq!(bundle.total_objects, 1);
    // The channel's entries: a nested type with the keys of both sampled elements.
    let entries = &cs.schemas["olm.channel"].fields["entries"];
    assert_eq!(
        entries.nested.keys().collect::<Vec<_>>(),
        ["name", "replaces"]
    );
}

#[test]
fn sampling_looks_at_ten_elements_and_the_first_type_wins() {
    // The 11th element's key is not sampled.
    let mut elems: Vec<String> = (0..10).map(|i| format!(r#"{{"a":{i}}}"#)).collect();
    elems.push(r#"{"late":1}"#.into());
    let info = analyze(&format!(r#"{{"xs":[{}]}}"#, elems.join(",")));
    assert_eq!(info.fields["xs"].nested.keys().collect::<Vec<_>>(), ["a"]);
    // A later object adds nested keys and never changes a kind, but a number that `Int` cannot
    // hold makes the field `Float` (catalogd keeps the first sample's `Int`; opreg differs).
    let mut info = analyze(r#"{"n": 1, "s": "x", "xs": [{"a": 1}]}"#);
    info.add_object(&RawObject::parse(r#"{"n": 1.5, "s": 2.5, "xs": [{"b": "x"}]}"#).unwrap());
    assert_eq!(info.fields["n"].type_string(), "Float");
    assert_eq!(info.fields["s"].type_string(), "String");
    assert_eq!(
        info.fields["xs"].nested.keys().collect::<Vec<_>>(),
        ["a", "b"]
    );
    // Mixed scalars fall back to [String]; nulls are skipped; a number sample of 2.5 is Float.
    assert_eq!(
        analyze(r#"{"m":[1,"a"]}"#).fields["m"].type_string(),
        "[String]"
    );
    assert_eq!(
        analyze(r#"{"m":[null,2.5]}"#).fields["m"].type_string(),
        "[Float]"
    );
    assert_eq!(
        analyze(r#"{"m":[null]}"#).fields["m"].type_string(),
        "[String]"
    );
    // A number mixed with an object keeps the number's type (catalogd's nested-fields rule).
    assert_eq!(
        analyze(r#"{"m":[1,{}]}"#).fields["m"].type_string(),
        "[Int]"
    );
}

#[test]
fn numbers_are_typed_from_every_value() {
    // Integers within 32 bits stay Int, whatever their count.
    let mut info = analyze(r#"{"n": 1, "m": [1, 2]}"#);
    info.add_object(&RawObject::parse(r#"{"n": 2, "m": [3]}"#).unwrap());
    assert_eq!(info.fields["n"].type_string(), "Int");
    assert_eq!(info.fields["m"].type_string(), "[Int]");
    // A fraction in a later object, or beyond the tenth sampled element, makes it Float.
    info.add_object(&RawObject::parse(r#"{"n": 2.5}"#).unwrap());
    assert_eq!(info.fields["n"].type_string(), "Float");
    let long: Vec<String> = (0..12)
        .map(|i| i.to_string())
        .chain(["0.5".into()])
        .collect();
    let info = analyze(&format!(r#"{{"m":[{}]}}"#, long.join(",")));
    assert_eq!(info.fields["m"].type_string(), "[Float]");
    // An integer outside GraphQL's 32-bit Int is Float, first or later.
    assert_eq!(
        analyze(r#"{"n": 3000000000}"#).fields["n"].type_string(),
        "Float"
    );
    let mut info = analyze(r#"{"n": 7}"#);
    info.add_object(&RawObject::parse(r#"{"n": -2147483649}"#).unwrap());
    assert_eq!(info.fields["n"].type_string(), "Float");
    assert_eq!(
        analyze(r#"{"n": -2147483648}"#).fields["n"].type_string(),
        "Int"
    );
    // The same in the elements of an array of objects.
    let mut info = analyze(r#"{"xs": [{"a": 1}, {"a": 2.25}]}"#);
    assert_eq!(info.fields["xs"].nested["a"].type_string(), "Float");
    info.add_object(&RawObject::parse(r#"{"xs": [{"b": 1}]}"#).unwrap());
    info.add_object(&RawObject::parse(r#"{"xs": [{"b": 1e10}]}"#).unwrap());
    assert_eq!(info.fields["xs"].nested["b"].type_string(), "Float");
}
