//! `command`: local executables as tools.
//!
//! Most useful tools already exist as programs (`wc`, `rg`, `jq`, a
//! project's scripts). This kind turns each configured program into a tool
//! the model can call, under the same executor boundary as any other tool
//! (schema check, policy, approval, budget, tracing), without writing a
//! plugin. This module is the pure half: the configuration schema, the
//! manifest derived from it (one declared tool per configured tool, and the
//! permissions those tools require so `check_declared` passes), and the
//! typed [`CommandToolSpec`] whose [`CommandToolSpec::invocation`] turns a
//! call's arguments into an argv and stdin. Running the program is the
//! adapter's job (`crate::plugins::command`, `crate::process`).
//!
//! ```toml
//! [entries.text-tools]
//! plugin = "command"
//! [entries.text-tools.config]
//! cwd = "."
//! env = ["LANG"]
//! [[entries.text-tools.config.tools]]
//! name = "word_count"
//! description = "Count the words in a text."
//! args = { type = "object", required = ["text"], properties = { text = { type = "string" } } }
//! argv = ["wc", "-w"]
//! stdin = "{/text}"
//! ```
//!
//! Templates (`argv` elements after the program, `stdin`): `{/json/pointer}`
//! is replaced by the argument at that RFC 6901 pointer (a string as is,
//! any other value as compact JSON); `{{` and `}}` are literal braces. The
//! program (`argv[0]`) is never a template: the model must not choose what
//! runs. A pointer that resolves to nothing fails the call.
//!
//! A substituted value that starts with `-` would be read by the program
//! as an option (`rm {/path}` with `path = "-rf"`), so it is refused unless
//! a literal `--` element comes before it in `argv` (the POSIX end of
//! options: `["rm", "--", "{/path}"]`) or the tool sets
//! `allow_leading_dash = true`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::{BuiltinKind, ConfigProblem};
use crate::engine::model::{ConfigValue, Manifest, ToolDecl, ToolName};
use crate::engine::policy::{JsonPointer, PermissionTemplate, ToolPolicy};
use crate::engine::schema_check;
use crate::engine::schema_check::Instance;
use crate::engine::version::Version;

/// The kind.
pub const KIND: BuiltinKind = BuiltinKind {
    name: "command",
    summary: "local executables as tools (argv templates, no shell, process-group timeouts)",
    config_schema,
    manifest,
};

/// The default hard timeout of one call.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;
/// The longest timeout a tool may set (one day), as for every tool.
pub use crate::engine::policy::tool_policy::MAX_TIMEOUT_SECONDS;
/// The default stdout limit.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;
/// The largest stdout limit a tool may set.
pub const MAX_OUTPUT_BYTES: usize = 1 << 30;

fn string_array(description: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string" }, "description": description })
}

fn tool_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["name", "description", "argv"],
        "properties": {
            "name": { "type": "string", "description": "Tool name the model calls (no whitespace), unique in the entry." },
            "description": { "type": "string", "description": "What the tool does, as the model reads it." },
            "args": { "type": "object", "description": "JSON Schema of the arguments (checked by the executor before the program runs)." },
            "argv": {
                "type": "array",
                "minItems": 1,
                "items": { "type": "string" },
                "description": "The program and its arguments, never a shell. Elements after the program may contain `{/json/pointer}` placeholders replaced by that argument; `{{`/`}}` are literal braces. The program is looked up on the chassis process's PATH."
            },
            "allow_leading_dash": {
                "type": "boolean",
                "description": "Let a substituted argv element start with `-` before any `--` element (default false: such a value is refused, since the program would read it as an option; write `\"--\"` before the placeholders instead)."
            },
            "input": {
                "type": "string",
                "enum": ["json", "flags", "none"],
                "description": "How the arguments reach the program: `json` (default) as JSON on stdin; `flags` appended as `--name value` in key order (true as `--name`, false omitted, arrays repeat the flag) with empty stdin; `none`: empty stdin."
            },
            "stdin": { "type": "string", "description": "A template written to stdin instead (overrides `input` for stdin)." },
            "output": {
                "type": "string",
                "enum": ["text", "json"],
                "description": "`text` (default): stdout as a string, one trailing newline trimmed; `json`: stdout parsed as JSON (unparseable output fails the call)."
            },
            "timeout_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TIMEOUT_SECONDS,
                "description": "Hard timeout of one call (default 30): the whole process group is killed."
            },
            "max_output_bytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_OUTPUT_BYTES,
                "description": "Most stdout bytes a call may write (default 1048576); more kills the process and fails the call."
            },
            "permissions": string_array("Permission templates the tool requires, e.g. `filesystem.write:{/path}` (checked by policy on every call)."),
            "idempotent": { "type": "boolean", "description": "Whether repeating a call has no further effect." },
            "side_effects": string_array("Side-effect labels, e.g. `destructive`."),
            "cost_class": { "type": "string", "description": "Cost label, e.g. `expensive`." },
            "approval_required": { "type": "boolean", "description": "Whether every call needs approval." }
        }
    })
}

