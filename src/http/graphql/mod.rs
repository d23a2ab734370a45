//! catalogd's GraphQL query API: `POST /catalogs/NAME/api/v1/graphql` with a JSON body
//! `{"query", "variables", "operationName"}`, answering only the fields asked for (a console
//! lists packages without downloading their icons). On by default (`--no-graphql` turns it
//! off; catalogd keeps it behind an alpha feature gate).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the service kept in the HTTP state: on/off, the schema of the served version |
//! | [`handler`] | the HTTP exchange: method, catalog name, body, status codes, the JSON answer |
//! | [`limits`] | catalogd's limits (body, query size, depth, aliases, fields) and messages |
//! | [`discover`] | field names and types inferred from the catalog's objects |
//! | [`naming`] | catalogd's names for fields, types and root fields |
//! | [`schema`] | the async-graphql dynamic schema and its resolvers, reading the served file |
//! | [`values`] | objects as queries read them; values shaped as catalogd answers them |
//! | [`cache`] | one schema per served version, built once |

pub mod cache;
pub mod discover;
pub mod handler;
pub mod limits;
pub mod naming;
pub mod schema;
pub mod values;

use super::content::Content;
use discover::{CatalogSchema, RawObject};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The metrics route label of the endpoint.
pub const ROUTE: &str = "/catalogs/{catalog}/api/v1/graphql";

/// A version's schema, or why it has none (one line, answered with a 500).
pub type Built = Result<Arc<async_graphql::dynamic::Schema>, Arc<str>>;

/// The GraphQL service of the HTTP port.
pub struct Graphql {
    enabled: AtomicBool,
    schemas: cache::VersionCache<Content, Built>,
}

impl Default for Graphql {
    fn default() -> Self {
        Graphql {
            enabled: AtomicBool::new(true),
            schemas: Default::default(),
        }
    }
}

impl Graphql {
    /// Turns the endpoint on or off (off: its path is not found, as catalogd without the gate).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }
    /// The schema of `version`, built on its first query.
    pub async fn schema(&self, version: &Arc<Content>) -> Built {
        self.schemas.get_or_build(version, |v| build(&v)).await
    }
}

/// The raw catalog segment of a GraphQL path (`/catalogs/{catalog}/api/v1/graphql`).
pub fn catalog_segment(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/catalogs/")?;
    let catalog = rest.strip_suffix("/api/v1/graphql")?;
    (!catalog.is_empty() && !catalog.contains('/')).then_some(catalog)
}

/// Discovers the version's schema from its objects (each read once, through the index) and
/// builds the GraphQL schema.
pub fn discover(content: &Content) -> std::io::Result<CatalogSchema> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(&content.path)?;
    let mut cs = CatalogSchema::default();
    let mut buf = Vec::new();
    for s in content.sections("", "", "") {
        buf.resize(s.len as usize, 0);
        file.read_exact_at(&mut buf, s.offset)?;
        if let Some(obj) = std::str::from_utf8(&buf)
            .ok()
            .and_then(|t| RawObject::parse(t).ok())
        {
            cs.add_parsed(&obj);
        }
    }
    Ok(cs)
}

fn build(content: &Content) -> Built {
    let started = std::time::Instant::now();
    let cs = discover(content).map_err(|e| {
        Arc::<str>::from(format!("cannot read {}: {e}", content.path.display()).as_str())
    })?;
    let schema = schema::build(&cs).map_err(|e| Arc::<str>::from(e.to_string().as_str()))?;
    tracing::info!(
        schemas = cs.schemas.len(),
        ms = started.elapsed().as_millis() as u64,
        "GraphQL schema built"
    );
    Ok(Arc::new(schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(catalog_segment("/catalogs/c/api/v1/graphql"), Some("c"));
        assert_eq!(catalog_segment("/catalogs//api/v1/graphql"), None);
        assert_eq!(catalog_segment("/catalogs/a/b/api/v1/graphql"), None);
        assert_eq!(catalog_segment("/catalogs/c/api/v1/graphql/"), None);
        assert_eq!(catalog_segment("/catalogs/c/api/v1/all"), None);
    }
}
