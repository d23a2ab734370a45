//! One served version of the catalog as catalogd stores it: a JSON Lines file written once
//! when the version is built, and an index of each object's byte range by `schema`, `package`
//! and `name` for `/metas`.
//!
//! An FBC source is written as catalogd writes it ([`Lines::Fbc`]): each meta in walk order,
//! whole (fields opreg does not know included), as Go's encoder writes a decoded object
//! ([`crate::json::go_object`]), except that integers keep their value where Go's decoder
//! rounds them through a float64. Other sources, which catalogd cannot serve, are written as
//! `render -o json` orders them, one compact object per line, handed over one package at a
//! time ([`Lines::Parts`], from the built database), so that writing them never holds the
//! whole catalog in memory.
//!
//! Its gzip and zstd copies are written beside it at the same time, so a compressed answer
//! costs no compression per request. The files are served from disk, so no request holds the
//! catalog in memory; the modification time is the build time (`Last-Modified`). A version
//! owns its files and removes them when the last request reading them ends (an open file
//! stays readable after removal).

use super::encoding::{variant_path, Coding};
use super::runs::{self, Piece, Run, Section};
use crate::catalog::{fbc, Exclude};
use crate::model::Catalog;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Line numbers by each field, ascending (catalogd's index: fields indexed separately,
/// intersected at lookup). Only objects with a `schema` are indexed: no filter matches another.
#[derive(Default, Debug)]
pub struct MetaIndex {
    by_schema: HashMap<String, Vec<u32>>,
    by_package: HashMap<String, Vec<u32>>,
    by_name: HashMap<String, Vec<u32>>,
    /// Every object with a schema: the candidates when no filter is given.
    with_schema: Vec<u32>,
}

/// The `schema`, `package` and `name` of an object; fields of another JSON type than string
/// count as absent, as in catalogd's Meta.
#[derive(serde::Deserialize, Default)]
struct Keys {
    #[serde(default)]
    schema: String,
    #[serde(default)]
    package: String,
    #[serde(default)]
    name: String,
}

impl Keys {
    fn of(line: &[u8]) -> Keys {
        serde_json::from_slice(line).unwrap_or_default()
    }
}

impl MetaIndex {
    /// The lines matching every non-empty filter, ascending. With no filter, every object
    /// that has a schema.
    pub fn get(&self, schema: &str, package: &str, name: &str) -> Vec<u32> {
        let mut lists: Vec<&[u32]> = Vec::with_capacity(3);
        for (map, key) in [
            (&self.by_schema, schema),
            (&self.by_package, package),
            (&self.by_name, name),
        ] {
            if !key.is_empty() {
                match map.get(key) {
                    Some(l) => lists.push(l),
                    None => return Vec::new(),
                }
            }
        }
        lists.sort_by_key(|l| l.len());
        let Some((first, rest)) = lists.split_first() else {
            return self.with_schema.clone();
        };
        first
            .iter()
            .copied()
            .filter(|n| rest.iter().all(|l| l.binary_search(n).is_ok()))
            .collect()
    }

    fn add(&mut self, n: u32, k: &Keys) {
        if k.schema.is_empty() {
            return;
        }
        self.with_schema.push(n);
        for (map, key) in [
            (&mut self.by_schema, &k.schema),
            (&mut self.by_package, &k.package),
            (&mut self.by_name, &k.name),
        ] {
            if !key.is_empty() {
                map.entry(key.clone()).or_default().push(n);
            }
        }
    }
}

/// A version of the catalog as served over HTTP.
#[derive(Debug)]
pub struct Content {
    pub path: PathBuf,
    pub index: MetaIndex,
    /// Each line's bytes in the file, and the run it is in.
    lines: Vec<(Section, u32)>,
    /// The runs the compressed copies are made of ([`runs`]).
    runs: Vec<Run>,
    /// Build time, truncated to whole seconds (what `Last-Modified` can say).
    pub modified: SystemTime,
    pub size: u64,
    /// Sizes of the gzip and zstd copies written beside the file.
    pub gzip_size: u64,
    pub zstd_size: u64,
}

impl Content {
    /// The file holding this version in `coding`, and its size.
    pub fn file(&self, coding: Coding) -> (PathBuf, u64) {
        match coding {
            Coding::Identity => (self.path.clone(), self.size),
            Coding::Gzip => (variant_path(&self.path, coding), self.gzip_size),
            Coding::Zstd => (variant_path(&self.path, coding), self.zstd_size),
        }
    }

    /// The objects matching every non-empty filter, in file order ([`MetaIndex::get`]).
    pub fn sections(&self, schema: &str, package: &str, name: &str) -> Vec<Section> {
        let found = self.index.get(schema, package, name);
        found.iter().map(|&n| self.lines[n as usize].0).collect()
    }

    /// The length of `lines` (line numbers) as they are.
    pub fn sections_len(&self, lines: &[u32]) -> u64 {
        lines.iter().map(|&n| self.lines[n as usize].0.len).sum()
    }

    /// The answer made of `lines` (ascending) in `coding`: the file to read, the pieces of it
    /// (or made for it) in order, and the length. The bytes as they are are the lines' own;
    /// a compressed answer is cut from the compressed copy where it wants whole runs
    /// ([`runs::answer`]). Reads the file for lines of runs not wanted whole.
    pub fn answer(
        &self,
        lines: &[u32],
        coding: Coding,
    ) -> std::io::Result<(PathBuf, Vec<Piece>, u64)> {
        if coding == Coding::Identity {
            let pieces: Vec<Piece> = lines
                .iter()
                .map(|&n| Piece::File(self.lines[n as usize].0))
                .collect();
            return Ok((self.path.clone(), pieces, self.sections_len(lines)));
        }
        let (pieces, len) = runs::answer(&self.runs, &self.lines, lines, coding, &self.path)?;
        Ok((self.file(coding).0, pieces, len))
    }
}

/// A walk over a catalog's parts: each call of its argument gets a part (one package name's
/// objects without bundles, or the metas of no package) and that package's bundles, one at a
/// time ([`fbc::render_part_lines`]).
pub type Walk<'a> =
    dyn Fn(&mut dyn FnMut(Catalog, &mut fbc::MoreBundles<'_>) -> Result<()>) -> Result<()> + 'a;

/// What a version's lines are written from.
pub enum Lines<'a> {
    /// An FBC directory or file, read again meta by meta (never `exclude`'s files).
    Fbc {
        root: &'a Path,
        exclude: &'a [PathBuf],
    },
    /// Another kind of source, as a walk over its parts in render order (from the built
    /// database).
    Parts(&'a Walk<'a>),
}

impl Lines<'_> {
    fn write(&self, out: &mut dyn Write) -> Result<()> {
        match self {
            Lines::Parts(walk) => {
                walk(&mut |c, bundles| Ok(fbc::render_part_lines(&c, bundles, out)?))
            }
            Lines::Fbc { root, exclude } => {
                let mut diags = Vec::new();
                let mut failed: Option<std::io::Error> = None;
                fbc::for_each_raw_meta(root, &Exclude::new(exclude), &mut diags, &mut |m| {
                    if failed.is_none() {
                        let mut line = crate::json::go_object(&m.value);
                        line.push('\n');
                        failed = out.write_all(line.as_bytes()).err();
                    }
                });
                if let Some(e) = failed {
                    return Err(e.into());
                }
                match diags.iter().find(|d| d.is_error()) {
                    // It was read without error by the build just before: it changed since.
                    Some(d) => anyhow::bail!("{} changed since it was read: {d}", root.display()),
                    None => Ok(()),
                }
            }
        }
    }
}

impl Content {
    /// Writes `lines` to `path` (temp file, synced, renamed) and indexes it. `not_before`
    /// keeps `Last-Modified` moving forward across versions built within one second.
    pub fn write(lines: Lines<'_>, path: &Path, not_before: Option<SystemTime>) -> Result<Content> {
        let dir = crate::atomic::parent(path);
        let opts = crate::atomic::Options::default().named(".opreg-jsonl-", "");
        let mut tmp = crate::atomic::File::create(path, &opts)
            .with_context(|| format!("cannot create a file in {}", dir.display()))?;
        {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, tmp.file_mut());
            lines
                .write(&mut out)
                .and_then(|_| Ok(out.flush()?))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        let now = truncate(SystemTime::now());
        let modified = match not_before {
            Some(prev) if prev >= now => prev + Duration::from_secs(1),
            _ => now,
        };
        tmp.file().set_modified(modified)?;
        tmp.commit()
            .with_context(|| format!("cannot write {}", path.display()))?;
        Self::open(path)
    }

    /// Indexes an existing JSONL file (one object per line) and writes its compressed copies.
    pub fn open(path: &Path) -> Result<Content> {
        let f =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let meta = f.metadata()?;
        let mut r = std::io::BufReader::with_capacity(1 << 16, f);
        let mut index = MetaIndex::default();
        let mut lines = Vec::new();
        // Runs: lines with the same (schema, package), up to runs::RUN_BYTES.
        let mut bounds: Vec<(std::ops::Range<u32>, Section)> = Vec::new();
        let mut run_key: Option<(String, String)> = None;
        let (mut offset, mut line) = (0u64, Vec::new());
        loop {
            line.clear();
            let n = r.read_until(b'\n', &mut line)?;
            if n == 0 {
                break;
            }
            let number = u32::try_from(lines.len())
                .with_context(|| format!("{}: too many lines", path.display()))?;
            let section = Section {
                offset,
                len: n as u64,
            };
            let keys = Keys::of(&line);
            index.add(number, &keys);
            let key = (!keys.schema.is_empty()).then_some((keys.schema, keys.package));
            match bounds.last_mut() {
                Some((lines, s)) if key == run_key && s.len + section.len <= runs::RUN_BYTES => {
                    lines.end += 1;
                    s.len += section.len;
                }
                _ => bounds.push((number..number + 1, section)),
            }
            run_key = key;
            lines.push((section, bounds.len() as u32 - 1));
            offset += n as u64;
        }
        // The reading buffers (the longest line's size) go before the copies are made, and
        // so do the freed memory and the pages of code the build ran before (compressing
        // needs little of it), as an idle server gives them back ([`crate::memory::give_back`]):
        // the start-up peak of the community catalog's built database with the HTTP port fell
        // from 27.6-28.6 MB to 22-24 MB with this, to 20.4-20.5 MB with the same before the
        // lines are written (serve's `with_content`).
        drop((r, line));
        crate::memory::give_back();
        let (runs, gzip_size, zstd_size) = runs::write_copies(
            path,
            bounds,
            &variant_path(path, Coding::Gzip),
            &variant_path(path, Coding::Zstd),
        )?;
        Ok(Content {
            path: path.to_path_buf(),
            index,
            lines,
            runs,
            modified: truncate(meta.modified()?),
            size: offset,
            gzip_size,
            zstd_size,
        })
    }
}

impl Drop for Content {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        for c in [Coding::Gzip, Coding::Zstd] {
            let _ = std::fs::remove_file(variant_path(&self.path, c));
        }
    }
}