/// The `config` schema.
pub fn config_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "command tools",
        "type": "object",
        "additionalProperties": false,
        "required": ["tools"],
        "properties": {
            "cwd": { "type": "string", "description": "Working directory of every tool, relative to the composition's directory (default: that directory)." },
            "env": string_array("Environment allow-list: only these variables of the chassis process are passed to the programs; nothing else is inherited (not even PATH)."),
            "tools": { "type": "array", "items": tool_schema(), "description": "The tools, one program each." }
        }
    })
}

/// A template over a call's arguments: literal text and `{/pointer}`
/// placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Arg(JsonPointer),
}

/// A call's arguments lack what a template refers to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// A placeholder's pointer resolves to nothing.
    #[error("argument `{0}` is missing")]
    MissingArgument(String),
    /// `input = "flags"` needs the arguments to be an object.
    #[error("the arguments must be an object to be passed as flags")]
    FlagsNeedObject,
    /// A substituted value would be read as an option.
    #[error(
        "argument `{0}` starts with `-`, so the program would read it as an option; the tool's argv has no `--` before it (pass a value that does not start with `-`)"
    )]
    LeadingDash(String),
}

impl ArgTemplate {
    /// Parse `text`: `{/pointer}` placeholders, `{{` and `}}` literal braces.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().is_some_and(|&(_, n)| n == '{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().is_some_and(|&(_, n)| n == '}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let rest = &text[i + 1..];
                    let Some(end) = rest.find('}') else {
                        return Err(format!(
                            "`{text}` has a `{{` without its `}}` (write `{{{{` for a literal brace)"
                        ));
                    };
                    let pointer = &rest[..end];
                    let ptr = JsonPointer::parse(pointer).map_err(|e| {
                        format!("placeholder `{{{pointer}}}` is not a JSON Pointer: {e} (write `{{{{` for a literal brace)")
                    })?;
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Arg(ptr));
                    // Skip the pointer and the closing brace.
                    for _ in 0..=pointer.chars().count() {
                        chars.next();
                    }
                }
                '}' => {
                    return Err(format!(
                        "`{text}` has a `}}` without its `{{` (write `}}}}` for a literal brace)"
                    ));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Self {
            text: text.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The pointer of the placeholder that starts the template, if one
    /// does (its value decides whether the element reads as an option).
    fn leading_argument(&self) -> Option<&JsonPointer> {
        match self.parts.first() {
            Some(Part::Arg(p)) => Some(p),
            _ => None,
        }
    }

    /// Whether it has no placeholder.
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// Replace every placeholder by its argument.
    pub fn expand(&self, args: &Value) -> Result<String, ExpandError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(s) => out.push_str(s),
                Part::Arg(ptr) => {
                    let v = ptr
                        .resolve(args)
                        .ok_or_else(|| ExpandError::MissingArgument(ptr.as_str().to_owned()))?;
                    out.push_str(&render(v));
                }
            }
        }
        Ok(out)
    }
}

/// A string as is, anything else as compact JSON.
fn render(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What the program reads on stdin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StdinSource {
    /// The arguments as JSON.
    Json,
    /// Nothing (`/dev/null`).
    Null,
    /// A template's expansion.
    Template(ArgTemplate),
}

/// How stdout becomes the tool's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// A string, one trailing newline trimmed.
    Text,
    /// Parsed as JSON.
    Json,
}

/// One configured tool, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandToolSpec {
    /// Tool name.
    pub name: ToolName,
    /// Description.
    pub description: String,
    /// Argument schema.
    pub args_schema: Option<Value>,
    /// The program (`argv[0]`, never a template).
    pub program: String,
    /// The remaining argv templates.
    pub argv: Vec<ArgTemplate>,
    /// Whether the arguments are appended as `--name value` flags.
    pub flags: bool,
    /// Whether a substituted element may start with `-` before any `--`.
    pub allow_leading_dash: bool,
    /// Stdin.
    pub stdin: StdinSource,
    /// Stdout decoding.
    pub output: OutputMode,
    /// Hard timeout of one call.
    pub timeout: Duration,
    /// Stdout limit.
    pub max_output_bytes: usize,
    /// The tool's policy (its `timeout_seconds` is the hard timeout).
    pub policy: ToolPolicy,
}

