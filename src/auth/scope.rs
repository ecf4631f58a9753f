//! [`Scope`]: what a token may do.

/// What a token may do: `read` (queries, lookups, statistics), `write`
/// (points, rollups, annotations, new UIDs) or `admin` (everything,
/// including deletes, UID renames and `dropcaches`). `read` and `write` are
/// apart, so that a collector's token cannot read and a dashboard's cannot
/// write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Read,
    Write,
    Admin,
}

impl Scope {
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "read" => Some(Scope::Read),
            "write" => Some(Scope::Write),
            "admin" => Some(Scope::Admin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    /// True if a token of this scope may do what `needed` allows.
    pub fn allows(self, needed: Scope) -> bool {
        self == Scope::Admin || self == needed
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_allows_all_and_the_others_only_themselves() {
        for s in [Scope::Read, Scope::Write, Scope::Admin] {
            assert!(Scope::Admin.allows(s));
            assert_eq!(Scope::parse(s.as_str()), Some(s));
        }
        assert!(!Scope::Read.allows(Scope::Write));
        assert!(!Scope::Write.allows(Scope::Read));
        assert!(!Scope::Write.allows(Scope::Admin));
        assert_eq!(Scope::parse("Admin"), None);
    }
}
