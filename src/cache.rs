//! Building the cache: a SOURCE turned into an open store. A built database is opened as it
//! is; anything else is built through the one build path ([`crate::ingest::build`]) into the
//! cache directory, or reused from there while the source digest matches (opm's `--cache-dir`,
//! `--cache-only` and `--cache-enforce-integrity`). `serve` calls it at start-up and on each
//! reload; `imagebuild` calls it to pre-build an image's cache.

use crate::error::{Error, Result};
use crate::http::content::{Content, Lines};
use crate::source::SourceKind;
use crate::store::Store;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

/// The database's file name in a cache directory.
pub const CACHE_DB: &str = "opreg-catalog.db";

/// What [`prepare`] needs besides the source.
pub struct Prepare<'a> {
    /// Where the database is built or looked for.
    pub cache_dir: &'a Path,
    /// Refuse to build: the cache must match the source.
    pub enforce: bool,
    pub image: &'a crate::image::ImageOptions,
    /// With `--http-port`: the JSONL file to write for this version, and the previous version's
    /// modification time (so `Last-Modified` moves forward).
    pub render: Option<(&'a Path, Option<SystemTime>)>,
    pub allow_empty: bool,
    /// Raised to stop a build under way (a stop signal).
    pub cancel: &'a AtomicBool,
}

/// What to run when an enforced cache does not match its source.
fn rebuild_hint(source: Option<&Path>, cache_dir: &Path) -> String {
    let source = source.map_or(String::new(), |s| format!("{} ", s.display()));
    format!(
        "rebuild it with `opreg serve {source}--cache-dir {} --cache-only` (or serve without --cache-enforce-integrity to rebuild it at start-up)",
        cache_dir.display()
    )
}

/// A built store, with its catalogd content when asked for.
pub struct Prepared {
    pub store: Store,
    pub content: Option<Content>,
}

/// Opens SOURCE (or the demo, when `None`) as a store, building or reusing a cache as asked.
pub fn prepare(source: Option<&Path>, p: &Prepare<'_>) -> Result<Prepared> {
    let given = source;
    // An image SOURCE is pulled here, while health still says NOT_SERVING.
    let resolved = match source {
        Some(s) => crate::load::resolve(&[s.to_path_buf()], p.image, &Default::default())?,
        None => crate::image::Resolved::default(),
    };
    let source = resolved.paths.first().map(PathBuf::as_path);
    let mut kind = None;
    if let Some(src) = source {
        let k =
            crate::source::detect(src).with_context(|| format!("cannot read {}", src.display()))?;
        kind = Some(k);
        if k == SourceKind::OpregDb {
            let store = Store::open_unverified(src)?;
            // A database inside an image is served from the unpacked copy, kept until exit.
            std::mem::forget(resolved);
            return with_content(store, p, None);
        }
    }
    if p.cache_dir.exists() && !p.cache_dir.is_dir() {
        return Err(Error::failed(format!(
            "--cache-dir {} is not a directory",
            p.cache_dir.display()
        )));
    }
    std::fs::create_dir_all(p.cache_dir)
        .with_context(|| format!("cannot create cache dir {}", p.cache_dir.display()))?;
    let db = p.cache_dir.join(CACHE_DB);
    // catalogd reads only FBC: an FBC source is served to it as given.
    let fbc = match source {
        Some(src) if kind == Some(SourceKind::Fbc) => Some(Fbc {
            root: src,
            exclude: vec![db.clone()],
        }),
        _ => None,
    };
    let sources: Vec<PathBuf> = source.map(|s| vec![s.to_path_buf()]).unwrap_or_default();
    let digest = if sources.is_empty() {
        crate::demo::digest()
    } else {
        crate::source::digest(&sources, std::slice::from_ref(&db), p.cancel).map_err(|e| match e
            .kind()
        {
            std::io::ErrorKind::Interrupted => Error::Interrupted,
            _ => Error::failed(format!("cannot read the source: {e}")),
        })?
    };
    if db.exists() {
        match Store::open_unverified(&db).and_then(|s| Ok((s.info("source_digest")?, s))) {
            Ok((Some(d), s)) if d == digest => {
                tracing::info!(cache = %db.display(), "cache matches the source; reusing it");
                return with_content(s, p, fbc.as_ref());
            }
            Ok((d, _)) if p.enforce => {
                return Err(Error::failed(format!(
                    "integrity check failed: the cache in --cache-dir {} reports digest {:?}, but the source's digest is {digest:?}; {}",
                    p.cache_dir.display(),
                    d.unwrap_or_default(),
                    rebuild_hint(given, p.cache_dir),
                )))
            }
            Err(e) if p.enforce => {
                return Err(Error::failed(format!(
                    "integrity check failed: cannot read the cache in --cache-dir {}: {e:#}; {}",
                    p.cache_dir.display(),
                    rebuild_hint(given, p.cache_dir),
                )))
            }
            _ => tracing::info!("cache is stale; rebuilding"),
        }
    } else if p.enforce {
        return Err(Error::failed(format!(
            "integrity check failed: no cache in --cache-dir {}; {}",
            p.cache_dir.display(),
            rebuild_hint(given, p.cache_dir),
        )));
    }
    if sources.is_empty() {
        let cat = crate::demo::catalog()
            .map_err(|d| Error::failed(format!("demo catalog is invalid: {d}")))?;
        crate::store::Builder::create(&db)?.finish(&cat, &digest, &mut |_, _| {})?;
    } else {
        let opts = crate::ingest::BuildOptions {
            progress: Default::default(),
            allow_empty: p.allow_empty,
            digest: Some(digest),
        };
        let built = crate::ingest::build(&resolved, &db, &opts, p.cancel)?;
        for w in &built.warnings {
            tracing::warn!("{w}");
        }
    }
    make_world_readable(&db);
    with_content(Store::open_unverified(&db)?, p, fbc.as_ref())
}

