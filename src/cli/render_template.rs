//! `opreg render-template basic|semver FILE`: expand a catalog template into FBC, as
//! `opm alpha render-template` does. The template logic is [`crate::template`]'s; this file
//! only turns bundle references into bundles (a bundle image, pulled like any image SOURCE; a
//! local bundle directory; or, with `--bundles-dir`, a tagged image reference read from the
//! directory named by its tag) and writes the result.

use crate::catalog::fbc::{self, RenderFormat};
use crate::image::opm::MigrateLevel;
use crate::model::Bundle;
use crate::template::{self, Kind};
use crate::text::go_quote;
use std::io::Write;
use std::path::{Path, PathBuf};

// Help text: the doc comment of `Command::RenderTemplate` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit codes: 0 rendered; 1 the template or a bundle could not be read or rendered; 2 usage error (for example an unknown template kind)."
)]
pub struct Args {
    /// The template kind.
    #[arg(value_enum)]
    pub kind: Kind,
    /// The template file (YAML or JSON); `-` or none reads standard input, as opm does.
    #[arg(value_name = "FILE", default_value = "-")]
    pub file: PathBuf,
    #[arg(short = 'o', long, value_enum, default_value_t = RenderFormat::Json)]
    pub output_format: RenderFormat,
    /// Read image references REPOSITORY:TAG from the bundle directory DIR/TAG instead of pulling them.
    #[arg(long, value_name = "DIR")]
    pub bundles_dir: Option<PathBuf>,
    /// The last of opm's migrations to run on the rendered bundles.
    #[arg(long, value_enum, default_value_t = MigrateLevel::None)]
    pub migrate_level: MigrateLevel,
    #[command(flatten)]
    pub image: crate::image::ImageArgs,
}

pub fn run(a: Args) -> i32 {
    let stdin = a.file.as_os_str() == "-";
    let file = if stdin {
        "standard input".to_string()
    } else {
        a.file.display().to_string()
    };
    let read = if stdin {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut b).map(|_| b)
    } else {
        std::fs::read(&a.file)
    };
    let text = match read {
        Ok(b) => match String::from_utf8(b) {
            Ok(t) => t,
            Err(_) => {
                super::output::error(format_args!("{file}: the template is not UTF-8 text"));
                return super::EXIT_FAILURE;
            }
        },
        Err(e) => {
            super::output::error(format_args!("{file}: cannot read the template: {e}"));
            return super::EXIT_FAILURE;
        }
    };
    let base = match a.file.parent() {
        Some(p) if !stdin => p.to_path_buf(),
        _ => PathBuf::new(),
    };
    let mut renderer = |r: &str| render_reference(r, &base, &a);
    let mut cat = match template::render(a.kind, &text, &file, &mut renderer) {
        Ok(c) => c,
        Err(e) => {
            super::output::error(format_args!(
                "{file}: rendering {} template: {e}",
                kind_name(a.kind)
            ));
            return super::EXIT_FAILURE;
        }
    };
    crate::image::opm::migrate(&mut cat, a.migrate_level);
    let written = super::output::write_out(|out| {
        let mut out = std::io::BufWriter::new(out);
        fbc::render(&cat, a.output_format, &mut out)?;
        out.flush()
    });
    match written {
        Ok(()) => super::EXIT_OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => super::EXIT_OK,
        Err(e) => {
            super::output::error(format_args!("writing output: {e}"));
            super::EXIT_FAILURE
        }
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Basic => "basic",
        Kind::Semver => "semver",
    }
}

/// The bundles one reference holds, as `opreg render REFERENCE` writes them.
fn render_reference(r: &str, base: &Path, a: &Args) -> Result<Vec<Bundle>, String> {
    let named = |e: String| format!("bundle {}: {e}", go_quote(r));
    if r.is_empty() {
        return Err("a bundle reference is empty".into());
    }
    let beside = base.join(r);
    if !r.is_empty() && beside.exists() {
        return read_local(&[beside], &crate::image::Resolved::default()).map_err(named);
    }
    if crate::image::is_local(Path::new(r)) {
        return read_local(&[PathBuf::from(r)], &crate::image::Resolved::default()).map_err(named);
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
        let mut bundles = read_local(&[path], &crate::image::Resolved::default()).map_err(named)?;
        bundles
            .iter_mut()
            .for_each(|b| crate::image::opm::finish_bundle_image(b, r));
        return Ok(bundles);
    }
    let resolved = crate::image::resolve(&[PathBuf::from(r)], &a.image, false)
        .map_err(|e| named(crate::image::one_line(&e)))?;
    if let Some(Some(img)) = resolved.images.first() {
        if !matches!(img.kind, crate::image::kind::ImageKind::Bundle { .. }) {
            return Err(named(format!(
                "a {} image, not a bundle image",
                img.kind.name()
            )));
        }
    }
    read_local(&resolved.paths, &resolved).map_err(named)
}

/// Reads local paths (bundle directories, or what an image unpacked to) into bundles.
fn read_local(paths: &[PathBuf], resolved: &crate::image::Resolved) -> Result<Vec<Bundle>, String> {
    let mut warnings = Vec::new();
    let (cat, mut errors) = crate::source::load_sources_with(paths, &mut warnings, &mut |b, _| {
        resolved.finish_bundle(b)
    });
    resolved.locate(&mut errors);
    if let Some(e) = errors.first() {
        return Err(e.to_string().replace('\n', "; "));
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
