//! `opreg mirror`'s library: what to copy into a disconnected registry, decided before anything
//! is copied, then the copy, the rebuilt catalogs and the record of the run.
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | oc-mirror v2's `ImageSetConfiguration` (the operator part), read and validated |
//! | [`filter`] | the bundles an operator entry selects, with oc-mirror's filter semantics |
//! | [`deps`] | the bundles the kept bundles' `olm.package.required` and `olm.gvk.required` add |
//! | [`images`] | the images to copy (bundles', related, additional, less blocked) and their names at the destination |
//! | [`heads`] | one head per channel: the replaces chain between two kept heads kept |
//! | [`plan`] | each catalog pinned, read, filtered, completed and validated; the image list |
//! | [`placements`] | where each blob was sent, kept across runs so that a rerun mounts instead of uploading |
//! | [`ends`] | the two ends of a copy: registries, or the OCI layout of a mirror to disk, with its naming |
//! | [`record`] | how the append-only records grow: whole lines, a torn last line ended first |
//! | [`completed`] | the images runs completed at the destination registry, kept so that a rerun does not ask about them again |
//! | [`transfer`] | copying the images concurrently, whole and by digest, skipping what is there |
//! | [`signatures`] | an image's signature, attestation and SBOM tags and referrers at its source |
//! | [`rebuild`] | the filtered catalog's image, rebuilt on its source image and pushed |
//! | [`workspace`] | the plan and the run's record as files |
//! | [`destination`] | where a mirror goes, as the command line names it (`docker://`, `file://`, `--from`) |
//! | [`run`] | the whole mirror, in order |
//! | [`disk`] | a mirror on disk (`file://DIR`): its layout, listing, configuration and history, packed into archives and unpacked |
//! | [`archive`] | opreg's archives for mirror to disk (`mirror_000001.tar`, …): packed deterministically, unpacked with every blob verified |
//! | [`history`] | the workspace's `history.json`: what each mirror-to-disk run added, and what `--since` packs |
//! | [`standing`] | what stands at the destination by the workspace's record: catalogs, images, what names each |
//! | [`delete`] | `mirror delete`: oc-mirror's two phases (generate a `DeleteImageList`, execute it), made safe |
//! | [`prune`] | `mirror --prune`: what earlier runs mirrored and this run no longer selects, deleted by `delete`'s rules |
//! | [`resources`] | the cluster resources oc-mirror v2 writes (IDMS, ITMS, CatalogSource, ClusterCatalog), rendered and written |

/// A mirror configuration, archive, history, listing, template or resource file opreg cannot
/// read or write: the message names the file or entry and says why, on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MirrorError(String);

impl From<String> for MirrorError {
    fn from(what: String) -> Self {
        MirrorError(what)
    }
}

impl From<&str> for MirrorError {
    fn from(what: &str) -> Self {
        MirrorError(what.to_string())
    }
}

pub mod archive;
pub mod completed;
pub mod config;
pub mod delete;
pub mod deps;
pub mod destination;
pub mod disk;
pub mod ends;
pub mod filter;
pub mod heads;
pub mod history;
pub mod images;
pub mod placements;
pub mod plan;
pub mod prune;
pub mod rebuild;
pub mod record;
pub mod resources;
pub mod run;
pub mod signatures;
pub mod standing;
pub mod transfer;
pub mod workspace;
