//! Splitting one FBC file into metas. A JSON object stream is decoded object by object (in
//! chunks when the file is large, so a catalog never sits in memory whole); anything else is
//! a YAML multi-document stream. A broken stream drops the whole file, as upstream does.

use super::decode::{get_ci, type_name};
use super::RawMeta;
use crate::diag::{Diagnostic, Rule};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// Reads a large JSON-stream file chunk by chunk, handing each meta to `f`. Returns `None`
/// (having called `f` for nothing) when the file should be read whole instead: it is small,
/// it is not a JSON stream, or it fails before two objects decode (upstream then reads it as
/// YAML). Otherwise returns whether the stream decoded, as [`for_each_meta`] does.
pub(super) fn read_streaming(
    path: &Path,
    file: &str,
    chunk: usize,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(RawMeta),
) -> std::io::Result<Option<bool>> {
    use std::io::Read;
    let mut input = std::fs::File::open(path)?;
    if input.metadata()?.len() <= chunk as u64 {
        return Ok(None);
    }
    let mut buf: Vec<u8> = Vec::with_capacity(chunk + (chunk >> 2));
    let mut base = 0usize; // file offset of buf[0]
    let mut at = Position::default(); // file line and column of buf[0]
    let mut eof = false;
    let mut n = 0usize; // documents decoded
    let mut held: Vec<Value> = Vec::with_capacity(2);
    let mut errs = Vec::new();
    // How much to read before the next decode pass. A document larger than the buffer is
    // decoded again from its start on every pass, so while a pass consumes nothing the step
    // doubles: the passes over one huge document add up to about twice its size, not its
    // size squared over the chunk.
    let mut step = chunk;
    while !eof {
        let want = buf.len() + step;
        while buf.len() < want {
            let len = buf.len();
            buf.resize(want, 0);
            let got = input.read(&mut buf[len..])?;
            buf.truncate(len + got);
            if got == 0 {
                eof = true;
                break;
            }
        }
        // The whole buffer is checked on every pass (what is carried over is at most the
        // document in progress) so that the JSON is parsed from a `&str`: serde_json then does
        // not validate every string's UTF-8 again, as it does when parsing bytes.
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => t,
            Err(e) => match e.error_len() {
                Some(bad) => {
                    diags.push(
                        Diagnostic::error(
                            Rule::Parse,
                            format!(
                                "file is not valid UTF-8: invalid utf-8 sequence of {bad} bytes from index {}",
                                base + e.valid_up_to()
                            ),
                        )
                        .at(&Origin::file(file)),
                    );
                    return Ok(Some(false));
                }
                None if eof => {
                    diags.push(
                        Diagnostic::error(
                            Rule::Parse,
                            format!(
                                "file is not valid UTF-8: incomplete utf-8 byte sequence from index {}",
                                base + e.valid_up_to()
                            ),
                        )
                        .at(&Origin::file(file)),
                    );
                    return Ok(Some(false));
                }
                // A character split by the end of what was read: decode up to it.
                None => std::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or_default(),
            },
        };
        let checked = text.len();
        if base == 0 && buf.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Ok(None);
        }
        // Decode the complete documents of buf[..checked]; keep a trailing partial one.
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        let mut consumed = 0;
        loop {
            match stream.next() {
                None => {
                    consumed = checked;
                    break;
                }
                // A number or literal that ends the buffer may go on in the next chunk
                // (`12` + `34`, `true` + `x`): read more first.
                Some(Ok(v))
                    if !eof
                        && stream.byte_offset() == checked
                        && !(v.is_object() || v.is_array() || v.is_string()) =>
                {
                    break
                }
                Some(Ok(v)) => {
                    consumed = stream.byte_offset();
                    n += 1;
                    if n <= 2 {
                        // Held until two objects decode (the YAML fallback rule).
                        held.push(v);
                        if n == 2 {
                            for (i, v) in held.drain(..).enumerate() {
                                emit_meta(v, i + 1, file, &mut errs, f);
                            }
                        }
                    } else {
                        emit_meta(v, n, file, &mut errs, f);
                    }
                }
                Some(Err(e)) if e.is_eof() && !eof => break,
                Some(Err(_)) if n < 2 => return Ok(None),
                Some(Err(e)) => {
                    diags.push(
                        Diagnostic::error(Rule::Parse, format!("invalid JSON: {}", at.of(&e)))
                            .at(&Origin::doc(file, n + 1)),
                    );
                    return Ok(Some(false));
                }
            }
        }
        step = if consumed == 0 {
            step.saturating_mul(2)
        } else {
            chunk
        };
        at.advance(&buf[..consumed]);
        buf.drain(..consumed);
        base += consumed;
    }
    for (i, v) in held.into_iter().enumerate() {
        emit_meta(v, i + 1, file, &mut errs, f);
    }
    diags.append(&mut errs);
    Ok(Some(true))
}

