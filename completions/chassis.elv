
use builtin;
use str;

set edit:completion:arg-completer[chassis] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'chassis'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'chassis'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand run 'Publish a composition and run an agent against exactly that generation'
            cand check 'Load, validate and resolve compositions; list what does not resolve'
            cand snapshot 'Print the snapshot of a resolved composition with its three digests'
            cand explain 'Explain a requirement or a scope'
            cand diff 'Compare two compositions, snapshots or git revisions semantically'
            cand publish 'Reconcile a composition against the store and record a new generation'
            cand serve 'Publish a composition and serve its agents over HTTP, reloading it as new generations'
            cand plan 'Show what `publish` would do, changing nothing'
            cand generations 'List or show the generations in the store'
            cand runs 'List or show the runs recorded in the store'
            cand tools 'List the tools a composition mounts, per scope, with their policy; start MCP servers and pin their tools in `chassis.lock`'
            cand plugin 'Scaffold a plugin in Python or TypeScript, or check one against the plugin protocol'
            cand graph 'Draw the dependency graph, scopes as clusters'
            cand schema 'Print the JSON Schema of the composition format'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;run'= {
            cand --agent 'The agent to run (required when the composition declares several)'
            cand --input 'The input; `-` reads it from stdin'
            cand --input-file 'Read the input from a file'
            cand --approve 'Approve every call of this tool without asking (repeatable)'
            cand --grant 'Grant a permission for this run (repeatable), e.g. `filesystem.read:/workspace/**` or `network.*`: it widens the default policy (`[policy]`, else nothing is granted) and never overrides a deny rule; a scope a `policy` provider governs ignores it'
            cand --env-file 'Read secrets and `enabled_if` variables from this env file too (`KEY=VALUE` lines; its values win over the environment''s)'
            cand --state 'Record the publication and the run in this store (given without a value: the composition''s `[store] path`, else `.chassis/state.db` beside FILE)'
            cand --trace 'Write every telemetry signal of the run (redacted) to FILE as JSON lines'
            cand --record 'Record every model call and tool call (redacted) to FILE'
            cand --replay 'Answer model and tool calls from a recording; policy, approval and budget still run'
            cand --replay-fallback 'What a replay does for a call it has no recording of: fail the run (`error`) or make the call live (`live`)'
            cand --request-tools 'Tools this run brings with its request: a composition of `command` entries. The run gets its own candidate generation with them (the published one never changes) and is stamped with its digest (`chassis snapshot FILE --agent NAME --request-tools FILE` gives it)'
            cand --session 'Continue (or start) the conversation NAME kept in the store (`--state`, else the default store): the model is sent its earlier turns, and this run becomes its next turn. `chassis serve` keeps its sessions in the same store, so one started there continues here. One turn at a time: while another process is taking a turn of NAME, this run is refused before it starts (exit 2, `run::session-busy`). NAME is 1 to 128 of `A-Z a-z 0-9 . _ -`'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand --yes 'Approve every tool call that needs approval'
            cand --allow-pending 'Run even when some entries are pending (they are left out)'
            cand --update-lock 'Start the `mcp` servers first and pin what they offer in `chassis.lock` (otherwise a server that differs from the lock fails the run before the agent starts, with the tool diff)'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;check'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;snapshot'= {
            cand --out 'Write the snapshot here instead of stdout (stdout then gets the digests)'
            cand --agent 'Snapshot what a run of this agent executes against (its revision, `prompt_hash` and `graph_definition_hash`): the digest `chassis run` stamps on a run without a store'
            cand --request-tools 'With `--agent`: the digest of a run whose request brings the tools of this file (`chassis run --request-tools`)'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;explain'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand requirement 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected'
            cand scope 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted'
            cand reuse 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed'
            cand budgets 'Each agent''s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;explain;requirement'= {
            cand --scope 'The consumer''s scope, to make sure it is the one you mean'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;explain;scope'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;explain;reuse'= {
            cand --state 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)'
            cand --composition 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;explain;budgets'= {
            cand --agent 'Only this agent'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;explain;help'= {
            cand requirement 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected'
            cand scope 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted'
            cand reuse 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed'
            cand budgets 'Each agent''s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;explain;help;requirement'= {
        }
        &'chassis;explain;help;scope'= {
        }
        &'chassis;explain;help;reuse'= {
        }
        &'chassis;explain;help;budgets'= {
        }
        &'chassis;explain;help;help'= {
        }
        &'chassis;diff'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand generations 'Compare two generations'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;diff;generations'= {
            cand --state 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)'
            cand --composition 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand --include-unchanged 'Also list what did not change'
            cand --exit-code 'Exit 1 exactly when the semantic digests differ (like `git diff --exit-code`)'
            cand --all 'With two stored generations: list reused nodes too in text and markdown (they are counted otherwise; JSON always lists them)'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;diff;help'= {
            cand generations 'Compare two generations'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;diff;help;generations'= {
        }
        &'chassis;diff;help;help'= {
        }
        &'chassis;publish'= {
            cand --state 'The store (default: the composition''s `[store] path`, else `.chassis/state.db` beside FILE)'
            cand --trace 'Write every telemetry signal of the publish (redacted) to FILE as JSON lines'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand --allow-pending 'Publish even when some entries are pending (they are left out)'
            cand --update-lock 'Start the `mcp` servers first and pin what they offer in `chassis.lock` (otherwise a server that differs from the lock fails the publication with the tool diff)'
            cand --all 'List every node in text output (reused ones are counted otherwise; JSON always lists them)'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;serve'= {
            cand --listen 'Address to listen on (port 0 picks a free port; the address is printed on stderr)'
            cand --state 'The store (default: the composition''s `[store] path`, else `.chassis/state.db` beside FILE)'
            cand --env-file 'Secrets and `enabled_if` variables from this env file too'
            cand --approve 'Approve every call of this tool without asking a client (repeatable)'
            cand --grant 'Widen the default policy: `name[:resource-pattern]` (repeatable)'
            cand --max-runs 'Runs at once; more are refused with 429 and `Retry-After`'
            cand --max-body 'Largest request body, in bytes'
            cand --drain-timeout 'Seconds runs in flight may take to finish after SIGTERM/SIGINT before they are cancelled'
            cand --read-timeout 'Seconds a client may take to send a request''s headers, or between two chunks of its body; an idle kept-alive connection is closed after as long'
            cand --tls-cert 'Serve HTTPS with this PEM certificate chain (with --tls-key)'
            cand --tls-key 'The PEM private key of --tls-cert'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand --allow-pending 'Publish without the pending entries instead of refusing'
            cand --allow-request-tools 'Let a run request bring its own `command` tools (`request_tools`, a request-tools file''s TOML). A client can then name any program, run as this server''s user: each call of one waits for a client''s approval, starts in the composition''s folder with none of the server''s environment; without this flag such a request is refused (403)'
            cand --no-watch 'Do not reload when the composition''s files change (SIGHUP and `POST /v1/reload` still do)'
            cand --allow-insecure-bind 'Listen on a non-loopback address without TLS (tokens still required): only behind a proxy that terminates TLS'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;plan'= {
            cand --state 'The store (default: the composition''s `[store] path`, else `.chassis/state.db` beside FILE)'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand --allow-pending 'Plan as `publish --allow-pending` would'
            cand --all 'List every node in text output (reused ones are counted otherwise; JSON always lists them)'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;generations'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand list 'Every published generation, grouped by composition (lineage), oldest first'
            cand show 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;generations;list'= {
            cand --state 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)'
            cand --composition 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;generations;show'= {
            cand --state 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)'
            cand --composition 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;generations;help'= {
            cand list 'Every published generation, grouped by composition (lineage), oldest first'
            cand show 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;generations;help;list'= {
        }
        &'chassis;generations;help;show'= {
        }
        &'chassis;generations;help;help'= {
        }
        &'chassis;runs'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand list 'Every recorded run, oldest first'
            cand show 'One run'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;runs;list'= {
            cand --state 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)'
            cand --composition 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;runs;show'= {
            cand --state 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)'
            cand --composition 'Whose history, when compositions share the store: a composition file, or its lineage name (the file''s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;runs;help'= {
            cand list 'Every recorded run, oldest first'
            cand show 'One run'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;runs;help;list'= {
        }
        &'chassis;runs;help;show'= {
        }
        &'chassis;runs;help;help'= {
        }
        &'chassis;tools'= {
            cand --entry 'Only the tools of this entry (and only its server with `--live`)'
            cand --scope 'Only this scope in the per-scope listing (e.g. `/research`)'
            cand --env-file 'Read KEY=VALUE lines as extra environment (secrets for the servers)'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand --live 'Start the `mcp` servers and compare what they offer with the lock'
            cand --update-lock 'Start the `mcp` servers and write what they offer to `chassis.lock`'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;plugin'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand new 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test'
            cand check 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;plugin;new'= {
            cand --lang 'Its language'
            cand --dir 'The folder to create (default: ./NAME); it must not exist or be empty'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;plugin;check'= {
            cand --plugin 'Which plugin, when the file has several process plugins'
            cand --env-file 'Read secrets the entry''s configuration references from this dotenv file too'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;plugin;help'= {
            cand new 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test'
            cand check 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;plugin;help;new'= {
        }
        &'chassis;plugin;help;check'= {
        }
        &'chassis;plugin;help;help'= {
        }
        &'chassis;graph'= {
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;schema'= {
            cand --write 'Write `composition.schema.json` into this directory instead of printing'
            cand --kind 'Print the `config` schema of one built-in plugin kind instead (`scripted`, `command`, …)'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;completions'= {
            cand --dir 'Write the script into this directory (created when missing), named as clap_complete names it'
            cand --format 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;help'= {
            cand run 'Publish a composition and run an agent against exactly that generation'
            cand check 'Load, validate and resolve compositions; list what does not resolve'
            cand snapshot 'Print the snapshot of a resolved composition with its three digests'
            cand explain 'Explain a requirement or a scope'
            cand diff 'Compare two compositions, snapshots or git revisions semantically'
            cand publish 'Reconcile a composition against the store and record a new generation'
            cand serve 'Publish a composition and serve its agents over HTTP, reloading it as new generations'
            cand plan 'Show what `publish` would do, changing nothing'
            cand generations 'List or show the generations in the store'
            cand runs 'List or show the runs recorded in the store'
            cand tools 'List the tools a composition mounts, per scope, with their policy; start MCP servers and pin their tools in `chassis.lock`'
            cand plugin 'Scaffold a plugin in Python or TypeScript, or check one against the plugin protocol'
            cand graph 'Draw the dependency graph, scopes as clusters'
            cand schema 'Print the JSON Schema of the composition format'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;help;run'= {
        }
        &'chassis;help;check'= {
        }
        &'chassis;help;snapshot'= {
        }
        &'chassis;help;explain'= {
            cand requirement 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected'
            cand scope 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted'
            cand reuse 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed'
            cand budgets 'Each agent''s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)'
        }
        &'chassis;help;explain;requirement'= {
        }
        &'chassis;help;explain;scope'= {
        }
        &'chassis;help;explain;reuse'= {
        }
        &'chassis;help;explain;budgets'= {
        }
        &'chassis;help;diff'= {
            cand generations 'Compare two generations'
        }
        &'chassis;help;diff;generations'= {
        }
        &'chassis;help;publish'= {
        }
        &'chassis;help;serve'= {
        }
        &'chassis;help;plan'= {
        }
        &'chassis;help;generations'= {
            cand list 'Every published generation, grouped by composition (lineage), oldest first'
            cand show 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node'
        }
        &'chassis;help;generations;list'= {
        }
        &'chassis;help;generations;show'= {
        }
        &'chassis;help;runs'= {
            cand list 'Every recorded run, oldest first'
            cand show 'One run'
        }
        &'chassis;help;runs;list'= {
        }
        &'chassis;help;runs;show'= {
        }
        &'chassis;help;tools'= {
        }
        &'chassis;help;plugin'= {
            cand new 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test'
            cand check 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails'
        }
        &'chassis;help;plugin;new'= {
        }
        &'chassis;help;plugin;check'= {
        }
        &'chassis;help;graph'= {
        }
        &'chassis;help;schema'= {
        }
        &'chassis;help;completions'= {
        }
        &'chassis;help;help'= {
        }
    ]
    $completions[$command]
}
