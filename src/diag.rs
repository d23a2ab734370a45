//! Diagnostics: every problem found while reading or validating a catalog.
//!
//! A diagnostic names where it was found (file and document), what it is about (package,
//! channel, bundle), and the rule it breaks, with a stable rule id that tests and scripts can
//! match on. Readers and validators collect diagnostics instead of stopping at the first one,
//! so a user sees every problem in one run.

use crate::model::Origin;
use std::fmt;

/// Stable identifiers of the rules opreg checks. The id is printed as `error[<id>]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// A file could not be read or decoded (I/O, YAML or JSON syntax, wrong types).
    Parse,
    /// A meta has no `schema`, or an object/field has the wrong shape.
    Schema,
    /// Two packages, channels, bundles, entries or versions collide.
    Duplicate,
    /// A channel, bundle or deprecation names a package that does not exist.
    UnknownPackage,
    /// Package names must be DNS-1123 labels.
    PackageName,
    /// The default channel must be set and exist.
    DefaultChannel,
    /// A package needs a channel; a channel needs an entry.
    Empty,
    /// Each channel has exactly one head.
    ChannelHead,
    /// The replaces chain must not loop.
    Cycle,
    /// Every entry must be on the replaces chain or skipped.
    Stranded,
    /// A channel entry names a bundle that has no olm.bundle, or a bundle is in no channel.
    Membership,
    /// Exactly one `olm.package` property naming the bundle's package, with a semver version.
    PackageProperty,
    /// Property values must decode for their type.
    Property,
    /// skipRange must parse under the blang grammar.
    SkipRange,
    /// A bundle needs an image or inline objects.
    Image,
    /// Deprecation entries must reference existing objects and carry a message.
    Deprecation,
    /// `olm.maxOpenShiftVersion` values OpenShift would reject.
    MaxOpenShiftVersion,
    /// Upgrade-graph lint: graphs that classic OLM and OLM v1 resolve differently.
    UpgradeLint,
    /// A package icon's `base64data` must be standard base64.
    Icon,
    /// A custom meta's schema and package must be usable as keys (upstream's cache build).
    CustomMeta,
    /// A bundle release: its format, the normalized name, no build metadata beside it.
    Release,
    /// A plain YAML scalar that opreg reads as a string and opm, as YAML 1.1, as a boolean or
    /// a number.
    Yaml11,
}

impl Rule {
    /// Every rule, in declaration order.
    pub const ALL: [Rule; 22] = [
        Rule::Parse,
        Rule::Schema,
        Rule::Duplicate,
        Rule::UnknownPackage,
        Rule::PackageName,
        Rule::DefaultChannel,
        Rule::Empty,
        Rule::ChannelHead,
        Rule::Cycle,
        Rule::Stranded,
        Rule::Membership,
        Rule::PackageProperty,
        Rule::Property,
        Rule::SkipRange,
        Rule::Image,
        Rule::Deprecation,
        Rule::MaxOpenShiftVersion,
        Rule::UpgradeLint,
        Rule::Icon,
        Rule::CustomMeta,
        Rule::Release,
        Rule::Yaml11,
    ];

    /// False for the rules that only ever warn; breaking any other makes a catalog invalid.
    pub fn can_fail_a_catalog(self) -> bool {
        !matches!(
            self,
            Rule::MaxOpenShiftVersion | Rule::UpgradeLint | Rule::Yaml11
        )
    }

    pub fn id(self) -> &'static str {
        match self {
            Rule::Parse => "parse",
            Rule::Schema => "schema",
            Rule::Duplicate => "duplicate",
            Rule::UnknownPackage => "unknown-package",
            Rule::PackageName => "package-name",
            Rule::DefaultChannel => "default-channel",
            Rule::Empty => "empty",
            Rule::ChannelHead => "channel-head",
            Rule::Cycle => "replaces-cycle",
            Rule::Stranded => "stranded",
            Rule::Membership => "membership",
            Rule::PackageProperty => "package-property",
            Rule::Property => "property",
            Rule::SkipRange => "skip-range",
            Rule::Image => "image",
            Rule::Deprecation => "deprecation",
            Rule::MaxOpenShiftVersion => "max-openshift-version",
            Rule::UpgradeLint => "upgrade-lint",
            Rule::Icon => "icon",
            Rule::CustomMeta => "custom-meta",
            Rule::Release => "release",
            Rule::Yaml11 => "yaml11",
        }
    }
}

#[cfg(test)]
mod rule_tests {
    use super::Rule;

