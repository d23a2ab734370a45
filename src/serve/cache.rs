//! serve's side of its SOURCE: the embedded demo in place of a missing one, and the private
//! work directory a build without `--cache-dir` goes to. The cache itself is built by
//! [`crate::cache`].

use anyhow::Context;
use std::path::{Path, PathBuf};

/// SOURCE, or `None` (the demo) when `fallback_demo` is set and SOURCE does not exist.
pub fn effective_source(source: Option<PathBuf>, fallback_demo: bool) -> Option<PathBuf> {
    match source {
        Some(src) if fallback_demo && crate::image::is_local(&src) => {
            match std::fs::symlink_metadata(&src) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    tracing::info!(
                        source = %src.display(),
                        "SOURCE does not exist; serving the embedded demo catalog (--fallback-demo)"
                    );
                    None
                }
                _ => Some(src),
            }
        }
        other => other,
    }
}

/// A private temporary directory, created the first time a path in it is asked for.
#[derive(Default)]
pub struct WorkDir(std::sync::OnceLock<tempfile::TempDir>);

impl WorkDir {
    pub fn path(&self) -> anyhow::Result<&Path> {
        if let Some(t) = self.0.get() {
            return Ok(t.path());
        }
        let t = tempfile::Builder::new()
            .prefix("opreg-serve-")
            .tempdir()
            .context("cannot create a temporary directory; give a writable --cache-dir, or a writable TMPDIR")?;
        // Two builds never run at once, so a lost race only drops an empty directory.
        Ok(self.0.get_or_init(|| t).path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_demo_only_replaces_a_missing_source() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("configs");
        assert_eq!(effective_source(Some(missing.clone()), true), None);
        assert_eq!(
            effective_source(Some(missing.clone()), false),
            Some(missing)
        );
        let present = dir.path().to_path_buf();
        assert_eq!(effective_source(Some(present.clone()), true), Some(present));
        assert_eq!(effective_source(None, true), None);
    }
}
