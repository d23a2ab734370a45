//! The store's JSON-text columns, written and read here only: `channel_entry.skips` (a JSON
//! array of names) and the `properties` of `package` and `channel` (a JSON array of
//! `[type, value]` pairs). A value that does not decode is an error naming its column, never
//! an empty list: a damaged column must not read as "no skips".

use crate::model::Property;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};

/// `channel_entry.skips`, decoded.
pub struct Skips(pub Vec<String>);

/// A `properties` column, decoded.
pub struct Properties(pub Vec<Property>);

/// A stored JSON column that does not decode.
#[derive(Debug, thiserror::Error)]
#[error("the stored {column} column does not decode: {source}")]
pub struct BadColumn {
    column: &'static str,
    source: serde_json::Error,
}

fn decode<'a, T: serde::Deserialize<'a>>(
    column: &'static str,
    value: ValueRef<'a>,
) -> FromSqlResult<T> {
    serde_json::from_str(value.as_str()?)
        .map_err(|source| FromSqlError::Other(Box::new(BadColumn { column, source })))
}

impl FromSql for Skips {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        decode::<Vec<String>>("skips", value).map(Skips)
    }
}

impl FromSql for Properties {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let pairs: Vec<(String, String)> = decode("properties", value)?;
        Ok(Properties(
            pairs
                .into_iter()
                .map(|(r#type, value)| Property { r#type, value })
                .collect(),
        ))
    }
}

/// The text of a `skips` column.
pub fn skips_text(skips: &[String]) -> String {
    serde_json::to_string(skips).expect("serializing strings cannot fail")
}

/// The text of a `properties` column.
pub fn properties_text(props: &[Property]) -> String {
    let pairs: Vec<(&str, &str)> = props
        .iter()
        .map(|p| (p.r#type.as_str(), p.value.as_str()))
        .collect();
    serde_json::to_string(&pairs).expect("serializing strings cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: FromSql>(text: &str) -> rusqlite::Result<T> {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.query_row("SELECT ?1", [text], |r| r.get::<_, T>(0))
    }

    #[test]
    fn columns_round_trip_and_a_damaged_one_is_an_error() {
        let skips = vec!["a.v1".to_string(), "a \"v2\"".to_string()];
        assert_eq!(read::<Skips>(&skips_text(&skips)).unwrap().0, skips);
        let props = vec![Property {
            r#type: "olm.gvk".into(),
            value: r#"{"group":"g"}"#.into(),
        }];
        let back = read::<Properties>(&properties_text(&props)).unwrap().0;
        assert_eq!(back.len(), 1);
        assert_eq!(
            (&*back[0].r#type, &*back[0].value),
            ("olm.gvk", r#"{"group":"g"}"#)
        );
        for bad in ["", "[\"a\"", "{}", "[1]"] {
            let e = read::<Skips>(bad).err().expect("a damaged skips column");
            assert!(e.to_string().contains("skips column"), "{e}");
            let e = read::<Properties>(bad)
                .err()
                .expect("a damaged properties column");
            assert!(e.to_string().contains("properties column"), "{e}");
        }
    }
}