fn truncate(t: SystemTime) -> SystemTime {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_intersects_fields_in_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(
            &p,
            concat!(
                "{\"schema\":\"olm.package\",\"name\":\"a\"}\n",
                "{\"schema\":\"olm.channel\",\"name\":\"s\",\"package\":\"a\"}\n",
                "{\"schema\":\"olm.bundle\",\"name\":\"a.v1\",\"package\":\"a\"}\n",
            ),
        )
        .unwrap();
        let c = Content::open(&p).unwrap();
        let all = c.index.get("", "", "");
        assert_eq!(all.len(), 3);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        // package=a does not find a's own olm.package (it has no package field).
        assert_eq!(c.index.get("", "a", "").len(), 2);
        assert_eq!(c.index.get("olm.package", "", "a").len(), 1);
        assert!(c.index.get("olm.package", "", "b").is_empty());
        assert_eq!(c.size, std::fs::metadata(&p).unwrap().len());
    }
}

#[cfg(test)]
mod answer_tests {
    use super::*;
    use crate::http::runs::RUN_BYTES;
    use std::io::Read;

    fn gunzip(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        // One member: the single-member decoder stops after it.
        flate2::read::GzDecoder::new(b)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    fn unzstd(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 << 22);
        ruzstd::decoding::FrameDecoder::new()
            .decode_all_to_vec(b, &mut out)
            .unwrap();
        out
    }

