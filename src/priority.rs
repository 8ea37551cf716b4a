//! How urgently a proof needs a GPU: the one type the protocol, the scheduler and the locks all
//! use, kept at the bottom so that none of them imports another for it.

/// How urgently a proof needs a GPU. A prover holding a device yields it, between chunks, to a
/// prover of a strictly higher priority that asks for it; equal priorities never preempt each
/// other. bellperson's `priority: bool` maps `false` to [`Priority::Normal`] and `true` to
/// [`Priority::High`].
///
/// With the `serde` feature it serializes as its name (`"low"`, `"normal"`, `"high"`) and reads
/// back from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
pub enum Priority {
    /// Background work (sealing): uses a GPU when nobody above it wants one.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Deadline-bound work (PoSt): takes a GPU from lower priorities.
    High,
}

impl Priority {
    /// Every level, lowest first.
    pub const ALL: [Priority; 3] = [Priority::Low, Priority::Normal, Priority::High];

    /// The level as a number, 0 for the lowest.
    pub fn level(self) -> usize {
        self as usize
    }

    /// The level numbered `level` (see [`Priority::level`]).
    pub fn from_level(level: usize) -> Option<Priority> {
        Priority::ALL.get(level).copied()
    }

    /// bellperson's mapping: `true` is high priority, `false` the default.
    pub fn from_bool(high: bool) -> Priority {
        if high {
            Priority::High
        } else {
            Priority::Normal
        }
    }

    /// `low`, `normal` or `high`.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
        }
    }
}

/// A string that names no [`Priority`] (they are `low`, `normal` and `high`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown priority {0:?}: low, normal or high")]
pub struct ParsePriorityError(pub String);

impl std::str::FromStr for Priority {
    type Err = ParsePriorityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Priority::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| ParsePriorityError(s.to_owned()))
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