/// Where the buffer of a chunked read starts in its file, so that a JSON error names the
/// file's line and column rather than the buffer's.
#[derive(Clone, Copy, Debug)]
struct Position {
    /// 1-based line.
    line: usize,
    /// Bytes of that line before the buffer's start.
    column: usize,
}

impl Default for Position {
    fn default() -> Self {
        Position { line: 1, column: 0 }
    }
}

impl Position {
    /// Moves past `bytes`, which the buffer drops.
    fn advance(&mut self, bytes: &[u8]) {
        match memchr::memrchr(b'\n', bytes) {
            Some(last) => {
                self.line += memchr::memchr_iter(b'\n', bytes).count();
                self.column = bytes.len() - last - 1;
            }
            None => self.column += bytes.len(),
        }
    }

    /// A decode error's text with its position in the file.
    fn of(&self, e: &serde_json::Error) -> String {
        let text = e.to_string();
        if e.line() == 0 {
            return text;
        }
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = text.strip_suffix(&suffix).unwrap_or(&text);
        let (line, column) = match e.line() {
            1 => (self.line, self.column + e.column()),
            l => (self.line + l - 1, e.column()),
        };
        format!("{message} at line {line} column {column}")
    }
}

/// The metas of a file as ingest reads one larger than `chunk` bytes: `chunk` bytes at a time
/// (ingest uses 1 MiB). `None` when that reader hands the file back to be read whole (it is
/// not larger, not a JSON stream, or fails before two objects decode). For tests and fuzzing,
/// which compare it with [`decode_bytes`] using small chunks; `chunk` must not be 0.
#[doc(hidden)]
pub fn decode_file_chunked(
    path: &Path,
    chunk: usize,
    diags: &mut Vec<Diagnostic>,
) -> std::io::Result<Option<Vec<RawMeta>>> {
    assert!(chunk > 0, "chunk size 0");
    let mut metas = Vec::new();
    let file = path.display().to_string();
    let ok = read_streaming(path, &file, chunk, diags, &mut |m| metas.push(m))?;
    Ok(ok.map(|ok| if ok { metas } else { Vec::new() }))
}

/// Splits one file's bytes into metas. Never panics on any input.
pub fn decode_bytes(bytes: &[u8], file: &str, diags: &mut Vec<Diagnostic>) -> Vec<RawMeta> {
    let mut metas = Vec::new();
    if !for_each_meta(bytes, file, diags, &mut |m| metas.push(m)) {
        metas.clear();
    }
    metas
}

