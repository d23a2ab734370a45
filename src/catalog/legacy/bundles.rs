//! One bundle from its rows: properties, dependencies, related images and the deprecation
//! mark, with the CSV-derived parts computed by [`crate::catalog::csv`].

use super::rows::BundleRow;
use super::{Reader, Tag};
use crate::catalog::csv;
use crate::diag::Rule;
use crate::model::*;
use anyhow::Result;
use serde_json::{json, Value};

impl Reader<'_> {
    /// One bundle of one package; also whether an `olm.deprecated` property marked it.
    pub(super) fn bundle_decl(
        &mut self,
        pkg: &str,
        name: &str,
        row: &BundleRow,
    ) -> Result<(Bundle, bool)> {
        let mut props: Vec<Property> = Vec::new();
        let mut package_props: Vec<Value> = Vec::new();
        let mut deprecated = false;
        if self.version >= 9 {
            for (ty, value) in self.typed_rows("properties", name)? {
                let v: Value = match serde_json::from_str(&value) {
                    Ok(v) => v,
                    Err(e) => {
                        self.warn(
                            Rule::Property,
                            format!("property of type {ty:?} is not JSON ({e}); dropped"),
                        )
                        .in_package(pkg)
                        .in_bundle(name);
                        continue;
                    }
                };
                match ty.as_str() {
                    "olm.deprecated" => deprecated = true,
                    prop::PACKAGE => {
                        let named = v.get("packageName").and_then(Value::as_str).unwrap_or("");
                        if named == pkg {
                            package_props.push(v);
                        }
                    }
                    prop::GVK => props.push(csv::property(prop::GVK, &csv::gvk_of(&v))),
                    "" => {}
                    _ => props.push(csv::property(&ty, &v)),
                }
            }
        }
        for g in self.api_rows("api_provider", name)? {
            props.push(csv::property(prop::GVK, &g));
        }
        if self.version >= 3 {
            for g in self.api_rows("api_requirer", name)? {
                props.push(csv::property(prop::GVK_REQUIRED, &g));
            }
        }
        if self.version >= 8 {
            for (ty, value) in self.typed_rows("dependencies", name)? {
                let v: Value = match serde_json::from_str(&value) {
                    Ok(v) => v,
                    Err(e) => {
                        self.warn(
                            Rule::Property,
                            format!("dependency of type {ty:?} is not JSON ({e}); dropped"),
                        )
                        .in_package(pkg)
                        .in_bundle(name);
                        continue;
                    }
                };
                match ty.as_str() {
                    "olm.gvk" => props.push(csv::property(prop::GVK_REQUIRED, &csv::gvk_of(&v))),
                    "olm.package" => props.push(csv::property(
                        prop::PACKAGE_REQUIRED,
                        &csv::package_required(&v),
                    )),
                    prop::CONSTRAINT => props.push(csv::property(prop::CONSTRAINT, &v)),
                    other => {
                        self.warn(
                            Rule::Property,
                            format!(
                                "legacy quirk: dependency of type {other:?} has no FBC property (FBC knows olm.gvk.required, olm.package.required and olm.constraint); dropped"
                            ),
                        )
                        .in_package(pkg)
                        .in_bundle(name);
                    }
                }
            }
        }
        let package_value = self.package_property(pkg, name, row, package_props);
        props.push(csv::property(prop::PACKAGE, &package_value));
        props.extend(row.objects.iter().map(csv::bundle_object));
        props.sort();
        props.dedup();
        if row.bundlepath.is_empty() && row.objects.is_empty() {
            self.warn(
                Rule::Image,
                "legacy quirk: the bundle has neither a bundlepath nor stored manifests, so FBC rule \"image\" will fail".into(),
            )
            .in_package(pkg)
            .in_bundle(name);
        }
        if !row.substitutes_for.is_empty()
            && !props.iter().any(|p| p.r#type == "olm.substitutesFor")
        {
            self.warn(
                Rule::Property,
                format!(
                    "legacy quirk: substitutesfor {:?} has no FBC field; dropped",
                    row.substitutes_for
                ),
            )
            .in_package(pkg)
            .in_bundle(name);
        }
        let related_images = self.related_images(name, row.csv.as_ref())?;
        Ok((
            Bundle {
                name: name.to_string(),
                package: pkg.to_string(),
                image: row.bundlepath.clone(),
                properties: props,
                related_images,
                origin: self.origin.clone(),
                body: Body::Whole,
            },
            deprecated,
        ))
    }

    /// Exactly one olm.package, agreeing with the version of record: the rows' `olm.package`
    /// properties naming this package (`package_props`), or one made from the bundle's row.
    fn package_property(
        &mut self,
        pkg: &str,
        name: &str,
        row: &BundleRow,
        mut package_props: Vec<Value>,
    ) -> Value {
        let mut package_value = match package_props.len() {
            0 => json!({"packageName": pkg, "version": row.version}),
            1 => package_props.remove(0),
            n => {
                let pick = package_props
                    .iter()
                    .position(|v| v.get("version").and_then(Value::as_str) == Some(&row.version))
                    .unwrap_or(0);
                self.warn(
                    Rule::PackageProperty,
                    format!(
                        "legacy quirk: {n} different olm.package properties; FBC rule \"package-property\" allows one, keeping the one with version {:?}",
                        package_props[pick].get("version").and_then(Value::as_str).unwrap_or("")
                    ),
                )
                .in_package(pkg)
                .in_bundle(name);
                package_props.swap_remove(pick)
            }
        };
        let stored = package_value
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("");
        if stored.is_empty() && !row.version.is_empty() {
            self.warn(
                Rule::PackageProperty,
                format!(
                    "legacy quirk: the olm.package property has no version (migration 5 wrote its backfill into nameless rows, and migration 9 copied the empty column); using the CSV's version {:?}",
                    row.version
                ),
            )
            .in_package(pkg)
            .in_bundle(name);
            package_value["version"] = Value::String(row.version.clone());
        }
        let version = package_value
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if version.is_empty() {
            self.warn(
                Rule::PackageProperty,
                format!(
                    "legacy quirk: the index holds no version for this bundle (schema {} {}), so FBC rule \"package-property\" (a semver version) will fail",
                    self.version,
                    if self.version < 5 { "has no version column and no CSV is stored" } else { "stores an empty version" }
                ),
            )
            .in_package(pkg)
            .in_bundle(name);
        }
        package_value
    }
}
