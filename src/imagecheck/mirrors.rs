//! Image mirror configuration as OpenShift clusters read it: `ImageDigestMirrorSet` (IDMS),
//! `ImageTagMirrorSet` (ITMS) and the older `ImageContentSourcePolicy` (ICSP), and where a
//! cluster would pull a reference from ([`Mirrors::locations`]).
//!
//! The rules, as the machine-config operator turns these resources into registries.conf:
//! - IDMS and ICSP mirrors serve references by digest only; ITMS mirrors references by tag
//!   only. A reference with both a tag and a digest is pulled by digest.
//! - A source is `host[:port][/path]` or `*.domain` (any host below the domain). It matches a
//!   reference whose name equals it or continues it at a `/` (a wildcard: whose host ends with
//!   `.domain`).
//! - The most specific source wins: of the sources that match, the longest. Only its mirrors
//!   are tried, then the source itself.
//! - Entries with the same source merge, mirrors in the order the files and entries give them
//!   (each mirror once), IDMS/ICSP mirrors and ITMS mirrors each in their own list.
//! - `mirrorSourcePolicy: NeverContactSource` (IDMS and ITMS; ICSP has no such field) on any
//!   entry of a source means the source itself is never tried.
//!
//! A mirror replaces the part of the name the source matched (for a wildcard, the host).

use serde::Deserialize;
use std::path::Path;

/// A mirror file that cannot be used: the file, the document and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct Error {
    pub file: String,
    pub message: String,
}

/// What a source matches.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    /// `host[:port][/path]`: the name itself or anything below it.
    Prefix(String),
    /// `*.domain`: any host ending in `.domain` (kept with its leading dot).
    Wildcard(String),
}

impl Source {
    /// The length of the part of `name` this source matches, if it matches.
    fn matched(&self, name: &str) -> Option<usize> {
        match self {
            Source::Prefix(p) => {
                let rest = name.strip_prefix(p.as_str())?;
                (rest.is_empty() || rest.starts_with('/')).then_some(p.len())
            }
            Source::Wildcard(d) => {
                let host = name.split('/').next().unwrap_or(name);
                let bare = host.split(':').next().unwrap_or(host);
                (bare.len() > d.len() && bare.ends_with(d.as_str())).then_some(host.len())
            }
        }
    }
    /// How specific the source is: the length of its text (`*.` included, as registries.conf
    /// compares prefixes).
    fn specificity(&self) -> usize {
        match self {
            Source::Prefix(p) => p.len(),
            Source::Wildcard(d) => d.len() + 1,
        }
    }
    fn text(&self) -> String {
        match self {
            Source::Prefix(p) => p.clone(),
            Source::Wildcard(d) => format!("*{d}"),
        }
    }
}

/// Every mirror of one source, merged over all files.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    source: Source,
    /// IDMS and ICSP mirrors: for references by digest.
    digest_mirrors: Vec<String>,
    /// ITMS mirrors: for references by tag.
    tag_mirrors: Vec<String>,
    never_contact_source: bool,
}

/// One place a reference may be pulled from, in the order a cluster tries them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The reference at that place (`host/path@digest` or `host/path:tag`).
    pub reference: String,
    /// A mirror, not the source itself.
    pub mirror: bool,
}

/// The mirror configuration of any number of IDMS, ITMS and ICSP files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mirrors {
    entries: Vec<Entry>,
}

/// The kinds of mirror set, with the list each keeps its mirrors in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Idms,
    Itms,
    Icsp,
}

#[derive(Deserialize)]
struct Doc {
    kind: Option<String>,
    spec: Option<Spec>,
    items: Option<Vec<Doc>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    image_digest_mirrors: Option<Vec<RawEntry>>,
    image_tag_mirrors: Option<Vec<RawEntry>>,
    repository_digest_mirrors: Option<Vec<RawEntry>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEntry {
    source: String,
    #[serde(default)]
    mirrors: Option<Vec<String>>,
    mirror_source_policy: Option<String>,
}

impl Mirrors {
    /// Reads `files` in order (each a YAML stream of mirror sets, or a `List` of them).
    pub fn read(files: &[impl AsRef<Path>]) -> Result<Mirrors, Error> {
        let mut m = Mirrors::default();
        for f in files {
            let f = f.as_ref();
            let name = f.display().to_string();
            let text = std::fs::read_to_string(f).map_err(|e| Error {
                file: name.clone(),
                message: e.to_string(),
            })?;
            m.add(&name, &text)?;
        }
        Ok(m)
    }