    /// `ALL` must list every variant: a new rule that is not added fails to compile here.
    #[test]
    fn all_lists_every_rule_once() {
        for r in Rule::ALL {
            match r {
                Rule::Parse
                | Rule::Schema
                | Rule::Duplicate
                | Rule::UnknownPackage
                | Rule::PackageName
                | Rule::DefaultChannel
                | Rule::Empty
                | Rule::ChannelHead
                | Rule::Cycle
                | Rule::Stranded
                | Rule::Membership
                | Rule::PackageProperty
                | Rule::Property
                | Rule::SkipRange
                | Rule::Image
                | Rule::Deprecation
                | Rule::MaxOpenShiftVersion
                | Rule::UpgradeLint
                | Rule::Icon
                | Rule::CustomMeta
                | Rule::Release
                | Rule::Yaml11 => {}
            }
        }
        let ids: std::collections::BTreeSet<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), Rule::ALL.len());
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    /// The level as text and JSON spell it: `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub rule: Rule,
    pub origin: Option<Origin>,
    pub package: Option<String>,
    pub channel: Option<String>,
    pub bundle: Option<String>,
    pub message: String,
    /// What to change, and where: printed on a second line, `  help: ...`.
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(rule: Rule, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            rule,
            origin: None,
            package: None,
            channel: None,
            bundle: None,
            message: message.into(),
            help: None,
        }
    }
    /// Scoped to a bundle: its file, package and name.
    pub fn on_bundle(self, b: &crate::model::Bundle) -> Self {
        self.at(&b.origin).package(&b.package).bundle(&b.name)
    }
    /// Scoped to a channel of `package`: its file, package and name.
    pub fn on_channel(self, package: &str, ch: &crate::model::Channel) -> Self {
        self.at(&ch.origin).package(package).channel(&ch.name)
    }
    pub fn warning(rule: Rule, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(rule, message)
        }
    }
    pub fn at(mut self, origin: &Origin) -> Self {
        self.origin = Some(origin.clone());
        self
    }
    pub fn package(mut self, p: &str) -> Self {
        self.package = Some(p.to_string());
        self
    }
    pub fn channel(mut self, c: &str) -> Self {
        self.channel = Some(c.to_string());
        self
    }
    pub fn bundle(mut self, b: &str) -> Self {
        self.bundle = Some(b.to_string());
        self
    }
    /// Adds a `help:` line ("" adds none).
    pub fn help(mut self, h: impl Into<String>) -> Self {
        let h = h.into();
        self.help = (!h.is_empty()).then_some(h);
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]: ", self.severity.as_str(), self.rule.id())?;
        if let Some(o) = &self.origin {
            write!(f, "{o}: ")?;
        }
        let mut scope = Vec::new();
        if let Some(p) = &self.package {
            scope.push(format!("package {}", quoted(p)));
        }
        if let Some(c) = &self.channel {
            scope.push(format!("channel {}", quoted(c)));
        }
        if let Some(b) = &self.bundle {
            scope.push(format!("bundle {}", quoted(b)));
        }
        if !scope.is_empty() {
            write!(f, "{}: ", scope.join(", "))?;
        }
        write!(f, "{}", crate::text::elide(&self.message, MAX_MESSAGE, 512))?;
        if let Some(h) = &self.help {
            write!(f, "\n  help: {}", crate::text::elide(h, MAX_MESSAGE, 512))?;
        }
        Ok(())
    }
}

/// Longest name printed in full in a diagnostic's scope.
const MAX_NAME: usize = 256;
/// Longest message printed in full. A catalog can hold names of any length (a 50 MB package
/// name is one string); a diagnostic quoting it stays one readable line.
const MAX_MESSAGE: usize = 4096;

/// `name` quoted, its middle elided when it is longer than [`MAX_NAME`] bytes.
fn quoted(name: &str) -> String {
    if name.len() <= MAX_NAME {
        format!("{name:?}")
    } else {
        let head = name.floor_char_boundary(MAX_NAME);
        format!("{:?}… ({} bytes)", &name[..head], name.len())
    }
}

/// A non-empty list of diagnostics that stopped an operation.
#[derive(Debug, Clone)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.is_error())
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_names_and_messages_are_elided_on_char_boundaries() {
        let name = "é".repeat(100_000);
        let d = Diagnostic::error(
            Rule::PackageName,
            format!("bad name {name:?}: must be short"),
        )
        .package(&name);
        let line = d.to_string();
        assert!(line.len() < MAX_NAME + MAX_MESSAGE + 200, "{}", line.len());
        assert!(line.starts_with("error[package-name]: package \"éé"));
        assert!(line.contains("(200000 bytes)"));
        assert!(line.ends_with("\": must be short"));
        assert!(line.contains("bytes elided]"));
    }
}
