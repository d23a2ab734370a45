//! The shared corpus catalogs, made acceptable to upstream's rules where they are not.
//!
//! The community and certified catalogs were converted from source repositories, and three of
//! their package icons hold `base64data` that is not padded standard base64. Upstream decodes
//! an FBC icon into bytes and rejects the whole catalog (`illegal base64 data at input byte N`),
//! and so does opreg. Benchmarks and tests that need the catalogs as a whole valid input use
//! a copy in which exactly those icons are replaced by a small valid one; everything else is
//! rewritten unchanged, one JSON object per line.

use base64::Engine;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

/// A valid icon (an empty SVG) for the icons that do not decode.
pub const REPLACEMENT_ICON: &str = "PHN2Zy8+";

/// Writes `src` to `dst` (via a temp file and a rename) with every `olm.package` icon that is
/// not valid base64 replaced; returns the names of the packages whose icon was replaced.
pub fn repair_icons(src: &Path, dst: &Path) -> std::io::Result<Vec<String>> {
    // A name of its own per writer: concurrent callers each write a whole copy, and the
    // renames replace one identical file with another.
    let tmp = dst.with_extension(format!(
        "tmp.{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let mut w = BufWriter::new(std::fs::File::create(&tmp)?);
    let r = BufReader::with_capacity(1 << 20, std::fs::File::open(src)?);
    let mut repaired = Vec::new();
    for v in serde_json::Deserializer::from_reader(r).into_iter::<serde_json::Value>() {
        let mut v = v.map_err(std::io::Error::other)?;
        let icon = v.pointer("/icon/base64data").and_then(|d| d.as_str());
        let bad =
            icon.is_some_and(|d| base64::engine::general_purpose::STANDARD.decode(d).is_err());
        if v["schema"] == "olm.package" && bad {
            v["icon"]["base64data"] = REPLACEMENT_ICON.into();
            repaired.push(v["name"].as_str().unwrap_or("").to_string());
        }
        serde_json::to_writer(&mut w, &v)?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    drop(w);
    std::fs::rename(&tmp, dst)?;
    Ok(repaired)
}

/// `dir/<file name of src>`, repaired once ([`repair_icons`]) and reused afterwards.
pub fn repaired_copy(src: &Path, dir: &Path) -> std::io::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let dst = dir.join(src.file_name().expect("a file"));
    let fresh = |d: &Path| -> std::io::Result<bool> {
        Ok(d.is_file() && d.metadata()?.modified()? >= src.metadata()?.modified()?)
    };
    if !fresh(&dst)? {
        repair_icons(src, &dst)?;
    }
    Ok(dst)
}
