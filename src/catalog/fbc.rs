//! File-based catalogs (FBC): reading JSON/YAML meta streams, and writing them back (render).
//!
//! Reading follows upstream's loader: walk the tree in lexical order honouring `.indexignore`
//! files (gitignore syntax, scoped to their directory), parse every other file as a JSON object
//! stream (first non-space byte `{`) or a YAML multi-document stream, compare top-level keys
//! case-insensitively, and keep each meta as canonical JSON. Typed decoding of the four OLM
//! schemas into [`Decl`]s happens here too; everything else becomes a custom [`Meta`].

use super::Decl;
use crate::diag::{Diagnostic, Rule};
use crate::json;
use crate::model::*;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::Path;

/// One decoded document, before typing.
#[derive(Debug, Clone)]
pub struct RawMeta {
    pub schema: String,
    pub package: String,
    pub name: String,
    pub value: Map<String, Value>,
    pub origin: Origin,
}

/// Reads every meta of an FBC directory tree (or a single file).
pub fn read_path(root: &Path, diags: &mut Vec<Diagnostic>) -> Vec<Decl> {
    read_path_with(root, diags, &mut |b, _| b)
}

/// [`read_path`], handing each bundle to `sink` as soon as it is decoded.
pub fn read_path_with(
    root: &Path,
    diags: &mut Vec<Diagnostic>,
    sink: &mut super::BundleSink<'_>,
) -> Vec<Decl> {
    let mut decls = Vec::new();
    if root.is_file() {
        read_file(root, &mut decls, diags, &mut *sink);
        return decls;
    }
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .add_custom_ignore_filename(".indexignore")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for entry in walker {
        match entry {
            Ok(e) => {
                let is_file = e.file_type().map(|t| !t.is_dir()).unwrap_or(false);
                if is_file && e.file_name() != ".indexignore" {
                    read_file(e.path(), &mut decls, diags, &mut *sink);
                }
            }
            Err(err) => diags.push(Diagnostic::error(
                Rule::Parse,
                format!("cannot walk {}: {err}", root.display()),
            )),
        }
    }
    decls
}

/// Files above this size are read in chunks of this size when they hold a JSON stream, so a
/// large catalog never sits in memory whole.
const CHUNK: usize = 1 << 20;

fn read_file(
    path: &Path,
    decls: &mut Vec<Decl>,
    diags: &mut Vec<Diagnostic>,
    bundle_sink: &mut super::BundleSink<'_>,
) {
    let display = path.display().to_string();
    // Each document is typed as soon as it is parsed, so only one document's generic tree is
    // alive at a time. A stream error drops the whole file, as upstream does.
    let mut typed = Vec::new();
    let mut errs = Vec::new();
    let mut sink = |raw: RawMeta| match to_decl(raw, &mut errs) {
        Some(Decl::Bundle(b)) => typed.push(Decl::Bundle(bundle_sink(b, &mut errs))),
        Some(d) => typed.push(d),
        None => {}
    };
    let ok = match read_streaming(path, &display, CHUNK, diags, &mut sink) {
        Ok(Some(ok)) => ok,
        Ok(None) => match std::fs::read(path) {
            Ok(bytes) => for_each_meta(&bytes, &display, diags, &mut sink),
            Err(e) => {
                diags.push(
                    Diagnostic::error(Rule::Parse, format!("cannot read file: {e}"))
                        .at(&Origin::file(&display)),
                );
                false
            }
        },
        Err(e) => {
            diags.push(
                Diagnostic::error(Rule::Parse, format!("cannot read file: {e}"))
                    .at(&Origin::file(&display)),
            );
            false
        }
    };
    if ok {
        decls.append(&mut typed);
        diags.append(&mut errs);
    }
}