/// Calls `f` with each meta of one file's bytes, in order. Returns false (after reporting it)
/// when the stream itself is broken; the caller then discards what it was given.
pub(super) fn for_each_meta(
    bytes: &[u8],
    file: &str,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(RawMeta),
) -> bool {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            diags.push(
                Diagnostic::error(Rule::Parse, format!("file is not valid UTF-8: {e}"))
                    .at(&Origin::file(file)),
            );
            return false;
        }
    };
    let emit = |doc: Value, k: usize, diags: &mut Vec<Diagnostic>, f: &mut dyn FnMut(RawMeta)| {
        emit_meta(doc, k, file, diags, f)
    };
    let first = text.trim_start().chars().next();
    if first == Some('{') {
        // Upstream falls back to YAML for the whole file unless two JSON objects decode, so the
        // first two are held back until the second one has parsed.
        let mut held = Vec::with_capacity(2);
        let mut n = 0usize;
        let mut json_ok = true;
        // Per-document errors count only if the stream as a whole decodes.
        let mut errs = Vec::new();
        for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            match v {
                Ok(v) if n < 2 => {
                    held.push(v);
                    n += 1;
                    if n == 2 {
                        for (i, v) in held.drain(..).enumerate() {
                            emit(v, i + 1, &mut errs, f);
                        }
                    }
                }
                Ok(v) => {
                    n += 1;
                    emit(v, n, &mut errs, f);
                }
                Err(e) if n >= 2 => {
                    diags.push(
                        Diagnostic::error(Rule::Parse, format!("invalid JSON: {e}"))
                            .at(&Origin::doc(file, n + 1)),
                    );
                    return false;
                }
                Err(_) => {
                    json_ok = false;
                    break;
                }
            }
        }
        if json_ok {
            for (i, v) in held.into_iter().enumerate() {
                emit(v, i + 1, &mut errs, f);
            }
            diags.append(&mut errs);
            return true;
        }
    }
    let what = if first == Some('{') {
        "invalid JSON or YAML"
    } else {
        "invalid YAML"
    };
    let mut errs = Vec::new();
    match decode_yaml_stream(text, &mut |v, k| emit(v, k + 1, &mut errs, f)) {
        Ok(()) => {
            diags.append(&mut errs);
            diags.extend(crate::catalog::yaml11::warnings(text, file));
            true
        }
        Err((k, e)) => {
            diags.push(
                Diagnostic::error(Rule::Parse, format!("{what}: {e}"))
                    .at(&Origin::doc(file, k + 1)),
            );
            false
        }
    }
}

/// Types document number `k` (from 1) of `file` and hands it to `f`, or reports why not.
fn emit_meta(
    doc: Value,
    k: usize,
    file: &str,
    diags: &mut Vec<Diagnostic>,
    f: &mut dyn FnMut(RawMeta),
) {
    let origin = Origin::doc(file, k);
    match to_raw_meta(doc, &origin) {
        Ok(m) => f(m),
        Err(d) => diags.push(d.at(&origin)),
    }
}

type StreamError = (usize, String);

/// Decodes a YAML multi-document stream, handing each document to `f`.
fn decode_yaml_stream(text: &str, f: &mut dyn FnMut(Value, usize)) -> Result<(), StreamError> {
    // A block scalar that ends the file without a newline still keeps its final line break
    // under clip chomping in Go's YAML library; libyaml drops it. Restore Go's behaviour.
    let owned;
    let text = if text.ends_with('\n') {
        text
    } else {
        owned = format!("{text}\n");
        &owned
    };
    crate::yaml::check_flow_depth(text).map_err(|e| (0, e.to_string()))?;
    for (i, de) in yaml_serde::Deserializer::from_str(text).enumerate() {
        match Value::deserialize(de) {
            Ok(v) => f(v, i),
            Err(e) => return Err((i, e.to_string())),
        }
    }
    Ok(())
}

fn to_raw_meta(doc: Value, origin: &Origin) -> Result<RawMeta, Diagnostic> {
    let Value::Object(map) = doc else {
        let what = match doc {
            Value::Null => "an empty document",
            Value::Array(_) => "a list",
            _ => "a scalar",
        };
        return Err(Diagnostic::error(
            Rule::Schema,
            format!("expected an object with a \"schema\" key, found {what}"),
        ));
    };
    // Top-level keys are compared case-insensitively; two spellings of one key are an error.
    let mut folded: std::collections::BTreeMap<String, Vec<&String>> = Default::default();
    for k in map.keys() {
        folded.entry(k.to_lowercase()).or_default().push(k);
    }
    if let Some((k, spellings)) = folded.iter().find(|(_, v)| v.len() > 1) {
        let list: Vec<&str> = spellings.iter().map(|s| s.as_str()).collect();
        return Err(Diagnostic::error(
            Rule::Schema,
            format!("duplicate keys for key {k:?}: [{}]", list.join(" ")),
        ));
    }
    let key_str = |key: &str| -> Result<String, Diagnostic> {
        match get_ci(&map, key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(Diagnostic::error(
                Rule::Schema,
                format!(
                    "expected value for key {key:?} to be a string, got {}",
                    type_name(other)
                ),
            )),
        }
    };
    let schema = key_str("schema")?;
    let package = key_str("package")?;
    let name = key_str("name")?;
    if schema.is_empty() {
        return Err(Diagnostic::error(
            Rule::Schema,
            "object is missing root schema field",
        ));
    }
    Ok(RawMeta {
        schema,
        package,
        name,
        value: map,
        origin: origin.clone(),
    })
}
