//! The OCI formats: what an image is made of and how it is laid out on disk, with no network.
//! The registry client reads and writes the same documents; the copy between any two ends is
//! `image::copy`'s.
//!
//! | file | owns |
//! |---|---|
//! | [`manifest`] | typed manifests, indexes, descriptors and platforms; the media types; config labels |
//! | [`source`] | [`source::BlobSource`], what an image is read from (a registry, a layout), and the size-limited read |
//! | [`image`] | the one image reader: an image or index with all it references, from any [`source::BlobSource`], media types kept |
//! | [`layout_reader`] | the one OCI layout reader: `index.json`'s entries, manifests by tag or digest, blobs |
//! | [`layout_writer`] | the one OCI layout writer: blobs verified and renamed into place, `index.json` last |
//! | [`cache`] | the content-addressed blob cache and the verifying reader |
//!
//! [`image`]'s tests (every media type the reader keeps) are in a file of their own beside it.

pub mod cache;
pub mod image;
pub mod layout_reader;
pub mod layout_writer;
pub mod manifest;
pub mod source;
