//! Classic OLM's choice: among the entries on the channel's ordered chain that replace, skip
//! or range-cover the installed bundle, the one closest to the channel head.

use super::*;

impl Resolver<'_> {
    /// Classic OLM: entries on the channel's ordered chain that replace, skip or
    /// range-cover the installed bundle; the one closest to the head wins.
    pub(super) fn classic_hop(&self, inst: &Installed) -> Result<Hop, ResolveError> {
        let (pkg, ch) = (&self.facts.name, &self.classic_channel);
        let chain = self.g.classic_chain(pkg, ch)?;
        if chain.is_empty() {
            return Err(invalid(format!(
                "channel {ch:?} of package {pkg:?} has no unique head; \
                 classic OLM requires a unique replacement chain"
            )));
        }
        let ups = by_entry(self.g.upgrades_from(pkg, ch, inst)?);
        let pick = chain.iter().find(|n| ups.contains_key(*n));
        let mut rejected = Vec::new();
        for b in self.facts.bundles.values() {
            if b.name == inst.name || Some(&b.name) == pick {
                continue;
            }
            let on_chain = chain.contains(&b.name);
            let head = pick.map(String::as_str).unwrap_or("");
            let (reason, detail) = match ups.get(&b.name) {
                _ if !b.channels.contains(ch) => {
                    ("not-in-channel", format!("not an entry of channel {ch:?}"))
                }
                Some(k) if !on_chain => (
                    "skipped-off-chain",
                    format!(
                        "has a {} edge from {}, but is not on the channel's replaces chain \
                         from the head (skipped by another entry, or not reached): \
                         classic OLM never installs it",
                        k.as_str(),
                        inst.name
                    ),
                ),
                Some(k) => (
                    "farther-from-head",
                    format!(
                        "has a {} edge from {}, but {head} is closer to the channel head",
                        k.as_str(),
                        inst.name
                    ),
                ),
                None => (
                    "not-a-successor",
                    format!(
                        "neither replaces nor skips {}, and has no skipRange covering {}",
                        inst.name, inst.version
                    ),
                ),
            };
            rejected.push(reject(b, reason, detail));
        }
        Ok(match pick.and_then(|n| self.facts.bundles.get(n)) {
            Some(b) => Hop::To(step(b, ch, ups[&b.name].as_str(), inst)),
            None => Hop::Stop {
                rejected,
                error: None,
            },
        })
    }
}
