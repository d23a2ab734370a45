//! opreg: an operator catalog registry.
//!
//! Data flows one way:
//!
//! ```text
//!  input formats ──► model ──► validation ──► store (SQLite) ──► gRPC server
//!  (catalog::*)     (model)    (validate,      (store)            (server)
//!                               graph)
//! ```
//!
//! Module map:
//!
//! * [`catalog`]: reads every input format (FBC, package manifests, bundle directories,
//!   legacy SQLite indexes, opreg databases) into [`model`] declarations and assembles them.
//!   [`catalog::fbc`] also renders a catalog back to FBC.
//! * [`image`]: image references as SOURCEs: pulls catalog, index and bundle images from
//!   registries or OCI layouts and hands their labelled content to the [`catalog`] readers.
//! * [`model`]: the catalog as plain data: packages → channels → entries, bundles with
//!   properties. No I/O, no rules.
//! * [`graph`]: the update-graph rules, once: which entry upgrades from which bundle
//!   (replaces, skips, skipRange), channel heads, chain walks, the blang and Masterminds range
//!   grammars, and upgrade resolution under classic, OLM v1 and semver rules.
//! * [`validate`]: upstream's catalog rules, all errors at once, each naming file and rule.
//! * [`diag`]: the diagnostic type those errors use.
//! * [`wire`]: model → `api.Bundle` (field-fill rules, csvJson synthesis).
//! * [`store`]: the SQLite store: schema from `migrations/`, atomic writes, materialized edges,
//!   read-only queries.
//! * [`server`]: the gRPC surface: `api.Registry`, `api.ExperimentalRegistry`,
//!   `opreg.v1.Upgrades`, health and reflection, with graceful shutdown.
//! * [`cli`]: one file per subcommand.
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

pub mod upgrades_api {
    //! Generated types of `proto/upgrades.proto` (`package opreg.v1`).
    tonic::include_proto!("opreg.v1");
}

pub mod catalog;
pub mod cli;
pub mod demo;
pub mod diag;
pub mod graph;
pub mod image;
pub mod json;
pub mod model;
pub mod server;
pub mod store;
pub mod validate;
pub mod wire;
pub mod yaml;
