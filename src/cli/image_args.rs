//! The image flags every image-reading command shares, turned into the library's
//! [`ImageOptions`].

use super::connection_args::RegistryArgs;
use crate::image::{ImageOptions, DEFAULT_MAX_LAYER_SIZE, DEFAULT_MAX_MANIFEST_SIZE};
use std::path::PathBuf;

// Options for SOURCEs that are image references, flattened into each subcommand. (A plain
// comment: a doc comment here would become the about text of every subcommand it is in.)
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Image sources")]
pub struct ImageArgs {
    #[command(flatten)]
    pub registries: RegistryArgs,
    /// Deprecated in opm, kept for its scripts: plain HTTP, the same as --use-http.
    #[arg(long, hide = true, conflicts_with_all = ["use_http", "skip_tls_verify"])]
    pub skip_tls: bool,
    /// Platform to pick from multi-arch images [default: linux/<host architecture>].
    #[arg(long, value_name = "OS/ARCH[/VARIANT]")]
    pub platform: Option<String>,
    /// Content-addressed blob cache [default: $XDG_CACHE_HOME/opreg/images, else
    /// ~/.cache/opreg/images].
    #[arg(long, value_name = "DIR", conflicts_with = "no_image_cache")]
    pub image_cache: Option<PathBuf>,
    /// Keep no downloaded blobs.
    #[arg(long)]
    pub no_image_cache: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// A containers-policy.json every image pulled must satisfy (sigstoreSigned keys,
    /// reject, insecureAcceptAnything); without it, and without the variable, any image is used.
    #[arg(long, value_name = "FILE", env = "OPREG_SIGNATURE_POLICY")]
    pub signature_policy: Option<PathBuf>,
}

// The size limits of what is pulled: in every command that pulls images (the pull's errors
// name these flags).
#[derive(clap::Args, Debug, Clone)]
pub struct LimitArgs {
    /// Largest manifest or image config accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_MANIFEST_SIZE)]
    pub max_manifest_size: u64,
    /// Largest layer accepted, and most bytes extracted from an image, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LAYER_SIZE)]
    pub max_layer_size: u64,
}

impl ImageArgs {
    /// The library's options for these flags.
    pub fn options(&self) -> ImageOptions {
        let mut connection = self.registries.connection();
        connection.use_http |= self.skip_tls;
        ImageOptions {
            connection,
            platform: self.platform.clone(),
            image_cache: self.image_cache.clone(),
            no_image_cache: self.no_image_cache,
            max_manifest_size: self.limits.max_manifest_size,
            max_layer_size: self.limits.max_layer_size,
            signature_policy: self.signature_policy.clone(),
        }
    }
}