    /// Adds the mirror sets of one file's text; `file` names it in errors.
    pub fn add(&mut self, file: &str, text: &str) -> Result<(), Error> {
        let err = |message: String| Error {
            file: file.to_string(),
            message,
        };
        crate::yaml::check_flow_depth(text).map_err(|e| err(e.to_string()))?;
        for (i, de) in yaml_serde::Deserializer::from_str(text).enumerate() {
            let doc = match Option::<Doc>::deserialize(de) {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(e) => return Err(err(format!("document {}: {e}", i + 1))),
            };
            self.add_doc(doc, 0)
                .map_err(|m| err(format!("document {}: {m}", i + 1)))?;
        }
        Ok(())
    }

    fn add_doc(&mut self, doc: Doc, depth: usize) -> Result<(), Invalid> {
        let kind = match doc.kind.as_deref() {
            Some("List") if depth == 0 => {
                for item in doc.items.unwrap_or_default() {
                    self.add_doc(item, depth + 1)?;
                }
                return Ok(());
            }
            Some("ImageDigestMirrorSet") => Kind::Idms,
            Some("ImageTagMirrorSet") => Kind::Itms,
            Some("ImageContentSourcePolicy") => Kind::Icsp,
            Some(k) => {
                return Err(format!(
                "kind {k} is not ImageDigestMirrorSet, ImageTagMirrorSet or ImageContentSourcePolicy"
            )
            .into())
            }
            None => return Err("no kind".into()),
        };
        let Some(spec) = doc.spec else {
            return Ok(());
        };
        let (entries, field) = match kind {
            Kind::Idms => (spec.image_digest_mirrors, "imageDigestMirrors"),
            Kind::Itms => (spec.image_tag_mirrors, "imageTagMirrors"),
            Kind::Icsp => (spec.repository_digest_mirrors, "repositoryDigestMirrors"),
        };
        for (i, e) in entries.unwrap_or_default().into_iter().enumerate() {
            self.add_entry(kind, e)
                .map_err(|m| Invalid(format!("{field}[{i}]: {m}")))?;
        }
        Ok(())
    }

    fn add_entry(&mut self, kind: Kind, e: RawEntry) -> Result<(), Invalid> {
        let source = parse_source(&e.source)?;
        let never = match (kind, e.mirror_source_policy.as_deref()) {
            (_, None | Some("")) => false,
            (Kind::Icsp, Some(_)) => {
                return Err("ImageContentSourcePolicy has no mirrorSourcePolicy".into())
            }
            (_, Some("NeverContactSource")) => true,
            (_, Some("AllowContactingSource")) => false,
            (_, Some(p)) => {
                return Err(format!(
                    "mirrorSourcePolicy {p:?} is not NeverContactSource or AllowContactingSource"
                )
                .into())
            }
        };
        let mut mirrors = Vec::new();
        for m in e.mirrors.unwrap_or_default() {
            match parse_source(&m)? {
                Source::Prefix(p) => mirrors.push(p),
                Source::Wildcard(_) => {
                    return Err(format!("mirror {m:?}: a mirror cannot be a wildcard").into())
                }
            }
        }
        let i = match self.entries.iter().position(|x| x.source == source) {
            Some(i) => i,
            None => {
                self.entries.push(Entry {
                    source,
                    digest_mirrors: Vec::new(),
                    tag_mirrors: Vec::new(),
                    never_contact_source: false,
                });
                self.entries.len() - 1
            }
        };
        let entry = &mut self.entries[i];
        entry.never_contact_source |= never;
        let list = match kind {
            Kind::Itms => &mut entry.tag_mirrors,
            Kind::Idms | Kind::Icsp => &mut entry.digest_mirrors,
        };
        for m in mirrors {
            if !list.contains(&m) {
                list.push(m);
            }
        }
        Ok(())
    }

