//! A served version's gzip and zstd copies, built of runs compressed independently, so that
//! an answer made of whole runs is cut from the copies without compressing anything.
//!
//! A run is a stretch of consecutive lines with the same `schema` and `package` (at most
//! [`RUN_BYTES`] long unless one line is longer), so a `/metas` answer by schema, by package or
//! by both is whole runs. Each run is compressed on its own:
//!
//! * gzip: a raw deflate stream ended by a sync flush (byte-aligned, no final block, no
//!   reference to earlier bytes). The copy is one gzip member: a header, every run's deflate,
//!   an empty final block, the CRC-32 and length of the whole. An answer is the same header, the
//!   runs it needs, the final block, and a CRC-32 combined from the runs' CRCs (as pigz joins
//!   the blocks it compresses in parallel).
//! * zstd: a frame per run. The copy is the frames one after another, and so is an answer
//!   (RFC 8878: a stream of frames decodes to their contents joined).
//!
//! Lines an answer wants from a run it does not want whole (a filter by `name`) are compressed
//! when it is asked, the same way.

use super::encoding::Coding;
use anyhow::{Context, Result};
use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress};
use std::io::Write;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A run stops growing at this size (at a line's end), which bounds the memory a build needs.
pub const RUN_BYTES: u64 = 256 << 10;

/// gzhttp's default level (klauspost's `gzip.DefaultCompression`, which is 5).
const GZIP_LEVEL: u32 = 5;

/// The gzip header written before the runs: no name, no time, OS unknown (as Go writes one).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
/// An empty final deflate block (fixed Huffman codes, end of block at once).
const FINAL_BLOCK: [u8; 2] = [0x03, 0x00];

/// A byte range of a file: an object's line (newline included), a run, a run's compressed form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Section {
    pub offset: u64,
    pub len: u64,
}

/// One run: its lines, its bytes in the file, and where its compressed forms are in the copies.
#[derive(Clone, Debug)]
pub struct Run {
    pub lines: Range<u32>,
    pub raw: Section,
    /// CRC-32 of `raw`'s bytes.
    pub crc: u32,
    pub gzip: Section,
    pub zstd: Section,
}

/// A part of an answer: bytes of the file being served, or bytes made for this answer.
#[derive(Clone, Debug)]
pub enum Piece {
    File(Section),
    Bytes(Bytes),
}

/// Writes `file`'s gzip and zstd copies (`gz` and `zst`) run by run, for runs covering the
/// file's lines in order (`bounds`: each run's lines and bytes). Returns the runs and the sizes
/// of the two copies. Each run is read and compressed on its own; the copies are never whole in
/// memory.
pub fn write_copies(
    file: &Path,
    bounds: Vec<(Range<u32>, Section)>,
    gz: &Path,
    zst: &Path,
) -> Result<(Vec<Run>, u64, u64)> {
    let src =
        std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let mut gz_out = Output::create(gz)?;
    let mut zst_out = Output::create(zst)?;
    gz_out.put(&GZIP_HEADER)?;
    let mut enc = Encoders::new();
    let mut whole = crc32fast::Hasher::new();
    let (mut raw, mut runs) = (Vec::new(), Vec::with_capacity(bounds.len()));
    for (lines, section) in bounds {
        raw.resize(section.len as usize, 0);
        src.read_exact_at(&mut raw, section.offset)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let crc = crc32fast::hash(&raw);
        whole.combine(&crc_of(crc, section.len));
        let gzip = gz_out.put(enc.run(Coding::Gzip, &mut raw))?;
        let zstd = zst_out.put(enc.run(Coding::Zstd, &mut raw))?;
        runs.push(Run {
            lines,
            raw: section,
            crc,
            gzip,
            zstd,
        });
        // A line longer than a run left the buffers its size; they go with it.
        if raw.capacity() > RUN_BYTES as usize {
            raw = Vec::new();
            enc.out = Vec::new();
        }
    }
    gz_out.put(&gzip_trailer(whole))?;
    Ok((runs, gz_out.finish()?, zst_out.finish()?))
}

/// The pieces of the answer made of `lines` (ascending line numbers) in `coding` (not the
/// identity), and its length; `table` holds each line's bytes in `file` and its run. Whole
/// runs are pieces of the coding's copy; the other lines are read from `file` and compressed
/// here.
pub fn answer(
    runs: &[Run],
    table: &[(Section, u32)],
    lines: &[u32],
    coding: Coding,
    file: &Path,
) -> std::io::Result<(Vec<Piece>, u64)> {
    let mut pieces = Vec::new();
    let mut crc = crc32fast::Hasher::new();
    if coding == Coding::Gzip {
        pieces.push(Piece::Bytes(Bytes::from_static(&GZIP_HEADER)));
    }
    let mut src: Option<std::fs::File> = None;
    let mut enc: Option<Encoders> = None;
    let mut i = 0;
    while i < lines.len() {
        let run = &runs[table[lines[i] as usize].1 as usize];
        let mut j = i;
        while j < lines.len() && lines[j] < run.lines.end {
            j += 1;
        }
        if (j - i) as u32 == run.lines.end - run.lines.start {
            crc.combine(&crc_of(run.crc, run.raw.len));
            pieces.push(Piece::File(match coding {
                Coding::Zstd => run.zstd,
                _ => run.gzip,
            }));
        } else {
            // Part of a run: its wanted lines, stretch by stretch of adjacent lines.
            let file = match &src {
                Some(f) => f,
                None => src.insert(std::fs::File::open(file)?),
            };
            let mut k = i;
            while k < j {
                let start = table[lines[k] as usize].0;
                let mut len = start.len;
                let mut m = k + 1;
                while m < j && lines[m] == lines[m - 1] + 1 {
                    len += table[lines[m] as usize].0.len;
                    m += 1;
                }
                let mut raw = vec![0u8; len as usize];
                file.read_exact_at(&mut raw, start.offset)?;
                crc.update(&raw);
                let made = enc.get_or_insert_with(Encoders::new).run(coding, &mut raw);
                pieces.push(Piece::Bytes(Bytes::copy_from_slice(made)));
                k = m;
            }
        }
        i = j;
    }
    if coding == Coding::Gzip {
        pieces.push(Piece::Bytes(Bytes::from(gzip_trailer(crc).to_vec())));
    }
    let len = pieces
        .iter()
        .map(|p| match p {
            Piece::File(s) => s.len,
            Piece::Bytes(b) => b.len() as u64,
        })
        .sum();
    Ok((pieces, len))
}

