//! Rendering a catalog back to FBC: packages in name order, then their channels, bundles and
//! deprecations, custom metas last; keys in upstream's struct order; a fixed point.

use crate::json;
use crate::model::*;
use serde_json::{Map, Value};

/// Output formats of [`render`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RenderFormat {
    Json,
    Yaml,
}

/// Writes the catalog as FBC. Packages in name order; within a package: the package, its
/// channels, its bundles (by name), its deprecations; custom metas last, in input order.
/// The output is a fixed point: reading it back and rendering again gives the same bytes.
pub fn render(
    catalog: &Catalog,
    format: RenderFormat,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    for pkg in catalog.packages.values() {
        emit(&package_value(pkg), format, out)?;
        for ch in pkg.channels.values() {
            emit(&channel_value(&pkg.name, ch), format, out)?;
        }
        for b in pkg.bundles.values() {
            emit(&bundle_value(b), format, out)?;
        }
        if let Some(d) = &pkg.deprecations {
            emit(&deprecations_value(&pkg.name, d), format, out)?;
        }
    }
    for m in &catalog.others {
        let v: Value = serde_json::from_str(&m.blob).unwrap_or(Value::Null);
        emit(&Ordered::from_value(v), format, out)?;
    }
    Ok(())
}

/// Writes one bundle as an `olm.bundle` (what `opm render` writes for a bundle image).
pub fn render_bundle(
    b: &Bundle,
    format: RenderFormat,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    emit(&bundle_value(b), format, out)
}

/// A JSON object that keeps its keys in the order they were added (Go struct field order).
struct Ordered(Vec<(String, Value)>);

impl Ordered {
    /// A custom meta: its own keys, sorted.
    fn from_value(v: Value) -> Self {
        match v {
            Value::Object(m) => Ordered(m.into_iter().collect()),
            _ => Ordered(vec![]),
        }
    }
    fn push(mut self, k: &str, v: Value) -> Self {
        self.0.push((k.to_string(), v));
        self
    }
    fn push_nonempty(self, k: &str, v: &str) -> Self {
        if v.is_empty() {
            self
        } else {
            self.push(k, Value::String(v.to_string()))
        }
    }
    fn to_json(&self) -> String {
        let mut s = String::from("{");
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            json::write_string(&mut s, k);
            s.push(':');
            s.push_str(&json::canonical(v));
        }
        s.push('}');
        s
    }
}

fn props_value(props: &[Property]) -> Value {
    Value::Array(
        props
            .iter()
            .map(|p| {
                let mut m = Map::new();
                m.insert("type".into(), Value::String(p.r#type.clone()));
                m.insert(
                    "value".into(),
                    serde_json::from_str(&p.value).unwrap_or(Value::Null),
                );
                Value::Object(m)
            })
            .collect(),
    )
}

fn package_value(p: &Package) -> Ordered {
    let mut o = Ordered(vec![])
        .push("schema", schema::PACKAGE.into())
        .push("name", p.name.clone().into())
        .push_nonempty("defaultChannel", &p.default_channel);
    if let Some(icon) = &p.icon {
        o = o.push(
            "icon",
            serde_json::json!({"base64data": icon.base64data, "mediatype": icon.mediatype}),
        );
    }
    o = o.push_nonempty("description", &p.description);
    if !p.properties.is_empty() {
        o = o.push("properties", props_value(&p.properties));
    }
    o
}

fn channel_value(pkg: &str, c: &Channel) -> Ordered {
    let entries = c
        .entries
        .iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert("name".into(), e.name.clone().into());
            if !e.replaces.is_empty() {
                m.insert("replaces".into(), e.replaces.clone().into());
            }
            if !e.skips.is_empty() {
                m.insert("skips".into(), e.skips.clone().into());
            }
            if !e.skip_range.is_empty() {
                m.insert("skipRange".into(), e.skip_range.clone().into());
            }
            Value::Object(m)
        })
        .collect();
    let mut o = Ordered(vec![])
        .push("schema", schema::CHANNEL.into())
        .push("name", c.name.clone().into())
        .push("package", pkg.into())
        .push("entries", Value::Array(entries));
    if !c.properties.is_empty() {
        o = o.push("properties", props_value(&c.properties));
    }
    o
}

fn bundle_value(b: &Bundle) -> Ordered {
    let mut o = Ordered(vec![])
        .push("schema", schema::BUNDLE.into())
        .push("name", b.name.clone().into())
        .push("package", b.package.clone().into())
        .push("image", b.image.clone().into())
        .push("properties", props_value(&b.properties));
    if !b.related_images.is_empty() {
        let imgs = b
            .related_images
            .iter()
            .map(|r| serde_json::json!({"name": r.name, "image": r.image}))
            .collect();
        o = o.push("relatedImages", Value::Array(imgs));
    }
    o
}

fn deprecations_value(pkg: &str, d: &Deprecations) -> Ordered {
    let entries = d
        .entries
        .iter()
        .map(|e| {
            let mut r = Map::new();
            r.insert("schema".into(), e.schema.clone().into());
            if !e.name.is_empty() {
                r.insert("name".into(), e.name.clone().into());
            }
            serde_json::json!({"reference": Value::Object(r), "message": e.message})
        })
        .collect();
    Ordered(vec![])
        .push("schema", schema::DEPRECATIONS.into())
        .push("package", pkg.into())
        .push("entries", Value::Array(entries))
}

fn emit(o: &Ordered, format: RenderFormat, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    match format {
        RenderFormat::Json => {
            // One compact object per line: a JSON object stream that is also JSON Lines.
            out.write_all(o.to_json().as_bytes())?;
            out.write_all(b"\n")
        }
        RenderFormat::Yaml => {
            let mut m = Map::new();
            for (k, v) in &o.0 {
                m.insert(k.clone(), v.clone());
            }
            let y = yaml_serde::to_string(&Value::Object(m))
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            out.write_all(b"---\n")?;
            out.write_all(y.as_bytes())
        }
    }
}
