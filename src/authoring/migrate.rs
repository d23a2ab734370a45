//! `opreg migrate`'s work: a catalog (an FBC directory or a catalog image) read as
//! `opreg render` reads it, run through opm's migrations, and written as `opm migrate` writes
//! it: one directory per package holding `catalog.json` (or `catalog.yaml`), and a root
//! `catalog.json` for metas that name no package. OUTDIR must be missing or empty; the tree
//! is written in a temporary directory beside it and renamed into place, so a failure leaves
//! nothing behind.

use crate::catalog::fbc::{self, RenderFormat};
use crate::error::{Error, Result};
use crate::image::opm::MigrateLevel;
use crate::model::Catalog;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to migrate, and where to.
#[derive(Clone, Debug)]
pub struct MigrateOptions {
    pub source: PathBuf,
    pub out_dir: PathBuf,
    pub migrate_level: MigrateLevel,
    pub format: RenderFormat,
    pub image: crate::image::ImageOptions,
}

/// Migrates the catalog; returns the problems validation found in it, as warnings (the catalog
/// is written as read, as opm writes it).
pub fn migrate(o: &MigrateOptions) -> Result<Vec<crate::diag::Diagnostic>> {
    let out = &o.out_dir;
    match std::fs::read_dir(out).map(|mut d| d.next().is_some()) {
        Ok(true) => {
            return Err(Error::failed(format!(
                "output dir {} must be empty",
                crate::text::go_quote(&out.display().to_string())
            )))
        }
        Ok(false) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::failed(format!("{}: {e}", out.display()))),
    }
    let resolved = crate::load::resolve(
        std::slice::from_ref(&o.source),
        &o.image,
        &Default::default(),
    )?;
    let bundle = resolved.images[0]
        .as_ref()
        .is_some_and(|i| matches!(i.kind, crate::image::kind::ImageKind::Bundle { .. }))
        || crate::catalog::manifests::is_bundle_dir(&resolved.paths[0]);
    if bundle {
        return Err(Error::failed(format!(
            "{}: a bundle, not a catalog; only catalogs can be migrated",
            o.source.display()
        )));
    }
    let read = crate::load::as_read(&resolved, 0..1)?;
    let mut cat = read.catalog;
    crate::image::opm::migrate(&mut cat, o.migrate_level);
    let files = split(cat)?;
    write_tree(out, &files, o.format)?;
    Ok(read
        .problems
        .into_iter()
        .map(|mut d| {
            d.severity = crate::diag::Severity::Warning;
            d
        })
        .collect())
}

/// The catalog split as opm's `WriteFS` splits it: one catalog per package (its blob, channels,
/// bundles, deprecations and the metas that name it); `""` for metas that name no package.
fn split(cat: Catalog) -> Result<BTreeMap<String, Catalog>> {
    let mut files: BTreeMap<String, Catalog> = BTreeMap::new();
    for (name, p) in cat.packages {
        files
            .entry(name.clone())
            .or_default()
            .packages
            .insert(name, p);
    }
    for m in cat.others {
        files.entry(m.package.clone()).or_default().others.push(m);
    }
    for name in files.keys().filter(|n| !n.is_empty()) {
        let local = !name.contains(['/', '\\']) && name != "." && name != "..";
        if !local {
            return Err(Error::failed(format!(
                "invalid package name {}: must be a single local path element",
                crate::text::go_quote(name)
            )));
        }
    }
    Ok(files)
}

/// Writes each catalog under a temporary directory beside `out`, then renames it to `out`.
fn write_tree(out: &Path, files: &BTreeMap<String, Catalog>, format: RenderFormat) -> Result<()> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let failed = |e: std::io::Error, what: &Path| Error::failed(format!("{}: {e}", what.display()));
    std::fs::create_dir_all(&parent).map_err(|e| failed(e, &parent))?;
    let tmp = crate::atomic::Dir::create_in(&parent, ".opreg-migrate-")
        .map_err(|e| failed(e, &parent))?;
    let ext = match format {
        RenderFormat::Json => "json",
        RenderFormat::Yaml => "yaml",
    };
    for (name, cat) in files {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).map_err(|e| failed(e, &dir))?;
        let file = dir.join(format!("catalog.{ext}"));
        let mut bytes = Vec::new();
        fbc::render(cat, format, &mut bytes).map_err(|e| failed(e, &file))?;
        std::fs::write(&file, bytes).map_err(|e| failed(e, &file))?;
    }
    // A temporary directory is private (0700); OUTDIR is an ordinary directory.
    tmp.commit(out, Some(0o755), true)
        .map_err(|(_, e)| failed(e, out))
}
