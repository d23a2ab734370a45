//! Rendering a catalog back to FBC, byte for byte as `opm render` writes it.
//!
//! Objects come in opm's order (`writeToEncoder`): package names sorted; for each, its
//! `olm.package`, its channels by name, its bundles by name, its other metas by schema, its
//! deprecations; then the metas that name no package. Every bundle is written as opm's
//! `Render.Run` leaves it: `olm.bundle.object` and `olm.csv.metadata` properties last, related
//! images sorted by image. Keys follow upstream's structs (`schema, name, package, …`), with
//! their `omitempty` rules. `-o json` is Go's indented encoder (four spaces, no HTML
//! escaping, a newline after each object); `-o yaml` is [`super::goyaml`] after `---`.
//! One difference on purpose: an integer above 2^53 in a property keeps its value, where
//! opm rounds it through a float64.

use super::goyaml::{self, Node};
use crate::json;
use crate::model::*;
use base64::Engine;
use serde_json::Value;
use std::collections::BTreeMap;

/// Output formats of [`render`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenderFormat {
    Json,
    Yaml,
}

/// Writes the catalog as FBC (see the module documentation for the order and the bytes).
pub fn render(
    catalog: &Catalog,
    format: RenderFormat,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    render_all(&[catalog], &[], format, out)
}

/// Writes several catalogs and lone bundles (rendered bundle images and bundle directories,
/// which are written as `olm.bundle`s only) as one stream, as opm writes all its references
/// together.
pub fn render_all(
    catalogs: &[&Catalog],
    bundles: &[&Bundle],
    format: RenderFormat,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let form = match format {
        RenderFormat::Json => Form::Json,
        RenderFormat::Yaml => Form::Yaml,
    };
    render_to(catalogs, bundles, form, out)
}

/// The byte forms the writer knows.
#[derive(Clone, Copy)]
enum Form {
    Json,
    Yaml,
    Lines,
}

/// What is written under one package name, gathered from catalogs and lone bundles.
#[derive(Default)]
struct Group<'a> {
    packages: Vec<&'a Package>,
    channels: Vec<&'a Channel>,
    bundles: Vec<&'a Bundle>,
    others: Vec<&'a Meta>,
    deprecations: Vec<&'a Deprecations>,
}

/// Gathers everything by package name (sorted), and the metas that name no package.
fn gather<'a>(
    catalogs: &[&'a Catalog],
    bundles: &[&'a Bundle],
) -> (BTreeMap<&'a str, Group<'a>>, Vec<&'a Meta>) {
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    let mut root_others = Vec::new();
    for cat in catalogs {
        for (name, p) in &cat.packages {
            let g = groups.entry(name.as_str()).or_default();
            g.packages.push(p);
            g.channels.extend(p.channels.values());
            g.bundles.extend(p.bundles.values());
            g.deprecations.extend(p.deprecations.iter());
        }
        for m in &cat.others {
            if m.package.is_empty() {
                root_others.push(m);
            } else {
                groups.entry(m.package.as_str()).or_default().others.push(m);
            }
        }
    }
    for b in bundles {
        groups
            .entry(b.package.as_str())
            .or_default()
            .bundles
            .push(b);
    }
    (groups, root_others)
}

/// More bundles of one package, in name order after the group's own.
pub type MoreBundles<'a> = dyn Iterator<Item = std::io::Result<Bundle>> + 'a;

impl Group<'_> {
    /// Writes the group in opm's order; `more` bundles follow the group's own bundles.
    fn emit(
        mut self,
        pkg: &str,
        more: Option<&mut MoreBundles<'_>>,
        w: &mut Writer<'_>,
    ) -> std::io::Result<()> {
        for p in self.packages {
            w.emit(&package_tree(p))?;
        }
        self.channels.sort_by(|a, b| a.name.cmp(&b.name));
        for c in self.channels {
            w.emit(&channel_tree(pkg, c))?;
        }
        self.bundles.sort_by(|a, b| a.name.cmp(&b.name));
        for b in self.bundles {
            w.emit(&bundle_tree(b))?;
        }
        for b in more.into_iter().flatten() {
            w.emit(&bundle_tree(&b?))?;
        }
        self.others.sort_by(|a, b| a.schema.cmp(&b.schema));
        for m in self.others {
            w.emit(&meta_tree(m))?;
        }
        for d in self.deprecations {
            w.emit(&deprecations_tree(pkg, d))?;
        }
        Ok(())
    }
}