    /// The bytes of an answer's pieces.
    fn bytes(path: &Path, pieces: &[Piece]) -> Vec<u8> {
        let file = std::fs::read(path).unwrap();
        let mut out = Vec::new();
        for p in pieces {
            match p {
                Piece::File(s) => {
                    out.extend_from_slice(&file[s.offset as usize..(s.offset + s.len) as usize])
                }
                Piece::Bytes(b) => out.extend_from_slice(b),
            }
        }
        out
    }

    /// Three packages; `big`'s bundles are more than one run long, and one line has no schema.
    fn catalog(dir: &Path) -> Content {
        let mut text = String::new();
        for p in ["a", "big", "c"] {
            text += &format!("{{\"schema\":\"olm.package\",\"name\":\"{p}\"}}\n");
            text += &format!("{{\"schema\":\"olm.channel\",\"name\":\"s\",\"package\":\"{p}\"}}\n");
            let (n, pad) = if p == "big" { (40, 60_000) } else { (3, 10) };
            for i in 0..n {
                text += &format!(
                    "{{\"schema\":\"olm.bundle\",\"name\":\"{p}.v{i}\",\"package\":\"{p}\",\"x\":\"{}\"}}\n",
                    format!("{i}-").repeat(pad / 2)
                );
            }
        }
        text += "{\"no\":\"schema\"}\n";
        let path = dir.join("c.jsonl");
        std::fs::write(&path, &text).unwrap();
        Content::open(&path).unwrap()
    }

