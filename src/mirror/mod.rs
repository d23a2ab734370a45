//! `opreg mirror`'s library: what to copy into a disconnected registry, decided before anything
//! is copied.
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | oc-mirror v2's `ImageSetConfiguration` (the operator part), read and validated |
//! | [`filter`] | the bundles an operator entry selects, with oc-mirror's filter semantics |
//! | [`images`] | the images to copy (bundles', related, additional, less blocked) and their names at the destination |
//! | [`deps`] | the bundles the kept bundles' `olm.package.required` and `olm.gvk.required` add |
//! | [`archive`] | opreg's archives for mirror to disk (`mirror_000001.tar`, …): packed deterministically, unpacked with every blob verified |
//! | [`history`] | the workspace's `history.json`: what each mirror-to-disk run added, and what `--since` packs |
//! | [`resources`] | the cluster resources oc-mirror v2 writes (IDMS, ITMS, CatalogSource, ClusterCatalog), rendered and written |

pub mod archive;
pub mod config;
pub mod deps;
pub mod filter;
pub mod history;
pub mod images;
pub mod resources;