/// Reads a large JSON-stream file chunk by chunk, handing each meta to `f`. Returns `None`
/// (having called `f` for nothing) when the file should be read whole instead: it is small,
/// it is not a JSON stream, or it fails before two objects decode (upstream then reads it as
/// YAML). Otherwise returns whether the stream decoded, as [`for_each_meta`] does.
fn read_streaming(
    path: &Path,
    file: &str,
    chunk: usize,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(RawMeta),
) -> std::io::Result<Option<bool>> {
    use std::io::Read;
    let mut input = std::fs::File::open(path)?;
    if input.metadata()?.len() <= chunk as u64 {
        return Ok(None);
    }
    let mut buf: Vec<u8> = Vec::with_capacity(chunk + (chunk >> 2));
    let mut base = 0usize; // file offset of buf[0]
    let mut checked = 0usize; // buf[..checked] is valid UTF-8
    let mut eof = false;
    let mut n = 0usize; // documents decoded
    let mut held: Vec<Value> = Vec::with_capacity(2);
    let mut errs = Vec::new();
    while !eof {
        let want = buf.len() + chunk;
        while buf.len() < want {
            let len = buf.len();
            buf.resize(want, 0);
            let got = input.read(&mut buf[len..])?;
            buf.truncate(len + got);
            if got == 0 {
                eof = true;
                break;
            }
        }
        match std::str::from_utf8(&buf[checked..]) {
            Ok(_) => checked = buf.len(),
            Err(e) => match e.error_len() {
                Some(bad) => {
                    diags.push(
                        Diagnostic::error(
                            Rule::Parse,
                            format!(
                                "file is not valid UTF-8: invalid utf-8 sequence of {bad} bytes from index {}",
                                base + checked + e.valid_up_to()
                            ),
                        )
                        .at(&Origin::file(file)),
                    );
                    return Ok(Some(false));
                }
                None if eof => {
                    diags.push(
                        Diagnostic::error(
                            Rule::Parse,
                            format!(
                                "file is not valid UTF-8: incomplete utf-8 byte sequence from index {}",
                                base + checked + e.valid_up_to()
                            ),
                        )
                        .at(&Origin::file(file)),
                    );
                    return Ok(Some(false));
                }
                None => checked += e.valid_up_to(),
            },
        }
        if base == 0 && buf.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Ok(None);
        }
        // Decode the complete documents of buf[..checked]; keep a trailing partial one.
        let mut stream = serde_json::Deserializer::from_slice(&buf[..checked]).into_iter::<Value>();
        let mut consumed = 0;
        loop {
            match stream.next() {
                None => {
                    consumed = checked;
                    break;
                }
                // A number or literal that ends the buffer may go on in the next chunk
                // (`12` + `34`, `true` + `x`): read more first.
                Some(Ok(v))
                    if !eof
                        && stream.byte_offset() == checked
                        && !(v.is_object() || v.is_array() || v.is_string()) =>
                {
                    break
                }
                Some(Ok(v)) => {
                    consumed = stream.byte_offset();
                    n += 1;
                    if n <= 2 {
                        // Held until two objects decode (the YAML fallback rule).
                        held.push(v);
                        if n == 2 {
                            for (i, v) in held.drain(..).enumerate() {
                                emit_meta(v, i + 1, file, &mut errs, f);
                            }
                        }
                    } else {
                        emit_meta(v, n, file, &mut errs, f);
                    }
                }
                Some(Err(e)) if e.is_eof() && !eof => break,
                Some(Err(_)) if n < 2 => return Ok(None),
                Some(Err(e)) => {
                    diags.push(
                        Diagnostic::error(Rule::Parse, format!("invalid JSON: {e}"))
                            .at(&Origin::doc(file, n + 1)),
                    );
                    return Ok(Some(false));
                }
            }
        }
        buf.drain(..consumed);
        base += consumed;
        checked -= consumed;
    }
    for (i, v) in held.into_iter().enumerate() {
        emit_meta(v, i + 1, file, &mut errs, f);
    }
    diags.append(&mut errs);
    Ok(Some(true))
}

/// The metas of a file as ingest reads one larger than `chunk` bytes: `chunk` bytes at a time
/// (ingest uses 1 MiB). `None` when that reader hands the file back to be read whole (it is
/// not larger, not a JSON stream, or fails before two objects decode). For tests and fuzzing,
/// which compare it with [`decode_bytes`] using small chunks; `chunk` must not be 0.
#[doc(hidden)]
pub fn decode_file_chunked(
    path: &Path,
    chunk: usize,
    diags: &mut Vec<Diagnostic>,
) -> std::io::Result<Option<Vec<RawMeta>>> {
    assert!(chunk > 0, "chunk size 0");
    let mut metas = Vec::new();
    let file = path.display().to_string();
    let ok = read_streaming(path, &file, chunk, diags, &mut |m| metas.push(m))?;
    Ok(ok.map(|ok| if ok { metas } else { Vec::new() }))
}

