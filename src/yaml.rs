//! A guard run on YAML text before it reaches the YAML decoder, and where the keys of a YAML
//! document stand ([`key_positions`]), for errors that name a line and column.
//!
//! The decoder refuses documents nested deeper than 128 levels, but its scanner first reads
//! ahead through every open flow collection (`[`, `{`), in time quadratic in the nesting depth:
//! 100,000 nested `[` take 18 seconds to be refused, a few megabytes would take hours. Go's YAML
//! library stops at a flow depth of 10,000. [`check_flow_depth`] refuses such text in linear
//! time, long before any document the decoder could accept.

/// Deepest flow-collection nesting let through to the decoder. Anything deeper than 128 cannot
/// decode anyway; the margin keeps brackets inside block scalars and plain text from ever
/// tripping the guard on a document that would decode.
pub const MAX_FLOW_DEPTH: usize = 1000;

/// Text nested too deep in flow collections: the message names the line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FlowDepthError(String);

impl From<String> for FlowDepthError {
    fn from(place: String) -> Self {
        FlowDepthError(place)
    }
}

/// `Err` with a message naming the line and column where `text`'s flow nesting exceeds
/// [`MAX_FLOW_DEPTH`]. Brackets inside quoted scalars and comments are not counted.
pub fn check_flow_depth(text: &str) -> Result<(), FlowDepthError> {
    let mut depth = 0usize;
    let (mut line, mut col) = (1usize, 0usize);
    let mut prev = '\n';
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut escaped = false;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
            col = 0;
            comment = false;
        } else {
            col += 1;
        }
        if comment {
            prev = c;
            continue;
        }
        match quote {
            Some('"') => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    quote = None;
                }
            }
            Some(_) => {
                if c == '\'' {
                    quote = None;
                }
            }
            None => match c {
                // A quoted scalar starts after white space or a flow indicator only; a quote
                // inside a plain scalar (`it's`) is text.
                '"' | '\'' if prev.is_whitespace() || matches!(prev, '[' | '{' | ',') => {
                    quote = Some(c)
                }
                '#' if prev.is_whitespace() => comment = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Err(FlowDepthError::from(format!(
                            "flow collections nested deeper than {MAX_FLOW_DEPTH} levels at line {line} column {col}"
                        )));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        prev = c;
    }
    Ok(())
}

/// Where each mapping key of `text`'s first document stands, by its path: the keys from the
/// root joined with `.`, a sequence item by its index (`mirror.operators.0.packages.0.bundles`,
/// the form `serde_ignored` prints). Lines and columns count from 1. Text that does not parse
/// gives what was read before the error.
pub fn key_positions(text: &str) -> std::collections::HashMap<String, (usize, usize)> {
    let mut k = Keys::default();
    let _ = yaml_rust2::parser::Parser::new_from_str(text).load(&mut k, false);
    k.found
}

/// A container being read: a mapping (the next scalar is a key when `key_next`) or a sequence
/// (the next item's index).
enum Open {
    Map { key_next: bool, key: String },
    Seq { next: usize },
}

#[derive(Default)]
struct Keys {
    open: Vec<Open>,
    found: std::collections::HashMap<String, (usize, usize)>,
}

impl Keys {
    /// The path of the value about to be read.
    fn path(&self) -> Vec<String> {
        self.open
            .iter()
            .map(|o| match o {
                Open::Map { key, .. } => key.clone(),
                Open::Seq { next } => next.to_string(),
            })
            .collect()
    }

    /// A value (scalar or container) was read where the innermost container expects one.
    fn value_done(&mut self) {
        match self.open.last_mut() {
            Some(Open::Map { key_next, .. }) => *key_next = true,
            Some(Open::Seq { next }) => *next += 1,
            None => {}
        }
    }
}

impl yaml_rust2::parser::MarkedEventReceiver for Keys {
    fn on_event(&mut self, ev: yaml_rust2::parser::Event, mark: yaml_rust2::scanner::Marker) {
        use yaml_rust2::parser::Event;
        match ev {
            Event::Scalar(value, ..) => {
                if let Some(Open::Map { key_next: true, .. }) = self.open.last() {
                    let mut path = self.path();
                    path.pop();
                    path.push(value.clone());
                    self.found
                        .entry(path.join("."))
                        .or_insert((mark.line(), mark.col() + 1));
                    if let Some(Open::Map { key_next, key }) = self.open.last_mut() {
                        *key_next = false;
                        *key = value;
                    }
                } else {
                    self.value_done();
                }
            }
            Event::MappingStart(..) => self.open.push(Open::Map {
                key_next: true,
                key: String::new(),
            }),
            Event::SequenceStart(..) => self.open.push(Open::Seq { next: 0 }),
            Event::MappingEnd | Event::SequenceEnd => {
                self.open.pop();
                self.value_done();
            }
            Event::Alias(_) => self.value_done(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_with_their_line_and_column() {
        let text = "a: 1\nmirror:\n  operators:\n  - catalog: x\n    packages:\n    - name: p\n      bundles: [b]\n";
        let k = key_positions(text);
        assert_eq!(k["a"], (1, 1));
        assert_eq!(k["mirror.operators"], (3, 3));
        assert_eq!(k["mirror.operators.0.catalog"], (4, 5));
        assert_eq!(k["mirror.operators.0.packages.0.bundles"], (7, 7));
        let json =
            key_positions("{\"mirror\": {\"operators\": [{\"catalog\": \"x\", \"full\": true}]}}");
        assert_eq!(json["mirror.operators.0.full"], (1, 44));
    }

    #[test]
    fn deep_flow_nesting_is_refused_and_ordinary_text_is_not() {
        let deep = format!("x: {}{}", "[".repeat(2000), "]".repeat(2000));
        let e = check_flow_depth(&deep).unwrap_err().to_string();
        assert!(e.contains("line 1 column 1004"), "{e}");
        let maps = format!("x: {}1{}", "{a: ".repeat(2000), "}".repeat(2000));
        assert!(check_flow_depth(&maps).is_err());
        // Brackets in quoted scalars and comments, and balanced ones anywhere, are fine.
        let ok = format!(
            "a: \"{0}\"\nb: '{0}'\n# {0}\nc: [[1], {{d: [2]}}]\nd: it's {1}\n",
            "[".repeat(5000),
            "[]".repeat(5000)
        );
        assert_eq!(check_flow_depth(&ok), Ok(()));
        let escaped = format!("a: \"\\\"{}\"\n", "{".repeat(5000));
        assert_eq!(check_flow_depth(&escaped), Ok(()));
    }
}
