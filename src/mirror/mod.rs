//! `opreg mirror`'s library: what to copy into a disconnected registry, decided before anything
//! is copied.
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | oc-mirror v2's `ImageSetConfiguration` (the operator part), read and validated |
//! | [`filter`] | the bundles an operator entry selects, with oc-mirror's filter semantics |
//! | [`deps`] | the bundles the kept bundles' `olm.package.required` and `olm.gvk.required` add |

pub mod config;
pub mod deps;
pub mod filter;