/// Splits one file's bytes into metas. Never panics on any input.
pub fn decode_bytes(bytes: &[u8], file: &str, diags: &mut Vec<Diagnostic>) -> Vec<RawMeta> {
    let mut metas = Vec::new();
    if !for_each_meta(bytes, file, diags, &mut |m| metas.push(m)) {
        metas.clear();
    }
    metas
}

/// Calls `f` with each meta of one file's bytes, in order. Returns false (after reporting it)
/// when the stream itself is broken; the caller then discards what it was given.
fn for_each_meta(
    bytes: &[u8],
    file: &str,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(RawMeta),
) -> bool {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            diags.push(
                Diagnostic::error(Rule::Parse, format!("file is not valid UTF-8: {e}"))
                    .at(&Origin::file(file)),
            );
            return false;
        }
    };
    let emit = |doc: Value, k: usize, diags: &mut Vec<Diagnostic>, f: &mut dyn FnMut(RawMeta)| {
        emit_meta(doc, k, file, diags, f)
    };
    let first = text.trim_start().chars().next();
    if first == Some('{') {
        // Upstream falls back to YAML for the whole file unless two JSON objects decode, so the
        // first two are held back until the second one has parsed.
        let mut held = Vec::with_capacity(2);
        let mut n = 0usize;
        let mut json_ok = true;
        // Per-document errors count only if the stream as a whole decodes.
        let mut errs = Vec::new();
        for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            match v {
                Ok(v) if n < 2 => {
                    held.push(v);
                    n += 1;
                    if n == 2 {
                        for (i, v) in held.drain(..).enumerate() {
                            emit(v, i + 1, &mut errs, f);
                        }
                    }
                }
                Ok(v) => {
                    n += 1;
                    emit(v, n, &mut errs, f);
                }
                Err(e) if n >= 2 => {
                    diags.push(
                        Diagnostic::error(Rule::Parse, format!("invalid JSON: {e}"))
                            .at(&Origin::doc(file, n + 1)),
                    );
                    return false;
                }
                Err(_) => {
                    json_ok = false;
                    break;
                }
            }
        }
        if json_ok {
            for (i, v) in held.into_iter().enumerate() {
                emit(v, i + 1, &mut errs, f);
            }
            diags.append(&mut errs);
            return true;
        }
    }
    let what = if first == Some('{') {
        "invalid JSON or YAML"
    } else {
        "invalid YAML"
    };
    let mut errs = Vec::new();
    match decode_yaml_stream(text, &mut |v, k| emit(v, k + 1, &mut errs, f)) {
        Ok(()) => {
            diags.append(&mut errs);
            true
        }
        Err((k, e)) => {
            diags.push(
                Diagnostic::error(Rule::Parse, format!("{what}: {e}"))
                    .at(&Origin::doc(file, k + 1)),
            );
            false
        }
    }
}

/// Types document number `k` (from 1) of `file` and hands it to `f`, or reports why not.
fn emit_meta(
    doc: Value,
    k: usize,
    file: &str,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(RawMeta),
) {
    let origin = Origin::doc(file, k);
    match to_raw_meta(doc, &origin) {
        Ok(m) => f(m),
        Err(d) => diags.push(d.at(&origin)),
    }
}

type StreamError = (usize, String);

/// Decodes a YAML multi-document stream, handing each document to `f`.
fn decode_yaml_stream(text: &str, f: &mut dyn FnMut(Value, usize)) -> Result<(), StreamError> {
    // A block scalar that ends the file without a newline still keeps its final line break
    // under clip chomping in Go's YAML library; libyaml drops it. Restore Go's behaviour.
    let owned;
    let text = if text.ends_with('\n') {
        text
    } else {
        owned = format!("{text}\n");
        &owned
    };
    crate::yaml::check_flow_depth(text).map_err(|e| (0, e))?;
    for (i, de) in yaml_serde::Deserializer::from_str(text).enumerate() {
        match Value::deserialize(de) {
            Ok(v) => f(v, i),
            Err(e) => return Err((i, e.to_string())),
        }
    }
    Ok(())
}

