//! `opreg init`'s work: an `olm.package` blob from a package name, a default channel, and
//! optional icon and description files, as `opm init` makes it. The icon's media type is
//! detected from its bytes ([`super::icon`]) and must be an image's.

use crate::error::{Error, Result};
use crate::model::{Catalog, Icon, Package};
use base64::Engine;
use std::path::PathBuf;

/// What to put in the package blob.
#[derive(Clone, Debug, Default)]
pub struct InitOptions {
    pub package: String,
    pub default_channel: String,
    /// A file whose bytes become the icon.
    pub icon: Option<PathBuf>,
    /// A file whose text becomes the description.
    pub description: Option<PathBuf>,
}

/// The catalog holding the one package blob. A package without a name is a catalog with no
/// package: opm writes nothing for it.
pub fn init(o: &InitOptions) -> Result<Catalog> {
    let read = |p: &PathBuf, what: &str| {
        std::fs::read(p)
            .map_err(|e| Error::failed(format!("{}: cannot read the {what}: {e}", p.display())))
    };
    let description = match &o.description {
        Some(p) => {
            let bytes = read(p, "description")?;
            // Go keeps the bytes in its string; opreg's model holds UTF-8 text.
            String::from_utf8(bytes).map_err(|_| {
                Error::failed(format!(
                    "{}: the description is not UTF-8 text",
                    p.display()
                ))
            })?
        }
        None => String::new(),
    };
    let icon = match &o.icon {
        Some(p) => {
            let data = read(p, "icon")?;
            let mediatype = super::icon::detect(&data).map_err(|e| {
                Error::failed(format!("{}: detect icon mediatype: {e}", p.display()))
            })?;
            if !mediatype.starts_with("image/") {
                return Err(Error::failed(format!(
                    "{}: detected invalid type {}: not an image",
                    p.display(),
                    crate::text::go_quote(mediatype)
                )));
            }
            Some(Icon {
                base64data: base64::engine::general_purpose::STANDARD.encode(&data),
                mediatype: mediatype.to_string(),
            })
        }
        None => None,
    };
    let mut cat = Catalog::default();
    if !o.package.is_empty() {
        let pkg = Package {
            name: o.package.clone(),
            default_channel: o.default_channel.clone(),
            icon,
            description,
            ..Package::default()
        };
        cat.packages.insert(pkg.name.clone(), pkg);
    }
    Ok(cat)
}