fn render_to(
    catalogs: &[&Catalog],
    bundles: &[&Bundle],
    form: Form,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let (groups, root_others) = gather(catalogs, bundles);
    let mut w = Writer { form, out };
    for (pkg, g) in groups {
        g.emit(pkg, None, &mut w)?;
    }
    for m in root_others {
        w.emit(&meta_tree(m))?;
    }
    Ok(())
}

/// Writes a part of a catalog as [`render_lines`] writes it within the whole: `part` holds at
/// most one package name's objects (or only metas of no package), and `bundles` hands over
/// that package's bundles one at a time, in name order, so that no more than one bundle is in
/// memory. Writing every part in package name order, the metas of no package last, writes
/// what [`render_lines`] writes for the whole catalog.
pub fn render_part_lines(
    part: &Catalog,
    bundles: &mut MoreBundles<'_>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let (groups, root_others) = gather(&[part], &[]);
    let mut w = Writer {
        form: Form::Lines,
        out,
    };
    let mut bundles = Some(bundles);
    for (pkg, g) in groups {
        g.emit(pkg, bundles.take(), &mut w)?;
    }
    if let Some(b) = bundles.and_then(|b| b.next()) {
        let b = b?;
        return Err(std::io::Error::other(format!(
            "bundle {} of package {}, which the part does not hold",
            b.name, b.package
        )));
    }
    for m in root_others {
        w.emit(&meta_tree(m))?;
    }
    Ok(())
}

/// Writes the catalog in the same order and field layout, one compact object per line (JSON
/// Lines): the form of the file catalogd's HTTP API serves from.
pub fn render_lines(catalog: &Catalog, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    render_to(&[catalog], &[], Form::Lines, out)
}

/// Writes one bundle as an `olm.bundle` (what `opm render` writes for a bundle image).
pub fn render_bundle(
    b: &Bundle,
    format: RenderFormat,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    render_all(&[], &[b], format, out)
}