fn to_raw_meta(doc: Value, origin: &Origin) -> Result<RawMeta, Diagnostic> {
    let Value::Object(map) = doc else {
        let what = match doc {
            Value::Null => "an empty document",
            Value::Array(_) => "a list",
            _ => "a scalar",
        };
        return Err(Diagnostic::error(
            Rule::Schema,
            format!("expected an object with a \"schema\" key, found {what}"),
        ));
    };
    // Top-level keys are compared case-insensitively; two spellings of one key are an error.
    let mut folded: std::collections::BTreeMap<String, Vec<&String>> = Default::default();
    for k in map.keys() {
        folded.entry(k.to_lowercase()).or_default().push(k);
    }
    if let Some((k, spellings)) = folded.iter().find(|(_, v)| v.len() > 1) {
        let list: Vec<&str> = spellings.iter().map(|s| s.as_str()).collect();
        return Err(Diagnostic::error(
            Rule::Schema,
            format!("duplicate keys for key {k:?}: [{}]", list.join(" ")),
        ));
    }
    let key_str = |key: &str| -> Result<String, Diagnostic> {
        match get_ci(&map, key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(Diagnostic::error(
                Rule::Schema,
                format!(
                    "expected value for key {key:?} to be a string, got {}",
                    type_name(other)
                ),
            )),
        }
    };
    let schema = key_str("schema")?;
    let package = key_str("package")?;
    let name = key_str("name")?;
    if schema.is_empty() {
        return Err(Diagnostic::error(
            Rule::Schema,
            "object is missing root schema field",
        ));
    }
    Ok(RawMeta {
        schema,
        package,
        name,
        value: map,
        origin: origin.clone(),
    })
}

/// Case-insensitive field lookup under Go `encoding/json` rules: every key that matches the
/// field exactly or case-insensitively is assigned in turn, so of several spellings the last
/// one in the canonical blob's byte-wise key order (serde_json's `Map` iterates sorted) wins,
/// as it does upstream.
fn get_ci<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    let folded = key.to_lowercase();
    m.iter()
        .rev()
        .find(|(k, _)| {
            k.as_str() == key || k.eq_ignore_ascii_case(key) || k.to_lowercase() == folded
        })
        .map(|(_, v)| v)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Objects of a list field, each with its field path for error messages.
type ObjectList<'a> = Vec<(String, &'a Map<String, Value>)>;

/// Typed field access with error messages that name the field path.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    what: &'a str,
    path: String,
}

