//! opreg: an operator catalog registry.
//!
//! Data flows one way:
//!
//! ```text
//!  SOURCE ──► load/ingest ──► source ──► catalog::* ──► model ──► validate ──► store ──► server, http
//!  (paths,     (the app)      (detect)   (readers)      (data)    (+ graph)    (SQLite)   (gRPC, catalogd)
//!   images)
//! ```
//!
//! Module map, lowest layer first (ARCHITECTURE.md's `layers` block says which module may use
//! which, and `tests/layers.rs` enforces it):
//!
//! * Leaves: [`text`] (Go `%q` quoting, "did you mean"), [`json`] (canonical JSON, Go's
//!   escaping), [`yaml`] (YAML guards, where keys stand), [`version`] (the blang and
//!   Masterminds grammars), [`release`] (bundle release versions), [`imageref`] (the docker
//!   reference grammar), [`digest`] (content digests: parse, validate, compute, verify,
//!   cosign's tag form), [`atomic`] (putting a file or a tree in place whole), [`duration`] (Go
//!   durations), [`names`] (DNS-1123 rules), [`sqlite`] (the one read-only open), [`memory`]
//!   (allocator settings, giving memory back when idle), [`interrupt`] (SIGINT/SIGTERM as a
//!   flag, or as the end of a command), [`log_sink`] (where log lines go).
//! * [`model`]: the catalog as plain data. No I/O, no rules.
//! * [`diag`]: the catalog diagnostic; [`error`]: the error every application function returns.
//! * [`graph`]: the update-graph rules, once, and upgrade resolution ([`graph::resolve`]).
//! * [`catalog`]: one reader per input format, assembled into a [`model::Catalog`];
//!   [`catalog::fbc`] also renders FBC; [`catalog::yaml11`] warns where opm's YAML 1.1 reads a
//!   plain scalar as something other than a string.
//! * [`validate`]: upstream's catalog rules; only it makes a [`validate::ValidCatalog`].
//! * [`wire`]: model → `api.Bundle`, once per bundle at ingest.
//! * [`inventory`] (`list`'s rows), [`diff`] (comparing catalogs), [`draw`] (update graphs
//!   as Mermaid or DOT), [`template`] (catalog templates).
//! * [`store`]: the SQLite store: schema from `migrations/`, atomic writes, read-only queries.
//! * [`sign`]: cosign's key files and tag-based signatures, and containers-policy.json with its
//!   verdict on an image (pure: the registry side is `image::signature`'s).
//! * [`registry`]: the transport: one client per registry, auth files, trust (system store,
//!   certs.d, `--cert-dir`, mTLS), one retry policy, uploads.
//! * [`oci`]: the OCI formats: typed manifests, indexes and descriptors, media types, OCI
//!   layouts (one reader, one writer), the blob cache.
//! * [`image`]: image references: pulling into a directory the readers read, building and
//!   pushing catalog images.
//! * [`imagebuild`]: building catalog images (layers, config, base, OCI layouts) from a
//!   validated catalog and its pre-built cache.
//! * [`imagecheck`]: every image a catalog names looked up at its registry (through IDMS,
//!   ITMS and ICSP mirrors), with image rules (`validate --images`).
//! * [`source`]: SOURCE arguments: telling formats apart, reading any mix, the source digest.
//! * [`progress`]: progress of long library work, reported to a caller's [`progress::Progress`].
//! * [`query`]: the questions commands ask of SOURCEs (`list`, `upgrade`, `validate`), a built
//!   database asked through the store, anything else loaded.
//! * The application: [`load`] (SOURCEs into a valid catalog, every diagnostic returned),
//!   [`ingest`] (the one build path, streaming on three threads), [`authoring`]
//!   (`init`, `render-template`, `convert-template`, `migrate`); [`mirror`] (what `opreg
//!   mirror` copies: oc-mirror's configuration, the catalog filter).
//! * [`metrics`] (Prometheus metrics, per-call logs) and [`conn`] (the accept loop, slow-client
//!   limits, write coalescing and TLS both ports use); [`server`] (the gRPC surface) and
//!   [`http`] (catalogd's HTTP API, health, metrics), siblings on one served version.
//! * [`cache`]: a SOURCE built into (or reused from) a cache directory as an open store;
//!   `serve` and `imagebuild` both call it.
//! * [`serve`] (`opreg serve`: runtime, reloads, watch, poll) and [`probe`] (the health
//!   probe client).
//! * [`cli`]: parses arguments, calls one library function per command, prints through
//!   `cli::output`, maps [`error::Error`] to exit codes in `cli::exit_code`.
//! * [`demo`]: the embedded demo catalog served when no SOURCE is given.
//!
//! Errors: catalog problems are [`diag::Diagnostic`]s, all reported at once, because a user
//! needs every catalog problem in one run; operational failures (I/O, SQLite, the network) are
//! `anyhow` chains, the first one. Both travel in [`error::Error`], which the CLI maps to exit
//! codes. The library never prints and never exits.

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

pub mod atomic;
pub mod authoring;
pub mod cache;
pub mod catalog;
pub mod cli;
pub mod conn;
pub mod demo;
pub mod diag;
pub mod diff;
pub mod digest;
pub mod draw;
pub mod duration;
pub mod error;
pub mod graph;
pub mod http;
pub mod image;
pub mod imagebuild;
pub mod imagecheck;
pub mod imageref;
pub mod ingest;
pub mod interrupt;
pub mod inventory;
pub mod json;
pub mod load;
pub mod log_sink;
pub mod memory;
pub mod metrics;
pub mod mirror;
pub mod model;
pub mod names;
pub mod oci;
pub mod probe;
pub mod progress;
pub mod query;
pub mod registry;
pub mod release;
pub mod serve;
pub mod server;
pub mod sign;
pub mod source;
pub mod sqlite;
pub mod store;
pub mod template;
pub mod text;
pub mod validate;
pub mod version;
pub mod wire;
pub mod yaml;
