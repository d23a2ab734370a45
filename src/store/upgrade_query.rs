//! Store-backed view of a package's update graph for the upgrade resolver.
