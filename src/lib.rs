//! opreg: an operator catalog registry.
//!
//! Data flows one way:
//!
//! ```text
//!  SOURCE ──► source ──► catalog::* ──► model ──► validate ──► store (SQLite) ──► server
//!  (paths)   (detect,    (readers)      (data)    (+ graph)     (write once,      (gRPC)
//!             dispatch)                                          read-only after)
//! ```
//!
//! Module map, lowest layer first (a module imports only from the ones above it):
//!
//! * Leaves: [`text`] (Go `%q` quoting, eliding long strings), [`json`] (canonical JSON, Go's
//!   escaping), [`yaml`] (YAML 1.1 guards), [`version`] (the blang and Masterminds version
//!   grammars), [`release`] (bundle release versions: format, normalized name, order),
//!   [`imageref`] (the docker image reference grammar), [`names`] (the DNS-1123 name rules),
//!   [`sqlite`] (the one read-only open and header check), [`memory`] (allocator settings,
//!   giving memory back when idle).
//! * [`model`]: the catalog as plain data: packages → channels → entries, bundles with
//!   properties. No I/O, no rules.
//! * [`diag`]: the diagnostic type (file, document, package/channel/bundle) and rule ids.
//! * [`graph`]: the update-graph rules, once: which entry upgrades from which bundle
//!   (replaces, skips, skipRange), channel heads, the replaces walk, and upgrade resolution
//!   under classic, OLM v1 and semver rules ([`graph::resolve`]).
//! * [`catalog`]: one reader per input format (FBC, package manifests, bundle directories,
//!   legacy SQLite indexes) into declarations, assembled into a [`model::Catalog`];
//!   [`catalog::csv`] is the one place CSV-derived properties are computed;
//!   [`catalog::fbc`] also renders a catalog back to FBC.
//! * [`validate`]: upstream's catalog rules, all errors at once, each naming file and rule;
//!   only it makes a [`validate::ValidCatalog`].
//! * [`wire`]: model → `api.Bundle` (field-fill rules, csvJson synthesis), and the encoded
//!   answers bundle RPCs send ([`wire::EncodedBundle`], served through [`served_api`]).
//! * [`inventory`]: what a catalog holds, as `opreg list`'s rows (from the model, or from the
//!   store's tables).
//! * [`diff`]: comparing two catalogs (`opreg diff`), stranding asked of [`graph::resolve`].
//! * [`template`]: catalog templates (basic, semver) expanded into a catalog, bundles rendered
//!   by a caller-given renderer.
//! * [`store`]: the SQLite store: schema from `migrations/`, atomic writes of a
//!   `ValidCatalog`, materialized edges, read-only queries.
//! * [`image`]: image references as SOURCEs: pulls catalog, index and bundle images from
//!   registries or OCI layouts into a private directory whose labelled content the
//!   [`catalog`] readers then read, like any path.
//! * [`source`]: SOURCE arguments: telling formats apart and reading any mix of them (the
//!   catalog readers, or the store for opreg's own databases).
//! * [`server`]: the gRPC surface: `api.Registry`, `api.ExperimentalRegistry`,
//!   `opreg.v1.Upgrades`, health and reflection, with graceful shutdown; the unary bundle
//!   RPCs' answers are sent piece by piece ([`server::direct`]).
//! * [`http`]: catalogd's HTTP API (OLM v1), `/healthz`, `/readyz`, `/metrics`, from the same
//!   served version as [`server`]; [`conn`]: the connection layer both use (accept loop, TLS,
//!   graceful shutdown); [`metrics`]: the Prometheus metrics and per-call logs of both.
//! * [`cli`]: one file per subcommand; exit codes; logging.
//! * [`demo`]: the embedded demo catalog served when no SOURCE is given.
//!
//! Errors: library code returns `anyhow::Result` for operational failures (I/O, SQLite) and
//! [`diag::Diagnostics`] for problems in the catalog itself, because a user needs every catalog
//! problem at once but only the first operational one. The CLI maps them to exit codes.

// A `Diagnostic` is a rich, cold-path error value (file, scope, rule, message); boxing it on
// every fallible parse helper would only add noise.
#![allow(clippy::result_large_err)]

pub mod api {
    //! Generated types and services of `proto/registry.proto` (`package api`).
    tonic::include_proto!("api");
    /// Encoded descriptors of every proto opreg serves, for reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/descriptor.bin"));
}

pub mod served_api {
    //! The server side of `api.Registry` as opreg serves it: the types of [`crate::api`], but
    //! bundles are [`crate::wire::EncodedBundle`]s, sent as the bytes the store splices.
    include!(concat!(env!("OUT_DIR"), "/served/api.rs"));
}

pub mod upgrades_api {
    //! Generated types of `proto/upgrades.proto` (`package opreg.v1`).
    tonic::include_proto!("opreg.v1");
}

pub mod catalog;
pub mod cli;
pub mod conn;
pub mod demo;
pub mod diag;
pub mod diff;
pub mod graph;
pub mod http;
pub mod image;
pub mod imageref;
pub mod inventory;
pub mod json;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod names;
pub mod release;
pub mod server;
pub mod source;
pub mod sqlite;
pub mod store;
pub mod template;
pub mod text;
pub mod validate;
pub mod version;
pub mod wire;
pub mod yaml;