    /// True when no file gave any mirror set entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Where a cluster pulls `reference` from, in order: the mirrors of the most specific
    /// source that matches it (those serving its kind of reference), then the reference itself
    /// unless that source is never contacted. A reference no source matches, or one that does
    /// not parse, is pulled from where it names.
    pub fn locations(&self, reference: &str) -> Vec<Location> {
        let itself = vec![Location {
            reference: reference.to_string(),
            mirror: false,
        }];
        let Ok(r) = crate::imageref::parse(reference) else {
            return itself;
        };
        let name = format!("{}/{}", r.domain, r.path);
        let (suffix, by_digest) = match (&r.digest, &r.tag) {
            (Some(d), _) => (format!("@{d}"), true),
            (None, Some(t)) => (format!(":{t}"), false),
            (None, None) => (":latest".to_string(), false),
        };
        let best = self
            .entries
            .iter()
            .filter_map(|e| e.source.matched(&name).map(|n| (e, n)))
            .max_by_key(|(e, _)| e.source.specificity());
        let Some((entry, matched)) = best else {
            return itself;
        };
        let mirrors = if by_digest {
            &entry.digest_mirrors
        } else {
            &entry.tag_mirrors
        };
        let mut out: Vec<Location> = mirrors
            .iter()
            .map(|m| Location {
                reference: format!("{m}{}{suffix}", &name[matched..]),
                mirror: true,
            })
            .collect();
        if !entry.never_contact_source {
            out.push(Location {
                reference: format!("{name}{suffix}"),
                mirror: false,
            });
        }
        out
    }

    /// The sources, as written (for messages and tests).
    pub fn sources(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.source.text()).collect()
    }
}

/// Why a document, entry, source or mirror is refused (the file is named by the caller).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Invalid(String);

impl From<String> for Invalid {
    fn from(why: String) -> Self {
        Invalid(why)
    }
}

impl From<&str> for Invalid {
    fn from(why: &str) -> Self {
        Invalid(why.to_string())
    }
}

/// A source or mirror: `*.domain`, a host, or `host/path` (no tag, no digest).
fn parse_source(s: &str) -> Result<Source, Invalid> {
    let bad = |why: &str| {
        Err(Invalid(format!(
            "{s:?} is not a registry, namespace or repository: {why}"
        )))
    };
    if s.is_empty() {
        return bad("empty");
    }
    if s.contains('@') {
        return bad("it has a digest");
    }
    if let Some(domain) = s.strip_prefix("*.") {
        if domain.is_empty() || domain.contains(['/', '*', ':']) || !is_host(domain) {
            return bad("a wildcard is `*.` and a domain, nothing after it");
        }
        return Ok(Source::Wildcard(format!(".{domain}")));
    }
    let Some((host, _)) = s.split_once('/') else {
        return if is_host(s) {
            Ok(Source::Prefix(
                crate::imageref::normalize_docker_hub(Some(s), "x/y").0,
            ))
        } else {
            bad("not a host name")
        };
    };
    if !is_host(host) || !(host.contains(['.', ':']) || host == "localhost") {
        return bad("the host must have a dot or a port, or be localhost");
    }
    match crate::imageref::parse(s) {
        Ok(r) if r.tag.is_some() => bad("it has a tag"),
        Ok(r) => Ok(Source::Prefix(format!("{}/{}", r.domain, r.path))),
        Err(e) => bad(&e.to_string()),
    }
}

/// A registry host: DNS labels and an optional port (or `localhost`).
fn is_host(h: &str) -> bool {
    let (name, port) = match h.rsplit_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (h, None),
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let name_ok = !name.is_empty()
        && name.split('.').all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    port_ok && name_ok
}

#[cfg(test)]
#[path = "mirrors_tests.rs"]
mod tests;
