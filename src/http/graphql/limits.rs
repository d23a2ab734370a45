//! catalogd's limits on a GraphQL request, with its messages. The size limits are checked on
//! the body before it is parsed; the shape limits on the parsed query before it runs:
//!
//! * a body over 1 MiB is refused (`Invalid request body`), a query over 100,000 bytes too
//!   (`Query too large`), both with a 400;
//! * nesting deeper than 10 selection sets, more than 50 aliases or more than 500 fields
//!   (counted over every operation of the document, each fragment once per operation) answer
//!   a GraphQL error (`query exceeds maximum depth of 10`, ...).

use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::parser::Positioned;
use std::collections::HashSet;

/// Most bytes read of a request body.
pub const MAX_BODY: usize = 1 << 20;
/// Most bytes of a query.
pub const MAX_QUERY: usize = 100_000;
/// Most nested selection sets.
pub const MAX_DEPTH: usize = 10;
/// Most aliases in a document.
pub const MAX_ALIASES: usize = 50;
/// Most fields in a document.
pub const MAX_FIELDS: usize = 500;

/// Why a query is refused before it runs.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QueryError {
    #[error("query parse error: Syntax Error GraphQL request ({line}:{column}) {message}")]
    Parse {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("query exceeds maximum depth of {MAX_DEPTH}")]
    Depth,
    #[error("query exceeds maximum alias count of {MAX_ALIASES}")]
    Aliases,
    #[error("query exceeds maximum field count of {MAX_FIELDS}")]
    Fields,
}

/// Parses `query` and checks its shape (catalogd's `ValidateQueryComplexity`).
pub fn validate(query: &str) -> Result<ExecutableDocument, QueryError> {
    let doc = async_graphql::parser::parse_query(query).map_err(parse_error)?;
    check(&doc)?;
    Ok(doc)
}

fn parse_error(e: async_graphql::parser::Error) -> QueryError {
    let pos = e.positions().next().unwrap_or_default();
    // The parser's message is a drawing of the line; its last line says what was expected.
    let text = e.to_string();
    let message = text
        .lines()
        .rev()
        .map(|l| l.trim().trim_start_matches('=').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("syntax error")
        .to_string();
    QueryError::Parse {
        line: pos.line,
        column: pos.column,
        message,
    }
}

struct Walk<'a> {
    doc: &'a ExecutableDocument,
    aliases: usize,
    fields: usize,
    visited: HashSet<&'a str>,
}

/// Checks a parsed document against the depth, alias and field limits.
pub fn check(doc: &ExecutableDocument) -> Result<(), QueryError> {
    let mut w = Walk {
        doc,
        aliases: 0,
        fields: 0,
        visited: HashSet::new(),
    };
    for (_, op) in doc.operations.iter() {
        // Fragments count again in each operation.
        w.visited.clear();
        w.selections(&op.node.selection_set, 1)?;
    }
    Ok(())
}

impl<'a> Walk<'a> {
    fn selections(
        &mut self,
        ss: &'a Positioned<SelectionSet>,
        depth: usize,
    ) -> Result<(), QueryError> {
        if ss.node.items.is_empty() {
            return Ok(());
        }
        if depth > MAX_DEPTH {
            return Err(QueryError::Depth);
        }
        for sel in &ss.node.items {
            match &sel.node {
                Selection::Field(f) => {
                    self.fields += 1;
                    if self.fields > MAX_FIELDS {
                        return Err(QueryError::Fields);
                    }
                    if f.node.alias.as_ref().is_some_and(|a| !a.node.is_empty()) {
                        self.aliases += 1;
                        if self.aliases > MAX_ALIASES {
                            return Err(QueryError::Aliases);
                        }
                    }
                    self.selections(&f.node.selection_set, depth + 1)?;
                }
                Selection::InlineFragment(i) => {
                    self.selections(&i.node.selection_set, depth + 1)?;
                }
                Selection::FragmentSpread(s) => {
                    let name = s.node.fragment_name.node.as_str();
                    if !self.visited.insert(name) {
                        continue;
                    }
                    if let Some(frag) = self.doc.fragments.get(&s.node.fragment_name.node) {
                        self.selections(&frag.node.selection_set, depth + 1)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! catalogd's validation_test.go, case for case.
    use super::*;

    fn nested(from: usize, to_incl: usize) -> String {
        let mut b = String::from("{ ");
        for i in from..=to_incl {
            b.push_str(&format!("f{i} {{ "));
        }
        b.push_str("leaf");
        for _ in from..=to_incl {
            b.push_str(" }");
        }
        b.push_str(" }");
        b
    }

    #[test]
    fn valid_simple_query() {
        assert!(validate("{ olmpackages { name } }").is_ok());
    }

    #[test]
    fn parse_error() {
        let e = validate("{ invalid query {{{{").unwrap_err();
        assert!(e.to_string().contains("query parse error"), "{e}");
    }

    #[test]
    fn exceeds_depth() {
        let e = validate(&nested(0, MAX_DEPTH + 1)).unwrap_err();
        assert!(e.to_string().contains("maximum depth"), "{e}");
        assert_eq!(e.to_string(), "query exceeds maximum depth of 10");
    }

    #[test]
    fn within_depth_limit() {
        assert_eq!(validate(&nested(1, MAX_DEPTH - 1)).map(|_| ()), Ok(()));
        // One more level is over.
        assert_eq!(
            validate(&nested(1, MAX_DEPTH)).map(|_| ()),
            Err(QueryError::Depth)
        );
    }

    #[test]
    fn exceeds_aliases() {
        let mut b = String::from("{ ");
        for i in 0..=MAX_ALIASES {
            b.push_str(&format!("a{i}: name "));
        }
        b.push('}');
        let e = validate(&b).unwrap_err();
        assert!(e.to_string().contains("maximum alias count"), "{e}");
        assert_eq!(e.to_string(), "query exceeds maximum alias count of 50");
    }

    #[test]
    fn exceeds_field_count() {
        let mut b = String::from("{ ");
        for i in 0..=MAX_FIELDS {
            b.push_str(&format!("f{i} "));
        }
        b.push('}');
        let e = validate(&b).unwrap_err();
        assert!(e.to_string().contains("maximum field count"), "{e}");
        assert_eq!(e.to_string(), "query exceeds maximum field count of 500");
    }

    #[test]
    fn with_fragments() {
        let q = "fragment PkgFields on OlmPackage { name defaultChannel }
                 { olmpackages { ...PkgFields } }";
        assert!(validate(q).is_ok());
    }

    #[test]
    fn with_inline_fragment() {
        assert!(validate("{ olmpackages { ... on OlmPackage { name } } }").is_ok());
    }

    #[test]
    fn minimal_query() {
        assert!(validate("{ __typename }").is_ok());
    }

    #[test]
    fn duplicate_fragment_spread_skipped() {
        let q = "fragment F on OlmPackage { name } { olmpackages { ...F ...F } }";
        assert!(validate(q).is_ok());
    }

    #[test]
    fn fields_count_over_operations() {
        // 300 fields in each of two operations: 600 in the document.
        let fields: String = (0..300).map(|i| format!("f{i} ")).collect();
        let q = format!("query A {{ {fields} }} query B {{ {fields} }}");
        assert_eq!(validate(&q).map(|_| ()), Err(QueryError::Fields));
    }
}
