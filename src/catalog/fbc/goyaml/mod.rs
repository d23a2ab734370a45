//! YAML exactly as `opm render -o yaml` writes it.
//!
//! opm turns each object into JSON and hands it to sigs.k8s.io/yaml, which reads the JSON back
//! as YAML and marshals it with go-yaml v2. The bytes are therefore go-yaml v2's: mapping keys
//! in its "natural" order (runs of digits compare as numbers), strings plain when they would
//! read back as strings, single-quoted when an indicator forbids plain, double-quoted (with
//! `\x..`/`\u....`/`\U........` escapes) when they would read as a bool, number, null or
//! timestamp or hold a character it does not print, literal blocks (`|`, `|-`, `|+`, `|2`)
//! for text with line breaks, long plain and quoted lines folded after column 80, empty
//! collections in flow form (`{}`, `[]`), and sequences not indented under their key.
//! [`write_document`] writes one [`Node`] tree that way; its rules were learnt from go-yaml
//! v2.4.0's emitter (`emitterc.go`), resolver (`resolve.go`) and key sorter (`sorter.go`).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the emitter: nodes, indentation, folding, styles chosen |
//! | [`analysis`] | a scalar's characters, line breaks and the styles its text allows |
//! | [`scalars`] | plain strings that read back as another type, key order, Go's float printing |

mod analysis;
mod scalars;

use analysis::{analyze, is_break, is_printable};
pub use scalars::resolves_to_non_string;
use scalars::{go_float, is_base60_float, key_order};

/// A value as go-yaml sees it after reading opm's JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    /// An integer, as decimal text (exact, whatever its size).
    Int(String),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// A mapping; keys are sorted when written.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The node go-yaml makes of a JSON value.
    pub fn from_json(v: &serde_json::Value) -> Node {
        use serde_json::Value;
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => {
                if n.is_i64() || n.is_u64() {
                    Node::Int(n.to_string())
                } else {
                    Node::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            Value::String(s) => Node::Str(s.clone()),
            Value::Array(a) => Node::Seq(a.iter().map(Node::from_json).collect()),
            Value::Object(m) => Node::Map(
                m.iter()
                    .map(|(k, v)| (k.clone(), Node::from_json(v)))
                    .collect(),
            ),
        }
    }
}

/// Appends `node` as one YAML document (what `yaml.Marshal` returns), ending in a newline.
pub fn write_document(node: &Node, out: &mut String) {
    let mut e = Emitter {
        out,
        column: 0,
        indent: -1,
        indents: Vec::new(),
        whitespace: true,
        indention: true,
        open_ended: false,
    };
    e.node(node, Ctx::ROOT);
    e.indent = -1;
    e.write_indent();
    if e.open_ended {
        e.write_indicator("...", true, false, false);
        e.write_indent();
    }
}

const BEST_INDENT: i32 = 2;
const BEST_WIDTH: usize = 80;

#[derive(Clone, Copy)]
struct Ctx {
    root: bool,
    mapping: bool,
    simple_key: bool,
}

impl Ctx {
    const ROOT: Ctx = Ctx {
        root: true,
        mapping: false,
        simple_key: false,
    };
    const ITEM: Ctx = Ctx {
        root: false,
        mapping: false,
        simple_key: false,
    };
    const VALUE: Ctx = Ctx {
        root: false,
        mapping: true,
        simple_key: false,
    };
    const KEY: Ctx = Ctx {
        root: false,
        mapping: true,
        simple_key: true,
    };
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Emitter<'a> {
    out: &'a mut String,
    /// Characters (not bytes) since the last line break.
    column: usize,
    indent: i32,
    indents: Vec<i32>,
    whitespace: bool,
    indention: bool,
    open_ended: bool,
}

