//! Diagnostics as data: a stable code, a severity, a message, labelled origins
//! and hints. Rendering (miette, JSON) happens at the edge.

use std::fmt;

use super::span::Origin;

macro_rules! codes {
    ($($variant:ident => $text:literal, $desc:literal;)*) => {
        /// A stable diagnostic code. The text form (`load::unknown-key`) is part
        /// of the interface: scripts match on it, so codes are never renamed.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $(#[doc = $desc] $variant,)*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable text form.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text,)* }
            }

            /// One line saying what the code means.
            pub fn description(self) -> &'static str {
                match self { $(Code::$variant => $desc,)* }
            }
        }
    };
}

codes! {
    Io => "load::io", "a composition file could not be read";
    Git => "load::git", "a composition could not be read at a git revision";
    Syntax => "load::syntax", "the file is not valid TOML";
    Suppressed => "load::suppressed", "further diagnostics of a file with syntax errors, not shown";
    UnknownKey => "load::unknown-key", "a key the format does not define";
    WrongType => "load::wrong-type", "a value of the wrong type";
    MissingKey => "load::missing-key", "a required key is missing";
    UnsupportedVersion => "load::unsupported-version", "the composition format version is not supported";
    DuplicateId => "load::duplicate-id", "the same id is defined twice";
    IncludeCycle => "load::include-cycle", "files include each other in a cycle";
    IncludeMissing => "load::include-missing", "an included path does not exist";
    IncludeOutside => "load::include-outside", "a composition file, include, prompt file or lock lies outside the workspace";
    IncludeNotToml => "load::include-not-toml", "an include names a file that is not a `.toml` file";
    BadVersion => "load::bad-version", "a version that cannot be parsed";
    BadSpecifier => "load::bad-specifier", "a requirement specifier that cannot be parsed";
    BadName => "load::bad-name", "an invalid id, capability, tool or scope name";
    UnknownPlugin => "load::unknown-plugin", "an entry names a plugin that no catalog defines";
    UnknownScope => "load::unknown-scope", "a scope path that is not declared";
    UnknownEntry => "load::unknown-entry", "a reference to an entry id that does not exist";
    DuplicateContract => "load::duplicate-contract", "two provided versions share a contract generation";
    RequiredAndOptional => "load::required-and-optional", "a capability is both required and optional";
    DuplicateTool => "load::duplicate-tool", "two tools share a name";
    InvalidValue => "load::invalid-value", "a value outside what the key accepts";
    BadConfig => "load::bad-config", "a built-in plugin's configuration does not match its schema";
    LiteralSecret => "load::literal-secret", "a literal string under a key that looks secret";
    BadPermission => "load::bad-permission", "a permission, grant or tool policy that cannot be parsed";
    UnknownTool => "load::unknown-tool", "a tool policy names a tool no declared plugin offers";
    McpLockMissing => "load::mcp-lock-missing", "an `mcp` entry has no tools pinned in `chassis.lock`";
    BadLock => "load::bad-lock", "`chassis.lock` cannot be read";
    McpLockStale => "load::mcp-lock-stale", "an `mcp` entry's locked tools do not match its tools filter or prefix";
    McpExpectedToolMissing => "load::mcp-expected-tool-missing", "an `mcp` entry expects a tool its locked server does not offer";
    BadSchema => "load::bad-schema", "a tool's argument schema does not compile";
    UnknownFormat => "load::unknown-format", "a tool's argument schema names a format that is not checked";
    HostSettingInInclude => "load::host-setting-in-include", "a host settings table (`[store]`) in an included file";
    RequestToolsKind => "load::request-tools-kind", "a `--request-tools` file holds an entry that is not a `command` entry";
    ServeRestartNeeded => "serve::restart-needed", "a reload read `[serve]` settings that apply only when the server starts again";
    UndeclaredPermission => "resolve::undeclared-permission", "a tool requires a permission its plugin does not declare";
    ToolNameTaken => "resolve::duplicate-tool", "two active entries declare tools of the same name";
    UngovernedTool => "policy::ungoverned-tool", "a tool declares no permission and is not read-only: every call needs approval";
    UngrantedPermission => "policy::ungranted-permission", "a tool requires a permission no grant of the policy where it runs covers: every call is refused";
    Unresolved => "resolve::unresolved", "a hard requirement did not resolve";
    Ambiguous => "resolve::ambiguous", "several providers qualify and no preference selects one";
    Cycle => "resolve::cycle", "entries require each other in a cycle";
    OptionalUnresolved => "resolve::optional-unresolved", "an optional requirement did not resolve";
    ScopeRequirementUnresolved => "resolve::scope-requirement-unresolved", "a scope-level requirement did not resolve";
    PreferenceNotCandidate => "resolve::preference-not-candidate", "a preference names an entry that is not a candidate";
    PreferenceUnused => "resolve::preference-unused", "a preference that applies to no requirement";
    PreferenceDisabled => "resolve::preference-disabled", "a preference names a disabled entry";
    SystemFailClosed => "resolve::system-fail-closed", "a scope's `policy` or `secrets` provider cannot be chosen: the scope fails closed";
    SystemPreferenceNotProvider => "resolve::system-preference-not-provider", "a `policy` or `secrets` preference names an entry that does not provide it";
    SnapshotFutureVersion => "snapshot::future-version", "a snapshot written by a newer format";
    SnapshotMalformedVersion => "snapshot::malformed-version", "a snapshot whose format version is not a number";
    SnapshotCorrupted => "snapshot::corrupted", "a snapshot whose content or digests do not check";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing; never changes the exit code.
    Warning,
    /// The input is unusable or the answer is negative.
    Error,
}

