//! The `scripted` model: answers each call with the next scripted turn.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::BuiltinEnv;
use crate::engine::builtin;
use crate::engine::model::{ConfigValue, Entry, Manifest};
use crate::runtime::model::{
    ChatMessage, ChatModel, MODEL_CAPABILITY, ModelError, ModelHandle, ModelRequest, ModelResponse,
    ModelToolCall, Role, Usage,
};
use crate::runtime::{BoxError, CapabilityValue, Catalog, Plugin, PluginContext};

/// One scripted turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Turn {
    /// Assistant text.
    pub text: String,
    /// Tool calls.
    pub tool_calls: Vec<ModelToolCall>,
    /// Reported usage.
    pub usage: Option<Usage>,
    /// Finish reason.
    pub finish_reason: Option<String>,
    /// Estimated cost.
    pub cost: Option<f64>,
    /// Fail the call with this message.
    pub error: Option<String>,
    /// Refuse with this message.
    pub refusal: Option<String>,
    /// Wait before answering.
    pub delay: Option<Duration>,
    /// Answer only when the last user message matches.
    pub when: Option<When>,
}

/// Which inputs a turn answers: the last user message the model sees.
#[derive(Clone, Debug)]
pub enum When {
    /// Exactly this text.
    Input(String),
    /// Text this regular expression finds a match in.
    Regex(regex::Regex),
}

impl PartialEq for When {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (When::Input(a), When::Input(b)) => a == b,
            (When::Regex(a), When::Regex(b)) => a.as_str() == b.as_str(),
            _ => false,
        }
    }
}

impl When {
    /// Parse `{ input = "…" }` or `{ regex = "…" }`.
    pub fn parse(value: &Value) -> Result<Self, String> {
        let obj = value
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or("`when` must be `{ input = \"…\" }` or `{ regex = \"…\" }`")?;
        match obj.iter().next() {
            Some((k, Value::String(text))) if k == "input" => Ok(When::Input(text.clone())),
            Some((k, Value::String(pattern))) if k == "regex" => regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map(When::Regex)
                .map_err(|e| format!("`when.regex` is not a regular expression: {e}")),
            _ => Err("`when` must be `{ input = \"…\" }` or `{ regex = \"…\" }`".into()),
        }
    }

    /// Whether it answers `input`.
    pub fn matches(&self, input: &str) -> bool {
        match self {
            When::Input(text) => text == input,
            When::Regex(re) => re.is_match(input),
        }
    }
}

/// Parse one turn from its JSON form (the `turns` items and the lines of a
/// `turns_file` share it). `index` numbers default call ids.
pub fn parse_turn(value: &Value, index: usize) -> Result<Turn, String> {
    let obj = value
        .as_object()
        .ok_or_else(|| format!("turn {} is not an object", index + 1))?;
    let mut turn = Turn::default();
    for (key, v) in obj {
        match key.as_str() {
            "text" => turn.text = v.as_str().ok_or("`text` must be a string")?.to_owned(),
            "tool_calls" => {
                let calls = v.as_array().ok_or("`tool_calls` must be an array")?;
                for (j, call) in calls.iter().enumerate() {
                    let name = call
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("a tool call needs a `name`")?;
                    let id = call
                        .get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("call_{}_{}", index + 1, j + 1), str::to_owned);
                    let (arguments, malformed) = match call.get("raw_args").and_then(Value::as_str)
                    {
                        Some(raw) => match serde_json::from_str::<Value>(raw) {
                            Ok(v) => (v, None),
                            Err(e) => (
                                Value::Null,
                                Some(format!("the arguments are not valid JSON: {e}")),
                            ),
                        },
                        None => (
                            call.get("args")
                                .cloned()
                                .unwrap_or_else(|| Value::Object(Default::default())),
                            None,
                        ),
                    };
                    turn.tool_calls.push(ModelToolCall {
                        id,
                        name: name.to_owned(),
                        arguments,
                        malformed,
                    });
                }
            }
            "usage" => {
                let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
                turn.usage = Some(Usage {
                    input_tokens: n("input_tokens"),
                    output_tokens: n("output_tokens"),
                });
            }
            "finish_reason" => turn.finish_reason = v.as_str().map(str::to_owned),
            "cost" => turn.cost = v.as_f64(),
            "error" => turn.error = v.as_str().map(str::to_owned),
            "refusal" => turn.refusal = v.as_str().map(str::to_owned),
            "delay_ms" => turn.delay = v.as_u64().map(Duration::from_millis),
            "when" => turn.when = Some(When::parse(v)?),
            other => return Err(format!("unknown key `{other}` in turn {}", index + 1)),
        }
    }
    Ok(turn)
}

