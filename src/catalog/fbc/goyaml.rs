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

use std::cmp::Ordering;

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
        if style == Style::Plain {
            if !a.block_plain_allowed || (value.is_empty() && ctx.simple_key) {
                style = Style::Single;
            }
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

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// go-yaml's printable set: it leaves out control characters, C1 controls, byte-order marks,
/// U+FFFE/U+FFFF and everything outside the Basic Multilingual Plane.
fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || (0xA0..=0xD7FF).contains(&v)
        || (0xE000..=0xFFFD).contains(&v) && v != 0xFEFF
}

/// What go-yaml's scalar analysis allows for `value` (outside flow collections).
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let chars: Vec<char> = value.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| n == ' ' || n == '\t');
        let last = i + 1 == chars.len();
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
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

/// go-yaml's key order: letters after other characters, runs of digits compared as numbers.
pub fn key_order(a: &str, b: &str) -> Ordering {
    if a == b {
        Ordering::Equal
    } else if key_less(a, b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

fn key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let digit = |c: char| c.is_ascii_digit();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, with go-yaml's names for infinities and NaN.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Shortest 'g' switches to the exponent form below 1e-4 and from 1e6 on.
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// True when go-yaml would read `s`, written plain, as something other than a string (a
/// bool, null, int, float or timestamp), so that it must be quoted.
pub fn resolves_to_non_string(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    match s.as_bytes()[0] {
        b'.' => go_parse_float(s),
        b'0'..=b'9' | b'+' | b'-' => {
            if is_timestamp(s) {
                return true;
            }
            let plain = s.replace('_', "");
            go_parse_int(&plain) || (yaml_style_float(&plain) && finite_float(&plain))
        }
        _ => false,
    }
}

fn finite_float(s: &str) -> bool {
    s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat` for text starting with `.` (decimal forms with `_` between
/// digits).
fn go_parse_float(s: &str) -> bool {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let ok =
                i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !ok {
                return false;
            }
        }
    }
    let plain = s.replace('_', "");
    yaml_style_float(&plain) && finite_float(&plain)
}

/// Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` accepts `s`.
fn go_parse_int(s: &str) -> bool {
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => (0, s),
    };
    if rest.is_empty() {
        return false;
    }
    let lower = rest.to_ascii_lowercase();
    let (radix, digits) = if lower.len() >= 3 && lower.starts_with("0b") {
        (2, &rest[2..])
    } else if lower.len() >= 3 && lower.starts_with("0o") {
        (8, &rest[2..])
    } else if lower.len() >= 3 && lower.starts_with("0x") {
        (16, &rest[2..])
    } else if rest.starts_with('0') {
        (8, &rest[1..])
    } else {
        (10, rest)
    };
    let mut n: u128 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else {
            return false;
        };
        n = n * radix as u128 + d as u128;
        if n > u64::MAX as u128 {
            return false;
        }
    }
    match sign {
        -1 => n <= 1u128 << 63,
        1 => n <= i64::MAX as u128,
        _ => true,
    }
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`: go-yaml quotes these for YAML 1.1
/// readers.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) || !s.contains(':') {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() && i - st < 2 {
            i += 1;
        }
        match i - st {
            1 => {}
            2 if b[st] <= b'5' => {}
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml's timestamp forms: `YYYY-M-D`, optionally followed by `T`, `t` or a space, a time
/// `h:m:s` with an optional fraction, and (after `T`/`t`) a zone `Z` or `±hh:mm`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    let num = |i: &mut usize, max_len: usize| -> Option<u32> {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - st < max_len {
            *i += 1;
        }
        if *i == st {
            None
        } else {
            s[st..*i].parse().ok()
        }
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let Some(month) = num(&mut i, 2) else {
        return false;
    };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = num(&mut i, 2) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in(month, year) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let sep = b[i];
    if !matches!(sep, b'T' | b't' | b' ') {
        return false;
    }
    i += 1;
    let ok_time = (|| {
        let h = num(&mut i, 2)?;
        (b.get(i) == Some(&b':')).then_some(())?;
        i += 1;
        let m = num(&mut i, 2)?;
        (b.get(i) == Some(&b':')).then_some(())?;
        i += 1;
        let sec = num(&mut i, 2)?;
        (h < 24 && m < 60 && sec < 60).then_some(())
    })();
    if ok_time.is_none() {
        return false;
    }
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if sep == b' ' {
        return i == b.len();
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let z = &b[i + 1..];
            z.len() == 5
                && z[..2].iter().all(u8::is_ascii_digit)
                && z[2] == b':'
                && z[3..].iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
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
            "a: {}\nb:\n- x\n- m: null\n  n: 1\nc: []\nd: |\n  one\n  two\ne: |-\n  one\n  two\nf: |2\n    x\ng: |+\n  x\n\n...\n"
        );
    }

    #[test]
    fn keys_sort_naturally() {
        let mut keys = vec!["a10", "a9", "b", "A", "_x", "a", "1"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, ["1", "_x", "A", "a", "a9", "a10", "b"]);
    }

    #[test]
    fn long_lines_fold_after_column_80() {
        let words = "word ".repeat(30);
        let text = words.trim_end();
        let out = doc(map(&[("k", s(text))]));
        assert!(out.lines().all(|l| l.len() <= 86), "{out}");
        assert!(out.lines().nth(1).unwrap().starts_with("  word"), "{out}");
    }

    #[test]
    fn floats_print_like_go() {
        assert_eq!(go_float(4.1), "4.1");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e-7), "1e-07");
        assert_eq!(go_float(1234567.5), "1.2345675e+06");
        assert_eq!(go_float(0.0001), "0.0001");
    }
}