impl Emitter<'_> {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn push_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in ind.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
        self.open_ended = false;
    }

    fn node(&mut self, n: &Node, ctx: Ctx) {
        match n {
            Node::Null => self.scalar("null", Style::Plain, ctx),
            Node::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Node::Int(s) => self.scalar(s, Style::Plain, ctx),
            Node::Float(f) => self.scalar(&go_float(*f), Style::Plain, ctx),
            Node::Str(s) => self.scalar(s, requested_style(s), ctx),
            Node::Seq(items) if items.is_empty() => self.empty_flow("[", "]"),
            Node::Map(entries) if entries.is_empty() => self.empty_flow("{", "}"),
            Node::Seq(items) => {
                self.push_indent(false, ctx.mapping && !self.indention);
                for item in items {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.node(item, Ctx::ITEM);
                }
                self.pop_indent();
            }
            Node::Map(entries) => {
                let mut sorted: Vec<&(String, Node)> = entries.iter().collect();
                sorted.sort_by(|a, b| key_order(&a.0, &b.0));
                self.push_indent(false, false);
                for (k, v) in sorted {
                    self.write_indent();
                    if is_simple_key(k) {
                        self.scalar(k, requested_style(k), Ctx::KEY);
                        self.write_indicator(":", false, false, false);
                    } else {
                        self.write_indicator("?", true, false, true);
                        self.scalar(k, requested_style(k), Ctx::VALUE);
                        self.write_indent();
                        self.write_indicator(":", true, false, true);
                    }
                    self.node(v, Ctx::VALUE);
                }
                self.pop_indent();
            }
        }
    }

    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn scalar(&mut self, value: &str, requested: Style, ctx: Ctx) {
        let a = analyze(value);
        let mut style = requested;
        if ctx.simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && ctx.simple_key))
        {
            style = Style::Single;
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::Double;
        }
        self.push_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.plain(value, allow_breaks, ctx.root),
            Style::Single => self.single_quoted(value, allow_breaks),
            Style::Double => self.double_quoted(value, allow_breaks),
            Style::Literal => self.literal(value),
        }
        self.pop_indent();
    }

    fn plain(&mut self, value: &str, allow_breaks: bool, root: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                self.indention = false;
                spaces = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
        if root {
            self.open_ended = true;
        }
    }

    fn single_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && chars[i + 1] != ' '
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn double_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let bom = value.starts_with('\u{feff}');
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ => {
                        let v = c as u32;
                        let (letter, digits) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(letter);
                        for k in (0..digits).rev() {
                            let d = (v >> (k * 4)) & 0xF;
                            self.put(char::from_digit(d, 16).unwrap_or('0').to_ascii_uppercase());
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                {
                    self.write_indent();
                    if chars[i + 1] == ' ' {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        let mut chars = value.chars();
        if value.starts_with([' ', '\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        self.open_ended = false;
        let last = chars.next_back();
        let chomp = match last {
            None => Some("-"),
            Some(l) if !is_break(l) => Some("-"),
            Some(_) => match chars.next_back() {
                None => Some("+"),
                Some(p) if is_break(p) => Some("+"),
                Some(_) => None,
            },
        };
        if let Some(h) = chomp {
            self.write_indicator(h, false, false, false);
            if h == "+" {
                self.open_ended = true;
            }
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// The style go-yaml's encoder asks for: a literal block for text with a newline, plain for
/// text that reads back as a string, double quotes for anything else.
fn requested_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolves_to_non_string(s) || is_base60_float(s) {
        Style::Double
    } else {
        Style::Plain
    }
}

fn is_simple_key(k: &str) -> bool {
    !k.chars().any(is_break) && k.len() <= 128
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(n: Node) -> String {
        let mut s = String::new();
        write_document(&n, &mut s);
        s
    }

    fn map(entries: &[(&str, Node)]) -> Node {
        Node::Map(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    fn s(v: &str) -> Node {
        Node::Str(v.into())
    }

    #[test]
    fn scalars_are_quoted_as_go_yaml_quotes_them() {
        let cases = [
            ("false", "\"false\""),
            ("", "\"\""),
            ("5.1", "\"5.1\""),
            ("0x1F", "\"0x1F\""),
            ("1_000", "\"1_000\""),
            ("12:30", "\"12:30\""),
            ("2026-04-22T03:05:24Z", "\"2026-04-22T03:05:24Z\""),
            ("2026-02-30", "2026-02-30"),
            ("on", "\"on\""),
            ("1.2.3", "1.2.3"),
            (">=4.19", "'>=4.19'"),
            ("it's: x", "'it''s: x'"),
            ("cats \u{1F431}", "\"cats \\U0001F431\""),
            ("tab\there", "\"tab\\there\""),
            (" lead", "' lead'"),
            ("- x", "'- x'"),
            ("a #b", "'a #b'"),
            ("a#b", "a#b"),
            ("1e999", "1e999"),
        ];
        for (input, want) in cases {
            assert_eq!(
                doc(map(&[("k", s(input))])),
                format!("k: {want}\n"),
                "{input:?}"
            );
        }
    }

    // The key "n" is quoted: go-yaml v2 reads a plain `n` as the bool false (YAML 1.1).
    #[test]
    fn collections_and_blocks() {
        let n = map(&[
            (
                "b",
                Node::Seq(vec![
                    s("x"),
                    map(&[("n", Node::Int("1".into())), ("m", Node::Null)]),
                ]),
            ),
            ("a", Node::Map(vec![])),
            ("c", Node::Seq(vec![])),
            ("d", s("one\ntwo\n")),
            ("e", s("one\ntwo")),
            ("f", s("  x\n")),
            ("g", s("x\n\n")),
        ]);
        assert_eq!(
            doc(n),
            "a: {}\nb:\n- x\n- m: null\n  \"n\": 1\nc: []\nd: |\n  one\n  two\ne: |-\n  one\n  two\nf: |2\n    x\ng: |+\n  x\n\n...\n"
        );
    }

    #[test]
    fn long_lines_fold_after_column_80() {
        let words = "word ".repeat(30);
        let text = words.trim_end();
        let out = doc(map(&[("k", s(text))]));
        assert!(out.lines().all(|l| l.len() <= 86), "{out}");
        assert!(out.lines().nth(1).unwrap().starts_with("  word"), "{out}");
    }
}
