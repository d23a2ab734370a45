//! The registry side of the side-by-side comparison ([`crate::baseline`]): `opreg image build`
//! of the catalog into an OCI layout (onto the one-layer base of [`crate::image_build`]), and
//! `opreg mirror` of the catalog image from one `docker-registry` on loopback to another (a new
//! repository and workspace each time, so every blob is sent), each build in turn, the order
//! flipped every round. A mirror takes a tenth of a second or so, and varies by a fifth from one
//! run to the next: it is measured [`MIRRORS_PER_ROUND`] times per round.

use crate::procs::{run_child, ChildStats};
use std::path::Path;
use std::process::Command;

/// Mirrors per build and round.
const MIRRORS_PER_ROUND: usize = 8;

/// Samples of the two builds (index 0 the baseline): `rounds` builds and
/// `rounds * MIRRORS_PER_ROUND` mirrors each.
#[derive(Default)]
pub struct Samples {
    pub build: [Vec<ChildStats>; 2],
    pub mirror: [Vec<ChildStats>; 2],
}

pub fn measure(
    bins: [&Path; 2],
    catalog: &Path,
    work: &Path,
    rounds: usize,
) -> Result<Samples, String> {
    let dir = work.join("baseline-images");
    let _ = std::fs::remove_dir_all(&dir);
    let e = |x: std::io::Error| x.to_string();
    std::fs::create_dir_all(&dir).map_err(e)?;
    // `image build` takes a directory, as it is usually given.
    let catalog_dir = dir.join("catalog");
    std::fs::create_dir_all(&catalog_dir).map_err(e)?;
    let name = catalog.file_name().ok_or("the catalog has no file name")?;
    std::fs::copy(catalog, catalog_dir.join(name)).map_err(e)?;
    let base = crate::image_build::base_layout(&dir.join("base"))?;
    let source = crate::image::Pushed::new(catalog, &dir)?;
    let dest = crate::image::start_registry(&dir.join("dest"))?;
    let config = dir.join("imageset.yaml");
    std::fs::write(
        &config,
        format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n  - name: {}\n",
            source.reference
        ),
    )
    .map_err(e)?;
    let errf = dir.join("child.stderr");
    let mut s = Samples::default();
    for round in 0..rounds {
        let order = crate::baseline::order(round);
        for i in order {
            let bin = bins[i];
            let out = dir.join(format!("built-{i}"));
            let _ = std::fs::remove_dir_all(&out);
            let mut cmd = Command::new(bin);
            cmd.args(["image", "build"])
                .arg(&catalog_dir)
                .arg("-t")
                .arg(format!("oci:{}", out.display()))
                .args(["--base", &base, "-q"]);
            s.build[i].push(run_child(&mut cmd, &errf).map_err(|x| with_stderr(x, &errf))?);
            let _ = std::fs::remove_dir_all(&out);
        }
        for m in 0..MIRRORS_PER_ROUND {
            for i in order {
                let workspace = dir.join(format!("workspace-{round}-{m}-{i}"));
                let mut cmd = Command::new(bins[i]);
                cmd.args(["mirror", "-c"])
                    .arg(&config)
                    .arg(format!("docker://127.0.0.1:{}/r{round}m{m}b{i}", dest.port))
                    .arg("--workspace")
                    .arg(&workspace)
                    .args(["--use-http", "-q"])
                    .env_remove("OPREG_SIGNATURE_POLICY");
                s.mirror[i].push(run_child(&mut cmd, &errf).map_err(|x| with_stderr(x, &errf))?);
                let _ = std::fs::remove_dir_all(&workspace);
            }
        }
    }
    drop(source);
    Ok(s)
}

fn with_stderr(e: String, errf: &Path) -> String {
    let text = std::fs::read_to_string(errf).unwrap_or_default();
    format!("{e}: {}", text.trim())
}
