//! Flag values that are library enums: their names and help on the command line. The library
//! knows nothing of clap; the `ValueEnum` implementations live here.

use crate::catalog::fbc::render::RenderFormat;
use crate::draw::Format;
use crate::image::opm::MigrateLevel;
use clap::builder::PossibleValue;
use clap::ValueEnum;

/// `impl ValueEnum for TYPE`: each variant with its name on the command line and its help.
macro_rules! value_enum {
    ($t:ty { $($v:path => $name:literal $(: $help:literal)?),* $(,)? }) => {
        impl ValueEnum for $t {
            fn value_variants<'a>() -> &'a [Self] {
                &[$($v),*]
            }
            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(match self {
                    $($v => PossibleValue::new($name)$(.help($help))?,)*
                })
            }
        }
    };
}

value_enum!(RenderFormat {
    RenderFormat::Json => "json",
    RenderFormat::Yaml => "yaml",
});

value_enum!(Format {
    Format::Mermaid => "mermaid",
    Format::Dot => "dot",
});

value_enum!(MigrateLevel {
    MigrateLevel::None => "none": "No migration (opm's default)",
    MigrateLevel::BundleObjectToCsvMetadata => "bundle-object-to-csv-metadata":
        "Move bundles' `olm.bundle.object` properties to one `olm.csv.metadata`",
});
