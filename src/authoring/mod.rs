//! The authoring commands' work, as opm does it: `init` ([`init`]), `render-template` (here),
//! and the files below.
//!
//! | file | owns |
//! |---|---|
//! | [`init`] | the `olm.package` blob `opreg init` writes |
//! | [`icon`] | an icon's media type, from its bytes |
//! | [`migrate`] | `opreg migrate`: a catalog through opm's migrations, one directory per package |
//! | [`render`] | `opreg render`: SOURCEs grouped as opm groups them, lone bundles, the image-reference template, the migrations |
//!
//! `opreg render-template`'s work: reading a template file, turning its bundle references into
//! bundles (a bundle image, pulled like any image SOURCE; a local bundle directory; or, with
//! `bundles_dir`, a tagged image reference read from the directory named by its tag), and
//! running opm's migrations on the result. The template logic itself is
//! [`crate::template`]'s, which never reads a bundle.

pub mod icon;
pub mod init;
pub mod migrate;
pub mod render;

use crate::error::{Error, Result};
use crate::image::opm::MigrateLevel;
use crate::model::{Bundle, Catalog};
use crate::template::{self, Kind};
use crate::text::go_quote;
use std::path::{Path, PathBuf};

/// What to render.
#[derive(Clone, Debug)]
pub struct TemplateOptions {
    /// The template kind; `None` takes it from the file's `schema`.
    pub kind: Option<Kind>,
    /// The template file; `-` reads standard input.
    pub file: PathBuf,
    /// Read image references REPOSITORY:TAG from the bundle directory DIR/TAG.
    pub bundles_dir: Option<PathBuf>,
    pub migrate_level: MigrateLevel,
    pub image: crate::image::ImageOptions,
}

/// The bytes of `path` (`-`: standard input), and the name errors give it.
fn read_input(path: &Path, what: &str) -> Result<(Vec<u8>, String)> {
    let stdin = path.as_os_str() == "-";
    let name = if stdin {
        "standard input".to_string()
    } else {
        path.display().to_string()
    };
    let read = if stdin {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut b).map(|_| b)
    } else {
        std::fs::read(path)
    };
    let bytes = read.map_err(|e| Error::failed(format!("{name}: cannot read the {what}: {e}")))?;
    Ok((bytes, name))
}

/// The template of `kind` written from the FBC in `file` (`-`: standard input), as text in
/// `format` ([`template::convert`]).
pub fn convert_template(
    kind: Kind,
    file: &Path,
    format: crate::catalog::fbc::RenderFormat,
) -> Result<String> {
    let (bytes, name) = read_input(file, "catalog")?;
    template::convert::convert(kind, &bytes, &name, format)
        .map_err(|e| Error::failed(format!("{name}: converting: {e}")))
}

/// Renders the template into a catalog (not validated).
pub fn render_template(o: &TemplateOptions) -> Result<Catalog> {
    let stdin = o.file.as_os_str() == "-";
    let (bytes, file) = read_input(&o.file, "template")?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::failed(format!("{file}: the template is not UTF-8 text")))?;
    let base = match o.file.parent() {
        Some(p) if !stdin => p.to_path_buf(),
        _ => PathBuf::new(),
    };
    let kind = match o.kind {
        Some(k) => k,
        None => template::detect(&text)
            .map_err(|e| Error::failed(format!("{file}: auto-detecting template type: {e}")))?,
    };
    let mut renderer = |r: &str| render_reference(r, &base, o);
    let mut cat = template::render(kind, &text, &file, &mut renderer)
        .map_err(|e| Error::failed(format!("{file}: rendering {} template: {e}", kind.name())))?;
    crate::image::opm::migrate(&mut cat, o.migrate_level);
    Ok(cat)
}

/// The bundles one reference holds, as `opreg render REFERENCE` writes them.
fn render_reference(
    r: &str,
    base: &Path,
    a: &TemplateOptions,
) -> Result<Vec<Bundle>, template::Error> {
    let named = |e: String| template::Error::from(format!("bundle {}: {e}", go_quote(r)));
    let named_error = |e: template::Error| named(e.to_string());
    if r.is_empty() {
        return Err("a bundle reference is empty".into());
    }
    let beside = base.join(r);
    if !r.is_empty() && beside.exists() {
        return read_local(&[beside], &crate::image::Resolved::default()).map_err(named_error);
    }
    if crate::image::is_local(Path::new(r)) {
        return read_local(&[PathBuf::from(r)], &crate::image::Resolved::default())
            .map_err(named_error);
    }
    if let Some(dir) = &a.bundles_dir {
        let tag = tag_of(r).ok_or_else(|| {
            named("--bundles-dir maps REPOSITORY:TAG to DIR/TAG, and this reference has no tag (it is pinned by digest or untagged); it can only be pulled".into())
        })?;
        let path = dir.join(tag);
        if !path.is_dir() {
            return Err(named(format!(
                "no bundle directory {} (from --bundles-dir)",
                path.display()
            )));
        }
        let mut bundles =
            read_local(&[path], &crate::image::Resolved::default()).map_err(named_error)?;
        bundles
            .iter_mut()
            .for_each(|b| crate::image::opm::finish_bundle_image(b, r));
        return Ok(bundles);
    }
    let resolved = crate::image::resolve(&[PathBuf::from(r)], &a.image, &Default::default())
        .map_err(|e| named(crate::text::one_line(&e)))?;
    if let Some(Some(img)) = resolved.images.first() {
        if !matches!(img.kind, crate::image::kind::ImageKind::Bundle { .. }) {
            return Err(named(format!(
                "a {} image, not a bundle image",
                img.kind.name()
            )));
        }
    }
    read_local(&resolved.paths, &resolved).map_err(named_error)
}

/// Reads local paths (bundle directories, or what an image unpacked to) into bundles.
fn read_local(
    paths: &[PathBuf],
    resolved: &crate::image::Resolved,
) -> Result<Vec<Bundle>, template::Error> {
    let mut warnings = Vec::new();
    let (cat, mut errors) = crate::source::load_sources_with(paths, &mut warnings, &mut |b, _| {
        resolved.finish_bundle(b)
    });
    resolved.locate(&mut errors);
    if let Some(e) = errors.first() {
        return Err(template::Error::from(crate::text::one_line(e)));
    }
    Ok(cat
        .packages
        .into_values()
        .flat_map(|p| p.bundles.into_values())
        .collect())
}

/// The tag of an image reference (`REPOSITORY:TAG`); `None` when it is pinned by digest or
/// has no tag.
fn tag_of(r: &str) -> Option<&str> {
    if r.contains('@') {
        return None;
    }
    let last = r.rsplit('/').next()?;
    last.split_once(':')
        .map(|(_, t)| t)
        .filter(|t| !t.is_empty())
}