/// The scripted model.
///
/// Its position in the script belongs to the top-level run
/// ([`crate::runtime::model::TurnCursors`]), so every run of a served
/// generation starts at turn 1 and concurrent runs never take each other's
/// turns. A script with `when` turns keeps one position per input: a call
/// answers with the next turn whose `when` matches the last user message
/// (a turn without `when` matches any).
#[derive(Debug)]
pub struct ScriptedModel {
    name: String,
    /// Tells this model's position apart from another's in one run.
    key: String,
    turns: Vec<Turn>,
    repeat_last: bool,
}

impl ScriptedModel {
    /// A model answering with `turns` in order.
    pub fn new(name: impl Into<String>, turns: Vec<Turn>, repeat_last: bool) -> Self {
        let name = name.into();
        Self {
            key: name.clone(),
            name,
            turns,
            repeat_last,
        }
    }

    /// Keep its position under `key` (its entry's instance id), so two
    /// scripted models of one name in one run keep their own positions.
    #[must_use]
    pub fn keyed(mut self, key: impl Into<String>) -> Self {
        self.key = key.into();
        self
    }

    /// Build from an entry's configuration, reading `turns_file` against `env`.
    pub fn from_config(config: &ConfigValue, env: &BuiltinEnv) -> Result<Self, String> {
        let json = config.to_json();
        let name = json
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("scripted");
        let mut turns = Vec::new();
        if let Some(items) = json.get("turns").and_then(Value::as_array) {
            for item in items {
                turns.push(parse_turn(item, turns.len())?);
            }
        }
        if let Some(file) = json.get("turns_file").and_then(Value::as_str) {
            let path = env.resolve(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read turns_file `{}`: {e}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let value: Value = serde_json::from_str(line)
                    .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
                let turn = parse_turn(&value, turns.len())
                    .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
                turns.push(turn);
            }
        }
        let repeat_last = json
            .get("repeat_last")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(Self::new(name, turns, repeat_last))
    }
}

#[async_trait::async_trait]
impl ChatModel for ScriptedModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        "scripted"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let conditional = self.turns.iter().any(|t| t.when.is_some());
        let turn = if conditional {
            let input = request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map_or("", |m| m.content.as_str());
            let i = request
                .cursors
                .advance(&format!("{}\u{0}{input}", self.key));
            let eligible: Vec<&Turn> = self
                .turns
                .iter()
                .filter(|t| t.when.as_ref().is_none_or(|w| w.matches(input)))
                .collect();
            match eligible.get(i) {
                Some(t) => *t,
                None if self.repeat_last && !eligible.is_empty() => eligible[eligible.len() - 1],
                None => {
                    return Err(ModelError::Scripted(format!(
                        "the scripted model `{}` has no turn {} for this input ({} of its turns match it); add a turn whose `when` matches, or set `repeat_last = true`",
                        self.name,
                        i + 1,
                        eligible.len()
                    )));
                }
            }
        } else {
            let i = request.cursors.advance(&self.key);
            match self.turns.get(i) {
                Some(t) => t,
                None if self.repeat_last && !self.turns.is_empty() => {
                    &self.turns[self.turns.len() - 1]
                }
                None => {
                    return Err(ModelError::Scripted(format!(
                        "the scripted model `{}` has no turn {} (it has {}); add turns or set `repeat_last = true`",
                        self.name,
                        i + 1,
                        self.turns.len()
                    )));
                }
            }
        };
        if let Some(delay) = turn.delay {
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = request.cancel.cancelled() => return Err(ModelError::Cancelled),
            }
        }
        if let Some(e) = &turn.error {
            return Err(ModelError::Scripted(e.clone()));
        }
        if let Some(r) = &turn.refusal {
            return Err(ModelError::Refused(r.clone()));
        }
        // A watching caller gets the turn's text as one piece, as a
        // streaming provider's would arrive.
        if let Some(deltas) = &request.deltas {
            deltas.send(&turn.text);
        }
        let finish = turn.finish_reason.clone().unwrap_or_else(|| {
            if turn.tool_calls.is_empty() {
                "stop".into()
            } else {
                "tool_calls".into()
            }
        });
        Ok(ModelResponse {
            message: ChatMessage {
                role: Role::Assistant,
                content: turn.text.clone(),
                tool_calls: turn.tool_calls.clone(),
                tool_call_id: None,
                name: None,
            },
            usage: turn.usage,
            finish_reason: Some(finish),
            model: self.name.clone(),
            estimated_cost: turn.cost,
        })
    }
}