impl<'a> Fields<'a> {
    fn new(map: &'a Map<String, Value>, what: &'a str, path: String) -> Self {
        Fields { map, what, path }
    }
    fn err(&self, field: &str, expected: &str, got: &Value) -> Diagnostic {
        let sep = if self.path.is_empty() { "" } else { "." };
        Diagnostic::error(
            Rule::Schema,
            format!(
                "parse {}: field \"{}{sep}{field}\" must be {expected}, found {}",
                self.what,
                self.path,
                type_name(got)
            ),
        )
    }
    fn string(&self, field: &str) -> Result<String, Diagnostic> {
        match get_ci(self.map, field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(self.err(field, "a string", v)),
        }
    }
    fn list(&self, field: &str) -> Result<&'a [Value], Diagnostic> {
        match get_ci(self.map, field) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(self.err(field, "a list", v)),
        }
    }
    fn object(&self, field: &str) -> Result<Option<&'a Map<String, Value>>, Diagnostic> {
        match get_ci(self.map, field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(v) => Err(self.err(field, "an object", v)),
        }
    }
    fn objects(&self, field: &str) -> Result<ObjectList<'a>, Diagnostic> {
        let mut out = Vec::new();
        for (i, v) in self.list(field)?.iter().enumerate() {
            match v {
                Value::Object(o) => out.push((self.sub(&format!("{field}[{i}]")), o)),
                other => return Err(self.err(&format!("{field}[{i}]"), "an object", other)),
            }
        }
        Ok(out)
    }
    fn strings(&self, field: &str) -> Result<Vec<String>, Diagnostic> {
        let mut out = Vec::new();
        for (i, v) in self.list(field)?.iter().enumerate() {
            match v {
                Value::String(s) => out.push(s.clone()),
                other => return Err(self.err(&format!("{field}[{i}]"), "a string", other)),
            }
        }
        Ok(out)
    }
    fn sub(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.path)
        }
    }
    fn properties(&self) -> Result<Vec<Property>, Diagnostic> {
        let mut props = Vec::new();
        for (path, o) in self.objects("properties")? {
            let f = Fields::new(o, self.what, path);
            let ty = f.string("type")?;
            let value = get_ci(o, "value").map_or_else(|| "null".to_string(), json::canonical);
            props.push(Property { r#type: ty, value });
        }
        Ok(props)
    }
}

/// Types an FBC meta into a [`Decl`]; reports shape errors as diagnostics.
pub fn to_decl(raw: RawMeta, diags: &mut Vec<Diagnostic>) -> Option<Decl> {
    let origin = raw.origin.clone();
    let result = match raw.schema.as_str() {
        schema::PACKAGE => decode_package(&raw),
        schema::CHANNEL => decode_channel(&raw),
        schema::BUNDLE => decode_bundle(&raw),
        schema::DEPRECATIONS => decode_deprecations(&raw),
        _ => Ok(Decl::Other(Meta {
            blob: json::canonical_object(&raw.value),
            schema: raw.schema,
            package: raw.package,
            name: raw.name,
            origin: raw.origin,
        })),
    };
    match result {
        Ok(d) => Some(d),
        Err(d) => {
            diags.push(d.at(&origin));
            None
        }
    }
}

fn decode_package(raw: &RawMeta) -> Result<Decl, Diagnostic> {
    let f = Fields::new(&raw.value, "package", String::new());
    let icon = match f.object("icon")? {
        Some(o) => {
            let fi = Fields::new(o, "package", "icon".into());
            Some(Icon {
                base64data: fi.string("base64data")?,
                mediatype: fi.string("mediatype")?,
            })
        }
        None => None,
    };
    Ok(Decl::Package(Package {
        name: raw.name.clone(),
        default_channel: f.string("defaultChannel")?,
        icon,
        description: f.string("description")?,
        properties: f.properties()?,
        origin: raw.origin.clone(),
        ..Default::default()
    }))
}

fn decode_channel(raw: &RawMeta) -> Result<Decl, Diagnostic> {
    let f = Fields::new(&raw.value, "channel", String::new());
    let mut entries = Vec::new();
    for (path, o) in f.objects("entries")? {
        let e = Fields::new(o, "channel", path);
        entries.push(ChannelEntry {
            name: e.string("name")?,
            replaces: e.string("replaces")?,
            skips: e.strings("skips")?,
            skip_range: e.string("skipRange")?,
        });
    }
    Ok(Decl::Channel(
        raw.package.clone(),
        Channel {
            name: raw.name.clone(),
            entries,
            properties: f.properties()?,
            origin: raw.origin.clone(),
        },
    ))
}

fn decode_bundle(raw: &RawMeta) -> Result<Decl, Diagnostic> {
    let f = Fields::new(&raw.value, "bundle", String::new());
    let mut related_images = Vec::new();
    for (path, o) in f.objects("relatedImages")? {
        let r = Fields::new(o, "bundle", path);
        related_images.push(RelatedImage {
            name: r.string("name")?,
            image: r.string("image")?,
        });
    }
    Ok(Decl::Bundle(Bundle {
        name: raw.name.clone(),
        package: raw.package.clone(),
        image: f.string("image")?,
        properties: f.properties()?,
        related_images,
        origin: raw.origin.clone(),
        spilled: false,
    }))
}

fn decode_deprecations(raw: &RawMeta) -> Result<Decl, Diagnostic> {
    let f = Fields::new(&raw.value, "deprecation", String::new());
    let mut entries = Vec::new();
    for (path, o) in f.objects("entries")? {
        let e = Fields::new(o, "deprecation", path.clone());
        let (schema, name) = match e.object("reference")? {
            Some(r) => {
                let fr = Fields::new(r, "deprecation", format!("{path}.reference"));
                (fr.string("schema")?, fr.string("name")?)
            }
            None => (String::new(), String::new()),
        };
        entries.push(DeprecationEntry {
            schema,
            name,
            message: e.string("message")?,
        });
    }
    Ok(Decl::Deprecations(
        raw.package.clone(),
        Deprecations {
            entries,
            origin: raw.origin.clone(),
        },
    ))
}

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