/// The program, its arguments and stdin for one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// Program.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Stdin bytes; `None` is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
}

impl CommandToolSpec {
    /// The tool's contract, as a manifest declares it.
    pub fn decl(&self) -> ToolDecl {
        ToolDecl {
            name: self.name.clone(),
            description: self.description.clone(),
            args_schema: self.args_schema.clone(),
            result: None,
            guide: None,
            origin: None,
            policy: None,
        }
    }

    /// The argv and stdin for a call with `args`.
    pub fn invocation(&self, args: &Value) -> Result<Invocation, ExpandError> {
        let mut argv = Vec::with_capacity(self.argv.len());
        let mut options_ended = self.allow_leading_dash;
        for t in &self.argv {
            let element = t.expand(args)?;
            if !options_ended
                && element.starts_with('-')
                && let Some(p) = t.leading_argument()
            {
                return Err(ExpandError::LeadingDash(p.as_str().to_owned()));
            }
            options_ended |= t.is_literal() && element == "--";
            argv.push(element);
        }
        if self.flags {
            argv.extend(flags(args)?);
        }
        let stdin = match &self.stdin {
            StdinSource::Json => Some(args.to_string().into_bytes()),
            StdinSource::Null => None,
            StdinSource::Template(t) => Some(t.expand(args)?.into_bytes()),
        };
        Ok(Invocation {
            program: self.program.clone(),
            args: argv,
            stdin,
        })
    }

    /// Decode stdout into the tool's content.
    pub fn decode_output(&self, stdout: &[u8]) -> Result<Value, String> {
        let text = String::from_utf8_lossy(stdout);
        match self.output {
            OutputMode::Text => {
                let t = text.strip_suffix('\n').unwrap_or(&text);
                let t = t.strip_suffix('\r').unwrap_or(t);
                Ok(Value::String(t.to_owned()))
            }
            OutputMode::Json => serde_json::from_str(&text)
                .map_err(|e| format!("the output is not valid JSON ({e})")),
        }
    }
}

/// `--name value` for every top-level argument, in key order: `true` is
/// `--name`, `false` and `null` are omitted, an array repeats the flag.
pub fn flags(args: &Value) -> Result<Vec<String>, ExpandError> {
    let map = match args {
        Value::Object(map) => map,
        Value::Null => return Ok(Vec::new()),
        _ => return Err(ExpandError::FlagsNeedObject),
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let flag = format!("--{key}");
        let mut push = |v: &Value| match v {
            Value::Bool(true) => out.push(flag.clone()),
            Value::Bool(false) | Value::Null => {}
            v => {
                out.push(flag.clone());
                out.push(render(v));
            }
        };
        match &map[key] {
            Value::Array(items) => items.iter().for_each(&mut push),
            v => push(v),
        }
    }
    Ok(out)
}

/// The whole configuration, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandConfig {
    /// Working directory, relative to the composition (`None`: its directory).
    pub cwd: Option<String>,
    /// Environment allow-list.
    pub env: Vec<String>,
    /// Tools, sorted by name.
    pub tools: Vec<CommandToolSpec>,
}

/// Problems with an environment allow-list at `pointer` (shared with
/// `hook-command` and `mcp`).
pub fn check_env_names(names: &[String], pointer: &str, problems: &mut Vec<ConfigProblem>) {
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() || n.contains('=') || n.contains('\0') {
            // `NAME=value` may well carry a secret: the message never echoes
            // it, and the loader masks it in snippets.
            problems.push(ConfigProblem::new(
                format!("{pointer}/{i}"),
                "this is not an environment variable name (write the name only, \
                 never `NAME=value`); the value is not shown",
            ));
        }
    }
}

/// A timeout in seconds at `pointer`, default `default`.
pub fn parse_timeout<I: Instance>(
    v: Option<&I>,
    default: f64,
    pointer: &str,
    problems: &mut Vec<ConfigProblem>,
) -> Duration {
    let secs = v.and_then(I::as_f64).unwrap_or(default);
    if !(secs.is_finite() && secs > 0.0 && secs <= MAX_TIMEOUT_SECONDS) {
        problems.push(ConfigProblem::new(
            pointer,
            format!("the timeout must be positive and at most {MAX_TIMEOUT_SECONDS} seconds"),
        ));
        return Duration::from_secs_f64(default);
    }
    Duration::from_secs_f64(secs)
}