/// A hasher standing for bytes whose CRC-32 is `crc` (for combining).
fn crc_of(crc: u32, len: u64) -> crc32fast::Hasher {
    crc32fast::Hasher::new_with_initial_len(crc, len)
}

/// The final block, then the CRC-32 and the length (mod 2^32) of everything, little-endian.
fn gzip_trailer(whole: crc32fast::Hasher) -> [u8; 10] {
    let len = whole.total_len() as u32;
    let crc = whole.finalize();
    let mut t = [0u8; 10];
    t[..2].copy_from_slice(&FINAL_BLOCK);
    t[2..6].copy_from_slice(&crc.to_le_bytes());
    t[6..].copy_from_slice(&len.to_le_bytes());
    t
}

/// The two encoders and their output buffer, kept across runs (allocated once).
struct Encoders {
    out: Vec<u8>,
    deflate: Compress,
    zstd: ruzstd::encoding::FrameCompressor<
        std::io::Cursor<Vec<u8>>,
        Vec<u8>,
        ruzstd::encoding::MatchGeneratorDriver,
    >,
}

impl Encoders {
    fn new() -> Encoders {
        Encoders {
            out: Vec::new(),
            deflate: Compress::new(Compression::new(GZIP_LEVEL), false),
            zstd: ruzstd::encoding::FrameCompressor::new(
                ruzstd::encoding::CompressionLevel::Fastest,
            ),
        }
    }

    /// `raw` compressed as a run of `coding` (gzip or zstd), valid until the next call; `raw`
    /// is left as it was.
    fn run(&mut self, coding: Coding, raw: &mut Vec<u8>) -> &[u8] {
        self.out.clear();
        match coding {
            Coding::Zstd => {
                // One frame. Reading a Cursor and writing a Vec cannot fail.
                self.zstd
                    .set_source(std::io::Cursor::new(std::mem::take(raw)));
                self.zstd.set_drain(std::mem::take(&mut self.out));
                self.zstd.compress();
                *raw = self
                    .zstd
                    .take_source()
                    .map(|c| c.into_inner())
                    .unwrap_or_default();
                self.out = self.zstd.take_drain().unwrap_or_default();
            }
            _ => deflate_run(&mut self.deflate, raw, &mut self.out),
        }
        &self.out
    }
}

/// `raw` as raw deflate blocks that end byte-aligned with a sync flush and refer to nothing
/// before them, so that they can follow any other run's in a stream.
fn deflate_run(c: &mut Compress, raw: &[u8], out: &mut Vec<u8>) {
    c.reset();
    // Room for the worst case (stored blocks), so that each call below can finish.
    out.reserve(raw.len() + raw.len() / 1000 + 1024);
    let room = |out: &mut Vec<u8>| {
        if out.capacity() - out.len() < 1024 {
            out.reserve(out.capacity().max(4096));
        }
    };
    // Compressing into a Vec with spare room cannot fail: the results are not errors.
    let mut input = raw;
    while !input.is_empty() {
        room(out);
        let before = c.total_in();
        let _ = c.compress_vec(input, out, FlushCompress::None);
        input = &input[(c.total_in() - before) as usize..];
    }
    room(out);
    let _ = c.compress_vec(&[], out, FlushCompress::Sync);
    // Whatever the flush could not write yet.
    loop {
        room(out);
        let before = c.total_out();
        let _ = c.compress_vec(&[], out, FlushCompress::None);
        if c.total_out() == before {
            return;
        }
    }
}

/// A copy being written, in place: a version's files are new and not served before it is built.
struct Output {
    path: std::path::PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    at: u64,
}

impl Output {
    fn create(path: &Path) -> Result<Output> {
        let f = std::fs::File::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Output {
            path: path.to_path_buf(),
            out: std::io::BufWriter::with_capacity(1 << 16, f),
            at: 0,
        })
    }

    /// Appends `bytes`; returns where they are.
    fn put(&mut self, bytes: &[u8]) -> Result<Section> {
        self.out
            .write_all(bytes)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        let s = Section {
            offset: self.at,
            len: bytes.len() as u64,
        };
        self.at += s.len;
        Ok(s)
    }

    fn finish(mut self) -> Result<u64> {
        self.out
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self.at)
    }
}