    /// A line longer than a run, of random base64 that barely compresses, between two small
    /// lines of the same package: each is a run of its own, and every answer still decodes.
    #[test]
    fn incompressible_lines_longer_than_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let noise: String = (0..(RUN_BYTES as usize + 70_000))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                        [(x % 64) as usize],
                )
            })
            .collect();
        let text = format!(
            "{{\"schema\":\"olm.bundle\",\"name\":\"p.v1\",\"package\":\"p\"}}\n\
             {{\"schema\":\"olm.bundle\",\"name\":\"p.v2\",\"package\":\"p\",\"icon\":\"{noise}\"}}\n\
             {{\"schema\":\"olm.bundle\",\"name\":\"p.v3\",\"package\":\"p\"}}\n"
        );
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, &text).unwrap();
        let c = Content::open(&path).unwrap();
        assert_eq!(
            gunzip(&std::fs::read(c.file(Coding::Gzip).0).unwrap()),
            text.as_bytes()
        );
        assert_eq!(
            unzstd(&std::fs::read(c.file(Coding::Zstd).0).unwrap()),
            text.as_bytes()
        );
        for (package, name) in [("p", ""), ("", "p.v2"), ("", "p.v3")] {
            let lines = c.index.get("", package, name);
            let (path, pieces, _) = c.answer(&lines, Coding::Identity).unwrap();
            let plain = bytes(&path, &pieces);
            let (path, pieces, _) = c.answer(&lines, Coding::Gzip).unwrap();
            assert_eq!(gunzip(&bytes(&path, &pieces)), plain, "{package}/{name}");
            let (path, pieces, _) = c.answer(&lines, Coding::Zstd).unwrap();
            assert_eq!(unzstd(&bytes(&path, &pieces)), plain, "{package}/{name}");
        }
    }

    #[test]
    fn the_copies_decode_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = catalog(dir.path());
        let plain = std::fs::read(&c.path).unwrap();
        let gz = std::fs::read(c.file(Coding::Gzip).0).unwrap();
        assert_eq!(gz.len() as u64, c.gzip_size);
        assert_eq!(gunzip(&gz), plain);
        let zst = std::fs::read(c.file(Coding::Zstd).0).unwrap();
        assert_eq!(zst.len() as u64, c.zstd_size);
        assert_eq!(unzstd(&zst), plain);
        // `big` is split into runs no longer than RUN_BYTES.
        assert!(c.size > 2 * RUN_BYTES);
    }

    #[test]
    fn every_answer_decodes_to_its_lines_and_whole_runs_are_cut_from_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let c = catalog(dir.path());
        // (query, whether part of a run is wanted, which is compressed for the answer)
        let queries = [
            (("", "a", ""), false),
            (("", "big", ""), false),
            (("olm.bundle", "big", ""), false),
            (("olm.channel", "", ""), false),
            (("olm.package", "", ""), false),
            (("olm.bundle", "", ""), false),
            (("", "", "s"), false),
            (("", "", ""), false),
            (("", "", "big.v7"), true),
            (("olm.bundle", "c", "c.v1"), true),
        ];
        for ((schema, package, name), partial) in queries {
            let lines = c.index.get(schema, package, name);
            assert!(!lines.is_empty(), "{schema}/{package}/{name}");
            let (path, pieces, len) = c.answer(&lines, Coding::Identity).unwrap();
            let plain = bytes(&path, &pieces);
            assert_eq!(plain.len() as u64, len);
            for coding in [Coding::Gzip, Coding::Zstd] {
                let (path, pieces, len) = c.answer(&lines, coding).unwrap();
                let body = bytes(&path, &pieces);
                assert_eq!(body.len() as u64, len);
                let decoded = match coding {
                    Coding::Gzip => gunzip(&body),
                    _ => unzstd(&body),
                };
                assert_eq!(decoded, plain, "{coding:?} {schema}/{package}/{name}");
                // Whole runs: nothing compressed for the answer (gzip's header and trailer
                // aside).
                let made = pieces
                    .iter()
                    .any(|p| matches!(p, Piece::Bytes(b) if b.len() > 10));
                assert_eq!(made, partial, "{coding:?} {schema}/{package}/{name}");
            }
        }
    }
}