fn parse_tool<I: Instance>(
    i: usize,
    t: &I,
    problems: &mut Vec<ConfigProblem>,
) -> Option<CommandToolSpec> {
    let at = |k: &str| format!("/tools/{i}/{k}");
    let before = problems.len();
    let name_text = t.get("name").and_then(I::as_str).unwrap_or_default();
    let name = match ToolName::new(name_text) {
        Ok(n) => Some(n),
        Err(e) => {
            problems.push(ConfigProblem::new(at("name"), e.message));
            None
        }
    };
    let argv_text = super::string_array(t.get("argv"));
    let mut argv = Vec::new();
    match argv_text.split_first() {
        None => problems.push(ConfigProblem::new(
            at("argv"),
            "`argv` must name the program to run",
        )),
        Some((program, rest)) => {
            if program.is_empty() {
                problems.push(ConfigProblem::new(
                    format!("/tools/{i}/argv/0"),
                    "the program must not be empty",
                ));
            } else if program.contains(['{', '}']) {
                problems.push(ConfigProblem::new(
                    format!("/tools/{i}/argv/0"),
                    "the program (`argv[0]`) cannot be a template: the model must not choose what runs",
                ));
            }
            for (j, a) in rest.iter().enumerate() {
                match ArgTemplate::parse(a) {
                    Ok(t) => argv.push(t),
                    Err(e) => {
                        problems.push(ConfigProblem::new(format!("/tools/{i}/argv/{}", j + 1), e));
                    }
                }
            }
        }
    }
    let input = t.get("input").and_then(I::as_str).unwrap_or("json");
    let flags = input == "flags";
    let stdin = match t.get("stdin").and_then(I::as_str) {
        Some(s) => match ArgTemplate::parse(s) {
            Ok(t) => StdinSource::Template(t),
            Err(e) => {
                problems.push(ConfigProblem::new(at("stdin"), e));
                StdinSource::Null
            }
        },
        None if input == "json" => StdinSource::Json,
        None => StdinSource::Null,
    };
    let output = match t.get("output").and_then(I::as_str) {
        Some("json") => OutputMode::Json,
        _ => OutputMode::Text,
    };
    let timeout = parse_timeout(
        t.get("timeout_seconds"),
        DEFAULT_TIMEOUT_SECONDS,
        &at("timeout_seconds"),
        problems,
    );
    let max_output_bytes = match t.get("max_output_bytes") {
        None => DEFAULT_MAX_OUTPUT_BYTES,
        Some(v) => match v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=MAX_OUTPUT_BYTES).contains(n))
        {
            Some(n) => n,
            None => {
                problems.push(ConfigProblem::new(
                    at("max_output_bytes"),
                    format!("must be an integer from 1 to {MAX_OUTPUT_BYTES}"),
                ));
                DEFAULT_MAX_OUTPUT_BYTES
            }
        },
    };
    let policy = ToolPolicy {
        permissions: super::string_array(t.get("permissions")),
        idempotent: t.get("idempotent").and_then(I::as_bool).unwrap_or(false),
        side_effects: super::string_array(t.get("side_effects")),
        timeout_seconds: Some(timeout.as_secs_f64()),
        cost_class: t.get("cost_class").and_then(I::as_str).map(str::to_owned),
        approval_required: t
            .get("approval_required")
            .and_then(I::as_bool)
            .unwrap_or(false),
        metadata: Default::default(),
    };
    for (j, p) in policy.permissions.iter().enumerate() {
        if let Err(e) = PermissionTemplate::parse(p) {
            problems.push(ConfigProblem::new(
                format!("/tools/{i}/permissions/{j}"),
                e.to_string(),
            ));
        }
    }
    if let Some(j) = policy.side_effects.iter().position(|s| s.trim().is_empty()) {
        problems.push(ConfigProblem::new(
            format!("/tools/{i}/side_effects/{j}"),
            "a side-effect label must not be blank",
        ));
    }
    if policy
        .cost_class
        .as_ref()
        .is_some_and(|c| c.trim().is_empty())
    {
        problems.push(ConfigProblem::new(at("cost_class"), "must not be blank"));
    }
    if problems.len() > before {
        return None;
    }
    Some(CommandToolSpec {
        name: name?,
        description: t
            .get("description")
            .and_then(I::as_str)
            .unwrap_or_default()
            .to_owned(),
        args_schema: t.get("args").map(I::to_value),
        program: argv_text.first()?.clone(),
        argv,
        flags,
        allow_leading_dash: t
            .get("allow_leading_dash")
            .and_then(I::as_bool)
            .unwrap_or(false),
        stdin,
        output,
        timeout,
        max_output_bytes,
        policy,
    })
}

