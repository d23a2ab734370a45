//! Version grammars, a leaf module: the dialects of the two Go libraries OLM parses versions
//! with. Catalog readers, validation and the update-graph rules all parse versions here, so
//! none of them has to import another just for a version.
//!
//! * [`blang`]: `github.com/blang/semver/v4`: bundle versions (strict and tolerant) and
//!   `olm.skipRange`.
//! * [`masterminds`]: `github.com/Masterminds/semver/v3`: OLM v1 version constraints.

pub mod blang;
pub mod masterminds;
