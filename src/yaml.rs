//! A guard run on YAML text before it reaches the YAML decoder.
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

#[cfg(test)]
mod tests {
    use super::*;

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
