
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'chassis' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'chassis'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'chassis' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Publish a composition and run an agent against exactly that generation')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Load, validate and resolve compositions; list what does not resolve')
            [CompletionResult]::new('snapshot', 'snapshot', [CompletionResultType]::ParameterValue, 'Print the snapshot of a resolved composition with its three digests')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Explain a requirement or a scope')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Compare two compositions, snapshots or git revisions semantically')
            [CompletionResult]::new('publish', 'publish', [CompletionResultType]::ParameterValue, 'Reconcile a composition against the store and record a new generation')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Publish a composition and serve its agents over HTTP, reloading it as new generations')
            [CompletionResult]::new('plan', 'plan', [CompletionResultType]::ParameterValue, 'Show what `publish` would do, changing nothing')
            [CompletionResult]::new('generations', 'generations', [CompletionResultType]::ParameterValue, 'List or show the generations in the store')
            [CompletionResult]::new('runs', 'runs', [CompletionResultType]::ParameterValue, 'List or show the runs recorded in the store')
            [CompletionResult]::new('tools', 'tools', [CompletionResultType]::ParameterValue, 'List the tools a composition mounts, per scope, with their policy; start MCP servers and pin their tools in `chassis.lock`')
            [CompletionResult]::new('plugin', 'plugin', [CompletionResultType]::ParameterValue, 'Scaffold a plugin in Python or TypeScript, or check one against the plugin protocol')
            [CompletionResult]::new('graph', 'graph', [CompletionResultType]::ParameterValue, 'Draw the dependency graph, scopes as clusters')
            [CompletionResult]::new('schema', 'schema', [CompletionResultType]::ParameterValue, 'Print the JSON Schema of the composition format')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;run' {
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'The agent to run (required when the composition declares several)')
            [CompletionResult]::new('--input', '--input', [CompletionResultType]::ParameterName, 'The input; `-` reads it from stdin')
            [CompletionResult]::new('--input-file', '--input-file', [CompletionResultType]::ParameterName, 'Read the input from a file')
            [CompletionResult]::new('--approve', '--approve', [CompletionResultType]::ParameterName, 'Approve every call of this tool without asking (repeatable)')
            [CompletionResult]::new('--grant', '--grant', [CompletionResultType]::ParameterName, 'Grant a permission for this run (repeatable), e.g. `filesystem.read:/workspace/**` or `network.*`: it widens the default policy (`[policy]`, else nothing is granted) and never overrides a deny rule; a scope a `policy` provider governs ignores it')
            [CompletionResult]::new('--env-file', '--env-file', [CompletionResultType]::ParameterName, 'Read secrets and `enabled_if` variables from this env file too (`KEY=VALUE` lines; its values win over the environment''s)')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Record the publication and the run in this store (given without a value: the composition''s `[store] path`, else `.chassis/state.db` beside FILE)')
            [CompletionResult]::new('--trace', '--trace', [CompletionResultType]::ParameterName, 'Write every telemetry signal of the run (redacted) to FILE as JSON lines')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Record every model call and tool call (redacted) to FILE')
            [CompletionResult]::new('--replay', '--replay', [CompletionResultType]::ParameterName, 'Answer model and tool calls from a recording; policy, approval and budget still run')
            [CompletionResult]::new('--replay-fallback', '--replay-fallback', [CompletionResultType]::ParameterName, 'What a replay does for a call it has no recording of: fail the run (`error`) or make the call live (`live`)')
            [CompletionResult]::new('--request-tools', '--request-tools', [CompletionResultType]::ParameterName, 'Tools this run brings with its request: a composition of `command` entries. The run gets its own candidate generation with them (the published one never changes) and is stamped with its digest (`chassis snapshot FILE --agent NAME --request-tools FILE` gives it)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Continue (or start) the conversation NAME kept in the store (`--state`, else the default store): the model is sent its earlier turns, and this run becomes its next turn. `chassis serve` keeps its sessions in the same store, so one started there continues here. One turn at a time: while another process is taking a turn of NAME, this run is refused before it starts (exit 2, `run::session-busy`). NAME is 1 to 128 of `A-Z a-z 0-9 . _ -`')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Approve every tool call that needs approval')
            [CompletionResult]::new('--allow-pending', '--allow-pending', [CompletionResultType]::ParameterName, 'Run even when some entries are pending (they are left out)')
            [CompletionResult]::new('--update-lock', '--update-lock', [CompletionResultType]::ParameterName, 'Start the `mcp` servers first and pin what they offer in `chassis.lock` (otherwise a server that differs from the lock fails the run before the agent starts, with the tool diff)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;check' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;snapshot' {
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Write the snapshot here instead of stdout (stdout then gets the digests)')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Snapshot what a run of this agent executes against (its revision, `prompt_hash` and `graph_definition_hash`): the digest `chassis run` stamps on a run without a store')
            [CompletionResult]::new('--request-tools', '--request-tools', [CompletionResultType]::ParameterName, 'With `--agent`: the digest of a run whose request brings the tools of this file (`chassis run --request-tools`)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;explain' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('requirement', 'requirement', [CompletionResultType]::ParameterValue, 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected')
            [CompletionResult]::new('scope', 'scope', [CompletionResultType]::ParameterValue, 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted')
            [CompletionResult]::new('reuse', 'reuse', [CompletionResultType]::ParameterValue, 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed')
            [CompletionResult]::new('budgets', 'budgets', [CompletionResultType]::ParameterValue, 'Each agent''s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;explain;requirement' {
            [CompletionResult]::new('--scope', '--scope', [CompletionResultType]::ParameterName, 'The consumer''s scope, to make sure it is the one you mean')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;explain;scope' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;explain;reuse' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)')
            [CompletionResult]::new('--composition', '--composition', [CompletionResultType]::ParameterName, 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;explain;budgets' {
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'Only this agent')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;explain;help' {
            [CompletionResult]::new('requirement', 'requirement', [CompletionResultType]::ParameterValue, 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected')
            [CompletionResult]::new('scope', 'scope', [CompletionResultType]::ParameterValue, 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted')
            [CompletionResult]::new('reuse', 'reuse', [CompletionResultType]::ParameterValue, 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed')
            [CompletionResult]::new('budgets', 'budgets', [CompletionResultType]::ParameterValue, 'Each agent''s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;explain;help;requirement' {
            break
        }
        'chassis;explain;help;scope' {
            break
        }
        'chassis;explain;help;reuse' {
            break
        }
        'chassis;explain;help;budgets' {
            break
        }
        'chassis;explain;help;help' {
            break
        }
        'chassis;diff' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('generations', 'generations', [CompletionResultType]::ParameterValue, 'Compare two generations')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;diff;generations' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)')
            [CompletionResult]::new('--composition', '--composition', [CompletionResultType]::ParameterName, 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('--include-unchanged', '--include-unchanged', [CompletionResultType]::ParameterName, 'Also list what did not change')
            [CompletionResult]::new('--exit-code', '--exit-code', [CompletionResultType]::ParameterName, 'Exit 1 exactly when the semantic digests differ (like `git diff --exit-code`)')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'With two stored generations: list reused nodes too in text and markdown (they are counted otherwise; JSON always lists them)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;diff;help' {
            [CompletionResult]::new('generations', 'generations', [CompletionResultType]::ParameterValue, 'Compare two generations')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;diff;help;generations' {
            break
        }
        'chassis;diff;help;help' {
            break
        }
        'chassis;publish' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default: the composition''s `[store] path`, else `.chassis/state.db` beside FILE)')
            [CompletionResult]::new('--trace', '--trace', [CompletionResultType]::ParameterName, 'Write every telemetry signal of the publish (redacted) to FILE as JSON lines')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('--allow-pending', '--allow-pending', [CompletionResultType]::ParameterName, 'Publish even when some entries are pending (they are left out)')
            [CompletionResult]::new('--update-lock', '--update-lock', [CompletionResultType]::ParameterName, 'Start the `mcp` servers first and pin what they offer in `chassis.lock` (otherwise a server that differs from the lock fails the publication with the tool diff)')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'List every node in text output (reused ones are counted otherwise; JSON always lists them)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;serve' {
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Address to listen on (port 0 picks a free port; the address is printed on stderr)')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default: the composition''s `[store] path`, else `.chassis/state.db` beside FILE)')
            [CompletionResult]::new('--env-file', '--env-file', [CompletionResultType]::ParameterName, 'Secrets and `enabled_if` variables from this env file too')
            [CompletionResult]::new('--approve', '--approve', [CompletionResultType]::ParameterName, 'Approve every call of this tool without asking a client (repeatable)')
            [CompletionResult]::new('--grant', '--grant', [CompletionResultType]::ParameterName, 'Widen the default policy: `name[:resource-pattern]` (repeatable)')
            [CompletionResult]::new('--max-runs', '--max-runs', [CompletionResultType]::ParameterName, 'Runs at once; more are refused with 429 and `Retry-After`')
            [CompletionResult]::new('--max-body', '--max-body', [CompletionResultType]::ParameterName, 'Largest request body, in bytes')
            [CompletionResult]::new('--drain-timeout', '--drain-timeout', [CompletionResultType]::ParameterName, 'Seconds runs in flight may take to finish after SIGTERM/SIGINT before they are cancelled')
            [CompletionResult]::new('--read-timeout', '--read-timeout', [CompletionResultType]::ParameterName, 'Seconds a client may take to send a request''s headers, or between two chunks of its body; an idle kept-alive connection is closed after as long')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Serve HTTPS with this PEM certificate chain (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'The PEM private key of --tls-cert')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('--allow-pending', '--allow-pending', [CompletionResultType]::ParameterName, 'Publish without the pending entries instead of refusing')
            [CompletionResult]::new('--allow-request-tools', '--allow-request-tools', [CompletionResultType]::ParameterName, 'Let a run request bring its own `command` tools (`request_tools`, a request-tools file''s TOML). A client can then name any program, run as this server''s user: each call of one waits for a client''s approval, starts in the composition''s folder with none of the server''s environment; without this flag such a request is refused (403)')
            [CompletionResult]::new('--no-watch', '--no-watch', [CompletionResultType]::ParameterName, 'Do not reload when the composition''s files change (SIGHUP and `POST /v1/reload` still do)')
            [CompletionResult]::new('--allow-insecure-bind', '--allow-insecure-bind', [CompletionResultType]::ParameterName, 'Listen on a non-loopback address without TLS (tokens still required): only behind a proxy that terminates TLS')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;plan' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default: the composition''s `[store] path`, else `.chassis/state.db` beside FILE)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('--allow-pending', '--allow-pending', [CompletionResultType]::ParameterName, 'Plan as `publish --allow-pending` would')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'List every node in text output (reused ones are counted otherwise; JSON always lists them)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;generations' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every published generation, grouped by composition (lineage), oldest first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;generations;list' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)')
            [CompletionResult]::new('--composition', '--composition', [CompletionResultType]::ParameterName, 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;generations;show' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)')
            [CompletionResult]::new('--composition', '--composition', [CompletionResultType]::ParameterName, 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;generations;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every published generation, grouped by composition (lineage), oldest first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;generations;help;list' {
            break
        }
        'chassis;generations;help;show' {
            break
        }
        'chassis;generations;help;help' {
            break
        }
        'chassis;runs' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every recorded run, oldest first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'One run')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;runs;list' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)')
            [CompletionResult]::new('--composition', '--composition', [CompletionResultType]::ParameterName, 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;runs;show' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)')
            [CompletionResult]::new('--composition', '--composition', [CompletionResultType]::ParameterName, 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;runs;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every recorded run, oldest first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'One run')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;runs;help;list' {
            break
        }
        'chassis;runs;help;show' {
            break
        }
        'chassis;runs;help;help' {
            break
        }
        'chassis;tools' {
            [CompletionResult]::new('--entry', '--entry', [CompletionResultType]::ParameterName, 'Only the tools of this entry (and only its server with `--live`)')
            [CompletionResult]::new('--scope', '--scope', [CompletionResultType]::ParameterName, 'Only this scope in the per-scope listing (e.g. `/research`)')
            [CompletionResult]::new('--env-file', '--env-file', [CompletionResultType]::ParameterName, 'Read KEY=VALUE lines as extra environment (secrets for the servers)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('--live', '--live', [CompletionResultType]::ParameterName, 'Start the `mcp` servers and compare what they offer with the lock')
            [CompletionResult]::new('--update-lock', '--update-lock', [CompletionResultType]::ParameterName, 'Start the `mcp` servers and write what they offer to `chassis.lock`')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;plugin' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;plugin;new' {
            [CompletionResult]::new('--lang', '--lang', [CompletionResultType]::ParameterName, 'Its language')
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'The folder to create (default: ./NAME); it must not exist or be empty')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;plugin;check' {
            [CompletionResult]::new('--plugin', '--plugin', [CompletionResultType]::ParameterName, 'Which plugin, when the file has several process plugins')
            [CompletionResult]::new('--env-file', '--env-file', [CompletionResultType]::ParameterName, 'Read secrets the entry''s configuration references from this dotenv file too')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;plugin;help' {
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;plugin;help;new' {
            break
        }
        'chassis;plugin;help;check' {
            break
        }
        'chassis;plugin;help;help' {
            break
        }
        'chassis;graph' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;schema' {
            [CompletionResult]::new('--write', '--write', [CompletionResultType]::ParameterName, 'Write `composition.schema.json` into this directory instead of printing')
            [CompletionResult]::new('--kind', '--kind', [CompletionResultType]::ParameterName, 'Print the `config` schema of one built-in plugin kind instead (`scripted`, `command`, …)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;completions' {
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'Write the script into this directory (created when missing), named as clap_complete names it')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour diagnostics')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'chassis;help' {
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Publish a composition and run an agent against exactly that generation')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Load, validate and resolve compositions; list what does not resolve')
            [CompletionResult]::new('snapshot', 'snapshot', [CompletionResultType]::ParameterValue, 'Print the snapshot of a resolved composition with its three digests')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Explain a requirement or a scope')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Compare two compositions, snapshots or git revisions semantically')
            [CompletionResult]::new('publish', 'publish', [CompletionResultType]::ParameterValue, 'Reconcile a composition against the store and record a new generation')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Publish a composition and serve its agents over HTTP, reloading it as new generations')
            [CompletionResult]::new('plan', 'plan', [CompletionResultType]::ParameterValue, 'Show what `publish` would do, changing nothing')
            [CompletionResult]::new('generations', 'generations', [CompletionResultType]::ParameterValue, 'List or show the generations in the store')
            [CompletionResult]::new('runs', 'runs', [CompletionResultType]::ParameterValue, 'List or show the runs recorded in the store')
            [CompletionResult]::new('tools', 'tools', [CompletionResultType]::ParameterValue, 'List the tools a composition mounts, per scope, with their policy; start MCP servers and pin their tools in `chassis.lock`')
            [CompletionResult]::new('plugin', 'plugin', [CompletionResultType]::ParameterValue, 'Scaffold a plugin in Python or TypeScript, or check one against the plugin protocol')
            [CompletionResult]::new('graph', 'graph', [CompletionResultType]::ParameterValue, 'Draw the dependency graph, scopes as clusters')
            [CompletionResult]::new('schema', 'schema', [CompletionResultType]::ParameterValue, 'Print the JSON Schema of the composition format')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'chassis;help;run' {
            break
        }
        'chassis;help;check' {
            break
        }
        'chassis;help;snapshot' {
            break
        }
        'chassis;help;explain' {
            [CompletionResult]::new('requirement', 'requirement', [CompletionResultType]::ParameterValue, 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected')
            [CompletionResult]::new('scope', 'scope', [CompletionResultType]::ParameterValue, 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted')
            [CompletionResult]::new('reuse', 'reuse', [CompletionResultType]::ParameterValue, 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed')
            [CompletionResult]::new('budgets', 'budgets', [CompletionResultType]::ParameterValue, 'Each agent''s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)')
            break
        }
        'chassis;help;explain;requirement' {
            break
        }
        'chassis;help;explain;scope' {
            break
        }
        'chassis;help;explain;reuse' {
            break
        }
        'chassis;help;explain;budgets' {
            break
        }
        'chassis;help;diff' {
            [CompletionResult]::new('generations', 'generations', [CompletionResultType]::ParameterValue, 'Compare two generations')
            break
        }
        'chassis;help;diff;generations' {
            break
        }
        'chassis;help;publish' {
            break
        }
        'chassis;help;serve' {
            break
        }
        'chassis;help;plan' {
            break
        }
        'chassis;help;generations' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every published generation, grouped by composition (lineage), oldest first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node')
            break
        }
        'chassis;help;generations;list' {
            break
        }
        'chassis;help;generations;show' {
            break
        }
        'chassis;help;runs' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Every recorded run, oldest first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'One run')
            break
        }
        'chassis;help;runs;list' {
            break
        }
        'chassis;help;runs;show' {
            break
        }
        'chassis;help;tools' {
            break
        }
        'chassis;help;plugin' {
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails')
            break
        }
        'chassis;help;plugin;new' {
            break
        }
        'chassis;help;plugin;check' {
            break
        }
        'chassis;help;graph' {
            break
        }
        'chassis;help;schema' {
            break
        }
        'chassis;help;completions' {
            break
        }
        'chassis;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