struct ScriptedPlugin {
    manifest: Arc<Manifest>,
    env: Arc<BuiltinEnv>,
}

#[async_trait::async_trait]
impl Plugin for ScriptedPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        let model = ScriptedModel::from_config(ctx.config(), &self.env)?.keyed(ctx.instance_id());
        let handle = ModelHandle(Arc::new(model));
        let version = self
            .manifest
            .provides
            .values()
            .next()
            .and_then(|p| p.versions.first())
            .map_or_else(|| "1.0.0".to_owned(), |v| v.as_str().to_owned());
        ctx.capabilities()
            .provide(MODEL_CAPABILITY, CapabilityValue::new(handle), &version)?;
        Ok(())
    }
}

/// Install the kind.
pub fn register(catalog: &mut Catalog, env: &Arc<BuiltinEnv>) {
    let env = Arc::clone(env);
    catalog.register(
        builtin::scripted::KIND.name,
        Arc::new(move |entry: &Entry| {
            Ok(Arc::new(ScriptedPlugin {
                manifest: Arc::clone(&entry.manifest),
                env: Arc::clone(&env),
            }) as Arc<dyn Plugin>)
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::tool::Cancellation;

    fn request<'a>(
        messages: &'a [ChatMessage],
        run: &crate::runtime::model::TurnCursors,
    ) -> ModelRequest<'a> {
        ModelRequest {
            messages,
            tools: &[],
            options: Default::default(),
            cancel: Cancellation::new(),
            cursors: run.clone(),
            deltas: None,
            run_id: None,
        }
    }

    #[tokio::test]
    async fn turns_come_from_the_config_then_the_file_then_run_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("turns.jsonl"),
            "{\"text\": \"from the file\"}\n\n{\"tool_calls\": [{\"name\": \"t\", \"raw_args\": \"{oops\"}]}\n",
        )
        .unwrap();
        let config = crate::load::load_str(
            "c.toml",
            "version = 1\n[entries.m]\nplugin = \"scripted\"\nconfig = { turns = [{ text = \"inline\" }], turns_file = \"turns.jsonl\" }\n",
        )
        .composition
        .unwrap()
        .entries
        .values()
        .next()
        .unwrap()
        .config
        .clone();
        let model = ScriptedModel::from_config(&config, &BuiltinEnv::new(dir.path())).unwrap();
        let m = [ChatMessage::text(Role::User, "hi")];
        let run = crate::runtime::model::TurnCursors::new();
        assert_eq!(
            model
                .complete(&request(&m, &run))
                .await
                .unwrap()
                .message
                .content,
            "inline"
        );
        assert_eq!(
            model
                .complete(&request(&m, &run))
                .await
                .unwrap()
                .message
                .content,
            "from the file"
        );
        let third = model.complete(&request(&m, &run)).await.unwrap();
        assert!(third.message.tool_calls[0].malformed.is_some());
        assert_eq!(third.finish_reason.as_deref(), Some("tool_calls"));
        let err = model.complete(&request(&m, &run)).await.unwrap_err();
        assert!(
            err.to_string().contains("has no turn 4 (it has 3)"),
            "{err}"
        );
    }

    fn model_of(toml_config: &str) -> ScriptedModel {
        let config = crate::load::load_str(
            "c.toml",
            &format!("version = 1\n[entries.m]\nplugin = \"scripted\"\n{toml_config}"),
        )
        .composition
        .unwrap()
        .entries
        .values()
        .next()
        .unwrap()
        .config
        .clone();
        ScriptedModel::from_config(&config, &BuiltinEnv::new(".")).unwrap()
    }

    #[tokio::test]
    async fn every_run_starts_at_turn_one_and_runs_never_share_a_position() {
        let model = model_of(
            "[[entries.m.config.turns]]\ntext = \"one\"\n[[entries.m.config.turns]]\ntext = \"two\"\n",
        );
        let m = [ChatMessage::text(Role::User, "hi")];
        let (a, b) = (
            crate::runtime::model::TurnCursors::new(),
            crate::runtime::model::TurnCursors::new(),
        );
        let text = |r: Result<ModelResponse, ModelError>| r.unwrap().message.content;
        assert_eq!(text(model.complete(&request(&m, &a)).await), "one");
        assert_eq!(text(model.complete(&request(&m, &b)).await), "one");
        assert_eq!(text(model.complete(&request(&m, &b)).await), "two");
        assert_eq!(text(model.complete(&request(&m, &a)).await), "two");
        // Two models in one run keep their own positions.
        let other = model_of("config.turns = [{ text = \"x\" }]\n").keyed("other");
        assert_eq!(text(other.complete(&request(&m, &a)).await), "x");
    }

    #[tokio::test]
    async fn a_when_turn_answers_its_input_only() {
        let model = model_of(
            r#"[[entries.m.config.turns]]
when = { input = "weather?" }
tool_calls = [{ name = "forecast" }]
[[entries.m.config.turns]]
when = { input = "weather?" }
text = "sunny"
[[entries.m.config.turns]]
when = { regex = '^(hi|hello)\b' }
text = "hello there"
"#,
        );
        let text = |r: Result<ModelResponse, ModelError>| r.unwrap().message;
        let weather = [ChatMessage::text(Role::User, "weather?")];
        let hello = [ChatMessage::text(Role::User, "hello you")];
        let run = crate::runtime::model::TurnCursors::new();
        assert_eq!(
            text(model.complete(&request(&hello, &run)).await).content,
            "hello there"
        );
        let first = text(model.complete(&request(&weather, &run)).await);
        assert_eq!(first.tool_calls[0].name, "forecast");
        assert_eq!(
            text(model.complete(&request(&weather, &run)).await).content,
            "sunny"
        );
        let err = model
            .complete(&request(&[ChatMessage::text(Role::User, "bye")], &run))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("has no turn 1 for this input (0 of its turns match it)"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_when_regex_points_at_its_turn() {
        let loaded = crate::load::load_str(
            "c.toml",
            "version = 1\n[entries.m]\nplugin = \"scripted\"\nconfig.turns = [{ text = \"a\" }, { text = \"b\", when = { regex = \"(\" } }]\n",
        );
        let text: Vec<String> = loaded
            .diagnostics
            .iter()
            .map(|d| d.message.clone())
            .collect();
        assert!(
            text.iter().any(
                |m| m.contains("/turns/1/when/regex") || m.contains("not a regular expression")
            ),
            "{text:?}"
        );
    }

    #[test]
    fn a_bad_turns_file_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.jsonl"),
            "{\"text\": \"ok\"}\n{\"txt\": 1}\n",
        )
        .unwrap();
        let config = ConfigValue::Table(
            [("turns_file".to_owned(), ConfigValue::Str("t.jsonl".into()))].into(),
        );
        let err = ScriptedModel::from_config(&config, &BuiltinEnv::new(dir.path())).unwrap_err();
        assert!(
            err.contains("t.jsonl:2") && err.contains("unknown key `txt`"),
            "{err}"
        );
    }
}