/// A labelled place in a source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub origin: Origin,
    /// What to say there (may be empty).
    pub message: String,
    /// Whether this is the main place (others are context).
    pub primary: bool,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code.
    pub code: Code,
    /// Severity.
    pub severity: Severity,
    /// Message: lower-case, no trailing period, literals in backticks.
    pub message: String,
    /// Places in sources, primary first.
    pub labels: Vec<Label>,
    /// Suggestions, each rendered as a `help:` line.
    pub help: Vec<String>,
}

impl Diagnostic {
    /// An error with `code` and `message`.
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: Severity::Error,
            message: message.into(),
            labels: Vec::new(),
            help: Vec::new(),
        }
    }

    /// A warning with `code` and `message`.
    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: Severity::Warning,
            message: message.into(),
            labels: Vec::new(),
            help: Vec::new(),
        }
    }

    /// Add the primary label, if the origin is known.
    pub fn at(mut self, origin: Option<Origin>, message: impl Into<String>) -> Self {
        if let Some(origin) = origin {
            self.labels.push(Label {
                origin,
                message: message.into(),
                primary: true,
            });
        }
        self
    }

    /// Add a secondary label, if the origin is known.
    pub fn also(mut self, origin: Option<Origin>, message: impl Into<String>) -> Self {
        if let Some(origin) = origin {
            self.labels.push(Label {
                origin,
                message: message.into(),
                primary: false,
            });
        }
        self
    }

    /// Add a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// Add a help line if there is one.
    pub fn with_help_opt(mut self, help: Option<String>) -> Self {
        if let Some(h) = help {
            self.help.push(h);
        }
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The closest candidate to `input` among `candidates`, for "did you mean" help.
pub fn did_you_mean<'a, I>(input: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut best: Option<(f64, &'a str)> = None;
    for candidate in candidates {
        let score = strsim::jaro_winkler(input, candidate);
        if score > 0.8 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_stable() {
        let mut seen = std::collections::BTreeSet::new();
        for code in Code::ALL {
            assert!(seen.insert(code.as_str()), "duplicate code {code}");
            assert!(code.as_str().contains("::"));
            assert!(!code.description().is_empty());
        }
    }

    #[test]
    fn suggests_close_names() {
        assert_eq!(
            did_you_mean("requries", ["requires", "optional", "provides"]),
            Some("requires")
        );
        assert_eq!(did_you_mean("zzz", ["requires", "optional"]), None);
    }
}