/// Check `config` against the schema, then validate everything the schema
/// cannot say: every problem, with its pointer, or the typed configuration.
pub fn parse(config: &ConfigValue) -> Result<CommandConfig, Vec<ConfigProblem>> {
    // Read in place, as `derive` does: mounting 100,000 `command` entries
    // built each one's JSON only to read it.
    let problems: Vec<ConfigProblem> = schema_check::check_instance(&KIND.schema(), config)
        .into_iter()
        .map(|v| ConfigProblem::new(v.pointer, v.message))
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    parse_checked(config)
}

/// [`parse`] of a configuration (as JSON) already checked against the
/// schema — as [`KIND`]'s `derive` does before it derives the manifest, so
/// a loaded composition's `command` entries have passed it: everything the
/// schema cannot say.
pub(crate) fn parse_checked<I: Instance>(json: &I) -> Result<CommandConfig, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    let env = super::string_array(json.get("env"));
    check_env_names(&env, "/env", &mut problems);
    let mut tools: Vec<CommandToolSpec> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let items = json.get("tools").and_then(I::as_array);
    for (i, t) in items.into_iter().flatten().enumerate() {
        if let Some(name) = t.get("name").and_then(I::as_str)
            && !seen.insert(name.to_owned())
        {
            problems.push(ConfigProblem::new(
                format!("/tools/{i}/name"),
                format!("the tool name `{name}` is used twice"),
            ));
        }
        if let Some(spec) = parse_tool(i, t, &mut problems) {
            tools.push(spec);
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(CommandConfig {
        cwd: json.get("cwd").and_then(I::as_str).map(str::to_owned),
        env,
        tools,
    })
}

/// The manifest of a configuration `derive` has checked against the schema.
fn manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    // Read in place: its JSON is never needed whole.
    let parsed = parse_checked(config)?;
    let version = Version::parse("1.0.0").expect("built-in versions are valid");
    let mut manifest = Manifest::new("command", version);
    // An unscoped name declares every resource of that permission: the
    // tool's own templates, checked by policy on every call, narrow it.
    let names: BTreeSet<String> = parsed
        .tools
        .iter()
        .flat_map(|t| t.policy.templates().unwrap_or_default())
        .map(|t| t.name().to_owned())
        .collect();
    manifest.permissions = names.into_iter().collect();
    // Each declaration keeps its policy, for listing the tools.
    manifest.tools = parsed
        .tools
        .iter()
        .map(|t| ToolDecl {
            policy: Some(Box::new(t.policy.clone())),
            ..t.decl()
        })
        .collect();
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::check_declared;

    fn config(json: Value) -> ConfigValue {
        fn conv(v: &Value) -> ConfigValue {
            match v {
                Value::Bool(b) => ConfigValue::Bool(*b),
                Value::Number(n) => n
                    .as_i64()
                    .map_or_else(|| ConfigValue::Float(n.as_f64().unwrap()), ConfigValue::Int),
                Value::String(s) => ConfigValue::Str(s.clone()),
                Value::Array(a) => ConfigValue::Array(a.iter().map(conv).collect()),
                Value::Object(m) => {
                    ConfigValue::Table(m.iter().map(|(k, v)| (k.clone(), conv(v))).collect())
                }
                Value::Null => unreachable!("TOML has no null"),
            }
        }
        conv(&json)
    }

    fn problems(json: Value) -> Vec<(String, String)> {
        KIND.derive(&config(json))
            .unwrap_err()
            .into_iter()
            .map(|p| (p.pointer, p.message))
            .collect()
    }

    #[test]
    fn the_manifest_declares_the_tools_sorted_and_their_permissions() {
        let m = KIND
            .derive(&config(json!({
                "env": ["LANG"],
                "tools": [
                    { "name": "write", "description": "w", "argv": ["tee", "{/path}"],
                      "permissions": ["filesystem.write:{/path}"], "approval_required": true },
                    { "name": "count", "description": "c", "argv": ["wc", "-w"],
                      "args": { "type": "object" }, "permissions": ["filesystem.read", "filesystem.write:/tmp/x"] },
                ]
            })))
            .unwrap();
        assert_eq!(m.name, "command");
        assert_eq!(m.version.as_str(), "1.0.0");
        assert_eq!(m.kind.as_deref(), Some("command"));
        assert!(m.provides.is_empty());
        let names: Vec<&str> = m.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["count", "write"]);
        assert_eq!(m.tools[0].args_schema, Some(json!({ "type": "object" })));
        assert_eq!(m.permissions, ["filesystem.read", "filesystem.write"]);
        let parsed = parse(&config(json!({
            "tools": [{ "name": "write", "description": "w", "argv": ["tee", "{/path}"],
                        "permissions": ["filesystem.write:{/path}", "net.http:api.example.com"] }]
        })))
        .unwrap();
        let m = KIND
            .derive(&config(json!({
                "tools": [{ "name": "write", "description": "w", "argv": ["tee", "{/path}"],
                            "permissions": ["filesystem.write:{/path}", "net.http:api.example.com"] }]
            })))
            .unwrap();
        assert_eq!(
            check_declared(&parsed.tools[0].policy.permissions, &m.permissions),
            Ok(())
        );
        assert!(parsed.tools[0].policy.validate().is_ok());
        assert_eq!(parsed.tools[0].timeout, Duration::from_secs(30));
    }

    #[test]
    fn the_schema_refuses_unknown_keys_at_every_level() {
        let got = problems(json!({ "tools": [], "shell": true }));
        assert_eq!(got.len(), 1, "{got:?}");
        let got = problems(
            json!({ "tools": [{ "name": "a", "description": "", "argv": ["x"], "sh": 1 }] }),
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].0.starts_with("/tools/0"), "{got:?}");
        let got = problems(
            json!({ "tools": [{ "name": "a", "description": "", "argv": ["x"], "input": "yaml" }] }),
        );
        assert_eq!(got[0].0, "/tools/0/input", "{got:?}");
        let got = problems(json!({}));
        assert!(!got.is_empty(), "tools is required");
        let schema = config_schema();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            schema["properties"]["tools"]["items"]["additionalProperties"],
            false
        );
        for (key, prop) in schema["properties"]["tools"]["items"]["properties"]
            .as_object()
            .unwrap()
        {
            assert!(prop["description"].is_string(), "{key} has no description");
        }
    }

    #[test]
    fn what_the_schema_cannot_say_is_a_problem_with_its_pointer() {
        let got = problems(json!({
            "env": ["OK", "A=B"],
            "tools": [
                { "name": "dup", "description": "", "argv": ["x"] },
                { "name": "dup", "description": "", "argv": ["x"] },
                { "name": "has space", "description": "", "argv": ["x"] },
                { "name": "e", "description": "", "argv": [] },
                { "name": "p", "description": "", "argv": ["x", "{path}", "{/ok}", "a}b"] },
                { "name": "q", "description": "", "argv": ["{/prog}"] },
                { "name": "r", "description": "", "argv": ["x"], "permissions": ["Bad Name"] },
                { "name": "t", "description": "", "argv": ["x"], "timeout_seconds": 0 },
                { "name": "s", "description": "", "argv": ["x"], "stdin": "{oops" },
            ]
        }));
        let pointers: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        // `argv = []` and `timeout_seconds = 0` are already schema errors.
        assert!(pointers.contains(&"/tools/3/argv"), "{got:?}");
        assert!(pointers.contains(&"/tools/7/timeout_seconds"), "{got:?}");
        let got = problems(json!({
            "env": ["OK", "A=B"],
            "tools": [
                { "name": "dup", "description": "", "argv": ["x"] },
                { "name": "dup", "description": "", "argv": ["x"] },
                { "name": "has space", "description": "", "argv": ["x"] },
                { "name": "p", "description": "", "argv": ["x", "{path}", "{/ok}", "a}b"] },
                { "name": "q", "description": "", "argv": ["{/prog}"] },
                { "name": "r", "description": "", "argv": ["x"], "permissions": ["Bad Name"] },
                { "name": "s", "description": "", "argv": ["x"], "stdin": "{oops" },
            ]
        }));
        let pointers: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/env/1",
                "/tools/1/name",
                "/tools/2/name",
                "/tools/3/argv/1",
                "/tools/3/argv/3",
                "/tools/4/argv/0",
                "/tools/5/permissions/0",
                "/tools/6/stdin",
            ],
            "{got:?}"
        );
        assert!(got[1].1.contains("used twice"), "{got:?}");
        assert!(got[3].1.contains("JSON Pointer"), "{got:?}");
    }

    #[test]
    fn a_substituted_option_is_refused_unless_options_ended() {
        let tool = |argv: Value, extra: Value| {
            let mut t = json!({ "name": "t", "description": "", "argv": argv });
            t.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            parse(&config(json!({ "tools": [t] })))
                .unwrap()
                .tools
                .remove(0)
        };
        let dash = json!({ "path": "--version" });
        let plain = tool(json!(["rm", "{/path}"]), json!({}));
        assert_eq!(
            plain.invocation(&dash),
            Err(ExpandError::LeadingDash("/path".into()))
        );
        assert!(plain.invocation(&json!({ "path": "a-b" })).is_ok());
        // After a literal `--`, a value is an operand.
        let ended = tool(json!(["rm", "--", "{/path}"]), json!({}));
        assert_eq!(ended.invocation(&dash).unwrap().args, ["--", "--version"]);
        // A literal prefix decides: `--file={/path}` is one option.
        let prefixed = tool(json!(["cat", "--file={/path}"]), json!({}));
        assert!(prefixed.invocation(&dash).is_ok());
        // A `--` that came from an argument ends nothing.
        let smuggled = tool(json!(["rm", "{/a}", "{/b}"]), json!({}));
        assert_eq!(
            smuggled.invocation(&json!({ "a": "--", "b": "-rf" })),
            Err(ExpandError::LeadingDash("/a".into()))
        );
        let allowed = tool(
            json!(["rm", "{/path}"]),
            json!({ "allow_leading_dash": true }),
        );
        assert!(allowed.invocation(&dash).is_ok());
    }

    #[test]
    fn templates_expand_arguments_and_literal_braces() {
        let t = ArgTemplate::parse("--file={/path}:{/n}:{/flags/0}{{x}}").unwrap();
        assert!(!t.is_literal());
        let args = json!({ "path": "a b.txt", "n": 3, "flags": [true] });
        assert_eq!(t.expand(&args).unwrap(), "--file=a b.txt:3:true{x}");
        assert_eq!(
            ArgTemplate::parse("{/obj}")
                .unwrap()
                .expand(&json!({ "obj": { "a": [1, 2] } }))
                .unwrap(),
            r#"{"a":[1,2]}"#
        );
        assert_eq!(
            t.expand(&json!({ "path": "x" })),
            Err(ExpandError::MissingArgument("/n".into()))
        );
        assert!(ArgTemplate::parse("plain").unwrap().is_literal());
        assert!(ArgTemplate::parse("{/a~2}").is_err());
        assert!(ArgTemplate::parse("{}").is_err());
        assert!(
            ArgTemplate::parse("é{/ü}é")
                .unwrap()
                .expand(&json!({"ü": "ö"}))
                .unwrap()
                == "éöé"
        );
    }

    #[test]
    fn invocations_follow_input_and_stdin() {
        let spec = |tool: Value| {
            let mut t = json!({ "name": "t", "description": "" });
            t.as_object_mut()
                .unwrap()
                .extend(tool.as_object().unwrap().clone());
            parse(&config(json!({ "tools": [t] })))
                .unwrap()
                .tools
                .remove(0)
        };
        let args = json!({ "b": [1, "two"], "a": "x", "t": true, "f": false });
        let json_in = spec(json!({ "argv": ["cat"] })).invocation(&args).unwrap();
        assert_eq!(json_in.program, "cat");
        assert!(json_in.args.is_empty());
        assert_eq!(
            serde_json::from_slice::<Value>(json_in.stdin.as_deref().unwrap()).unwrap(),
            args
        );
        let flags_in = spec(json!({ "argv": ["p", "-v"], "input": "flags" }))
            .invocation(&args)
            .unwrap();
        assert_eq!(
            flags_in.args,
            ["-v", "--a", "x", "--b", "1", "--b", "two", "--t"]
        );
        assert_eq!(flags_in.stdin, None);
        let none_in = spec(json!({ "argv": ["p"], "input": "none" }))
            .invocation(&args)
            .unwrap();
        assert_eq!(none_in.stdin, None);
        let tpl = spec(json!({ "argv": ["p"], "input": "flags", "stdin": "{/a}\n" }))
            .invocation(&args)
            .unwrap();
        assert_eq!(tpl.stdin.as_deref(), Some(&b"x\n"[..]));
        assert_eq!(tpl.args, ["--a", "x", "--b", "1", "--b", "two", "--t"]);
        assert_eq!(
            spec(json!({ "argv": ["p"], "input": "flags" })).invocation(&json!([1])),
            Err(ExpandError::FlagsNeedObject)
        );
    }

    #[test]
    fn output_is_text_trimmed_once_or_json() {
        let mut s = parse(&config(
            json!({ "tools": [{ "name": "t", "description": "", "argv": ["x"] }] }),
        ))
        .unwrap()
        .tools
        .remove(0);
        assert_eq!(s.decode_output(b"a\n\n").unwrap(), json!("a\n"));
        assert_eq!(s.decode_output(b"a\r\n").unwrap(), json!("a"));
        s.output = OutputMode::Json;
        assert_eq!(s.decode_output(b" {\"n\": 1}\n").unwrap(), json!({"n": 1}));
        assert!(
            s.decode_output(b"nope")
                .unwrap_err()
                .contains("not valid JSON")
        );
    }

    /// A configuration read in place parses to what its JSON form parses
    /// to: the same tools, or the same problems.
    mod in_place {
        use super::super::*;
        use crate::engine::model::SecretRef;
        use proptest::prelude::*;

        fn leaf() -> impl Strategy<Value = ConfigValue> {
            prop_oneof![
                any::<bool>().prop_map(ConfigValue::Bool),
                prop_oneof![Just(0i64), Just(5), Just(-1), Just(1 << 40)]
                    .prop_map(ConfigValue::Int),
                prop_oneof![
                    Just(2.5f64),
                    Just(0.0),
                    Just(1e9),
                    Just(f64::NAN),
                    Just(f64::INFINITY)
                ]
                .prop_map(ConfigValue::Float),
                prop_oneof![
                    Just("echo"),
                    Just(""),
                    Just("{/path}"),
                    Just("{"),
                    Just("-n"),
                    Just("flags"),
                    Just("json"),
                    Just("filesystem.write:{/path}"),
                    Just("bad name"),
                    Just("A=b"),
                    Just("  "),
                ]
                .prop_map(|s| ConfigValue::Str(s.to_owned())),
                Just(ConfigValue::Secret(SecretRef {
                    name: "TOKEN".into()
                })),
            ]
        }

        fn field() -> impl Strategy<Value = ConfigValue> {
            prop_oneof![
                3 => leaf(),
                2 => proptest::collection::vec(leaf(), 0..4).prop_map(ConfigValue::Array),
                1 => proptest::collection::btree_map(
                    prop_oneof![Just("type".to_owned()), Just("x".to_owned())],
                    leaf(),
                    0..3
                )
                .prop_map(ConfigValue::Table),
            ]
        }

        fn tool() -> impl Strategy<Value = ConfigValue> {
            let keys = prop_oneof![
                Just("name"),
                Just("description"),
                Just("argv"),
                Just("args"),
                Just("permissions"),
                Just("idempotent"),
                Just("side_effects"),
                Just("timeout_seconds"),
                Just("cost_class"),
                Just("approval_required"),
                Just("input"),
                Just("stdin"),
                Just("output"),
                Just("max_output_bytes"),
                Just("allow_leading_dash"),
            ]
            .prop_map(str::to_owned);
            (
                prop_oneof![Just("save"), Just("count"), Just("bad name")],
                proptest::collection::vec(leaf(), 1..4),
                proptest::collection::btree_map(keys, field(), 0..8),
            )
                .prop_map(|(name, argv, mut rest)| {
                    rest.entry("name".into())
                        .or_insert(ConfigValue::Str(name.to_owned()));
                    rest.entry("argv".into())
                        .or_insert(ConfigValue::Array(argv));
                    ConfigValue::Table(rest)
                })
        }

        fn config() -> impl Strategy<Value = ConfigValue> {
            (
                proptest::collection::vec(tool(), 0..4),
                proptest::option::of(field()),
                proptest::option::of(leaf()),
            )
                .prop_map(|(tools, env, cwd)| {
                    let mut m = std::collections::BTreeMap::new();
                    m.insert("tools".to_owned(), ConfigValue::Array(tools));
                    if let Some(env) = env {
                        m.insert("env".to_owned(), env);
                    }
                    if let Some(cwd) = cwd {
                        m.insert("cwd".to_owned(), cwd);
                    }
                    ConfigValue::Table(m)
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            #[test]
            fn parsing_in_place_matches_the_json_form(config in config()) {
                let json = config.to_json();
                let in_place = parse_checked(&config);
                prop_assert_eq!(&in_place, &parse_checked(&json));
                // Both kinds of answer come up.
                let _ = in_place.is_ok();
            }
        }
    }
}