/// An FBC source, and the files in it that are not the catalog's.
struct Fbc<'a> {
    root: &'a Path,
    exclude: Vec<PathBuf>,
}

/// With `--http-port`, the JSONL catalogd serves is written once per built version: from an
/// FBC source, each meta as given; from any other, the catalog read back from the database
/// one package at a time.
fn with_content(store: Store, p: &Prepare<'_>, fbc: Option<&Fbc<'_>>) -> Result<Prepared> {
    let Some((path, prev)) = p.render else {
        return Ok(Prepared {
            store,
            content: None,
        });
    };
    // The files are written with as little resident as possible: what start-up ran and freed
    // goes back first, as an idle server gives it back (the pages of code stay in the page
    // cache). Its peak is then the largest package's rendering, or making the compressed
    // copies (`Content::open`), not their sum with everything start-up touched.
    crate::memory::give_back();
    let content = match fbc {
        Some(f) => {
            let mut exclude = f.exclude.clone();
            exclude.push(path.to_path_buf());
            let lines = Lines::Fbc {
                root: f.root,
                exclude: &exclude,
            };
            Content::write(lines, path, prev)?
        }
        None => {
            // What one package's rendering freed (a bundle of a few MB is a few copies of
            // it: the row, the decoded value, the line) goes back before the next one, so
            // that the peak is the largest package's, not the sum of what the allocator
            // kept from earlier ones (the community catalog's built database, by hand: a
            // peak of 20-22 MB while its lines are written, against 23-25 MB).
            let walk = |f: &mut crate::store::PartFn<'_>| {
                store.for_each_package(&mut |part, bundles| {
                    let r = f(part, bundles);
                    crate::memory::collect_this_thread();
                    r
                })
            };
            Content::write(Lines::Parts(&walk), path, prev)?
        }
    };
    Ok(Prepared {
        store,
        content: Some(content),
    })
}

/// A cache built at image build time (by USER 1001, or root) is read at run time by another,
/// possibly arbitrary, UID: whatever the umask of the build, open the cache up to 0644 (opm
/// writes its cache with umask 000 for the same reason).
fn make_world_readable(db: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Err(e) = std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o644)) {
            tracing::warn!(path = %db.display(), error = %e, "could not make the cache readable by other users");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn cache_is_readable_by_other_users() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cancel = AtomicBool::new(false);
        let p = Prepare {
            cache_dir: dir.path(),
            enforce: false,
            image: &Default::default(),
            render: None,
            allow_empty: false,
            cancel: &cancel,
        };
        prepare(None, &p).unwrap();
        let mode = std::fs::metadata(dir.path().join(CACHE_DB))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