/// A document as opm's structs encode it: objects keep their fields' order.
enum Tree {
    Obj(Vec<(&'static str, Tree)>),
    Arr(Vec<Tree>),
    Str(String),
    /// A JSON value as opm's loader left it (objects with sorted keys).
    Json(Value),
}

impl Tree {
    fn str(s: &str) -> Tree {
        Tree::Str(s.to_string())
    }
}

/// An object builder honouring `omitempty`.
struct Obj(Vec<(&'static str, Tree)>);

impl Obj {
    fn new() -> Self {
        Obj(Vec::new())
    }
    fn field(mut self, k: &'static str, v: Tree) -> Self {
        self.0.push((k, v));
        self
    }
    fn string(self, k: &'static str, v: &str) -> Self {
        self.field(k, Tree::str(v))
    }
    fn omitempty(self, k: &'static str, v: &str) -> Self {
        if v.is_empty() {
            self
        } else {
            self.string(k, v)
        }
    }
    fn list(self, k: &'static str, v: Vec<Tree>) -> Self {
        if v.is_empty() {
            self
        } else {
            self.field(k, Tree::Arr(v))
        }
    }
    fn done(self) -> Tree {
        Tree::Obj(self.0)
    }
}

fn props_trees<'a>(props: impl IntoIterator<Item = &'a Property>) -> Vec<Tree> {
    props
        .into_iter()
        .map(|p| {
            Obj::new()
                .string("type", &p.r#type)
                .field(
                    "value",
                    Tree::Json(serde_json::from_str(&p.value).unwrap_or(Value::Null)),
                )
                .done()
        })
        .collect()
}

fn package_tree(p: &Package) -> Tree {
    let mut o = Obj::new()
        .string("schema", schema::PACKAGE)
        .string("name", &p.name)
        .string("defaultChannel", &p.default_channel);
    if let Some(icon) = &p.icon {
        o = o.field(
            "icon",
            Obj::new()
                .string("base64data", &reencode_base64(&icon.base64data))
                .string("mediatype", &icon.mediatype)
                .done(),
        );
    }
    o.omitempty("description", &p.description)
        .list("properties", props_trees(&p.properties))
        .done()
}

/// opm holds icon data as bytes: it is written back in padded standard base64. Text that
/// does not decode is kept as it is.
fn reencode_base64(data: &str) -> String {
    let e = base64::engine::general_purpose::STANDARD;
    let clean: String = data.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    match e.decode(&clean) {
        Ok(bytes) => e.encode(bytes),
        Err(_) => data.to_string(),
    }
}

fn channel_tree(pkg: &str, c: &Channel) -> Tree {
    let entries = c
        .entries
        .iter()
        .map(|e| {
            Obj::new()
                .string("name", &e.name)
                .omitempty("replaces", &e.replaces)
                .list("skips", e.skips.iter().map(|s| Tree::str(s)).collect())
                .omitempty("skipRange", &e.skip_range)
                .done()
        })
        .collect();
    Obj::new()
        .string("schema", schema::CHANNEL)
        .string("name", &c.name)
        .string("package", pkg)
        .field("entries", Tree::Arr(entries))
        .list("properties", props_trees(&c.properties))
        .done()
}

fn bundle_tree(b: &Bundle) -> Tree {
    let is_object =
        |p: &&Property| p.r#type == prop::BUNDLE_OBJECT || p.r#type == prop::CSV_METADATA;
    let props = b
        .properties
        .iter()
        .filter(|p| !is_object(p))
        .chain(b.properties.iter().filter(is_object));
    let mut related: Vec<&RelatedImage> = b.related_images.iter().collect();
    related.sort_by(|x, y| x.image.cmp(&y.image));
    let related = related
        .into_iter()
        .map(|r| {
            Obj::new()
                .string("name", &r.name)
                .string("image", &r.image)
                .done()
        })
        .collect();
    Obj::new()
        .string("schema", schema::BUNDLE)
        .omitempty("name", &b.name)
        .omitempty("package", &b.package)
        .string("image", &b.image)
        .list("properties", props_trees(props))
        .list("relatedImages", related)
        .done()
}

fn deprecations_tree(pkg: &str, d: &Deprecations) -> Tree {
    let entries = d
        .entries
        .iter()
        .map(|e| {
            let reference = Obj::new()
                .string("schema", &e.schema)
                .omitempty("name", &e.name)
                .done();
            Obj::new()
                .field("reference", reference)
                .string("message", &e.message)
                .done()
        })
        .collect();
    Obj::new()
        .string("schema", schema::DEPRECATIONS)
        .string("package", pkg)
        .field("entries", Tree::Arr(entries))
        .done()
}

fn meta_tree(m: &Meta) -> Tree {
    Tree::Json(serde_json::from_str(&m.blob).unwrap_or(Value::Null))
}

struct Writer<'a> {
    form: Form,
    out: &'a mut dyn std::io::Write,
}

impl Writer<'_> {
    fn emit(&mut self, t: &Tree) -> std::io::Result<()> {
        let mut s = String::new();
        match self.form {
            Form::Json => {
                write_json(&mut s, t, 0);
                s.push('\n');
            }
            Form::Lines => {
                write_compact(&mut s, t);
                s.push('\n');
            }
            Form::Yaml => {
                s.push_str("---\n");
                goyaml::write_document(&yaml_node(t), &mut s);
            }
        }
        self.out.write_all(s.as_bytes())
    }
}

fn yaml_node(t: &Tree) -> Node {
    match t {
        Tree::Obj(fields) => Node::Map(
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), yaml_node(v)))
                .collect(),
        ),
        Tree::Arr(items) => Node::Seq(items.iter().map(yaml_node).collect()),
        Tree::Str(s) => Node::Str(s.clone()),
        Tree::Json(v) => Node::from_json(v),
    }
}

fn write_json(out: &mut String, t: &Tree, depth: usize) {
    match t {
        Tree::Obj(fields) => json::write_indented_object(
            out,
            fields.iter().map(|(k, v)| (*k, v)),
            depth,
            &mut |out, v, d| write_json(out, v, d),
        ),
        Tree::Arr(items) => {
            json::write_indented_array(out, items.iter(), depth, &mut |out, v, d| {
                write_json(out, v, d)
            })
        }
        Tree::Str(s) => json::write_go_string(out, s),
        Tree::Json(v) => json::write_indented(out, v, depth),
    }
}

fn write_compact(out: &mut String, t: &Tree) {
    match t {
        Tree::Obj(fields) => {
            out.push('{');
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json::write_go_string(out, k);
                out.push(':');
                write_compact(out, v);
            }
            out.push('}');
        }
        Tree::Arr(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(out, v);
            }
            out.push(']');
        }
        Tree::Str(s) => json::write_go_string(out, s),
        Tree::Json(v) => out.push_str(&json::canonical(v)),
    }
}
