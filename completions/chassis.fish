# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_chassis_global_optspecs
    string join \n format= color= v/verbose q/quiet h/help V/version
end

function __fish_chassis_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_chassis_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_chassis_using_subcommand
    set -l cmd (__fish_chassis_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c chassis -n "__fish_chassis_needs_command" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_needs_command" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_needs_command" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_needs_command" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_needs_command" -s V -l version -d 'Print version'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "run" -d 'Publish a composition and run an agent against exactly that generation'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "check" -d 'Load, validate and resolve compositions; list what does not resolve'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "snapshot" -d 'Print the snapshot of a resolved composition with its three digests'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "explain" -d 'Explain a requirement or a scope'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "diff" -d 'Compare two compositions, snapshots or git revisions semantically'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "publish" -d 'Reconcile a composition against the store and record a new generation'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "serve" -d 'Publish a composition and serve its agents over HTTP, reloading it as new generations'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "plan" -d 'Show what `publish` would do, changing nothing'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "generations" -d 'List or show the generations in the store'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "runs" -d 'List or show the runs recorded in the store'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "tools" -d 'List the tools a composition mounts, per scope, with their policy; start MCP servers and pin their tools in `chassis.lock`'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "plugin" -d 'Scaffold a plugin in Python or TypeScript, or check one against the plugin protocol'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "graph" -d 'Draw the dependency graph, scopes as clusters'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "schema" -d 'Print the JSON Schema of the composition format'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c chassis -n "__fish_chassis_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand run" -l agent -d 'The agent to run (required when the composition declares several)' -r
complete -c chassis -n "__fish_chassis_using_subcommand run" -l input -d 'The input; `-` reads it from stdin' -r
complete -c chassis -n "__fish_chassis_using_subcommand run" -l input-file -d 'Read the input from a file' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand run" -l approve -d 'Approve every call of this tool without asking (repeatable)' -r
complete -c chassis -n "__fish_chassis_using_subcommand run" -l grant -d 'Grant a permission for this run (repeatable), e.g. `filesystem.read:/workspace/**` or `network.*`: it widens the default policy (`[policy]`, else nothing is granted) and never overrides a deny rule; a scope a `policy` provider governs ignores it' -r
complete -c chassis -n "__fish_chassis_using_subcommand run" -l env-file -d 'Read secrets and `enabled_if` variables from this env file too (`KEY=VALUE` lines; its values win over the environment\'s)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand run" -l state -d 'Record the publication and the run in this store (given without a value: the composition\'s `[store] path`, else `.chassis/state.db` beside FILE)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand run" -l trace -d 'Write every telemetry signal of the run (redacted) to FILE as JSON lines' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand run" -l record -d 'Record every model call and tool call (redacted) to FILE' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand run" -l replay -d 'Answer model and tool calls from a recording; policy, approval and budget still run' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand run" -l replay-fallback -d 'What a replay does for a call it has no recording of: fail the run (`error`) or make the call live (`live`)' -r -f -a "error\t'Fail the run, naming the boundary'
live\t'Make the call live (it is not recorded)'"
complete -c chassis -n "__fish_chassis_using_subcommand run" -l request-tools -d 'Tools this run brings with its request: a composition of `command` entries. The run gets its own candidate generation with them (the published one never changes) and is stamped with its digest (`chassis snapshot FILE --agent NAME --request-tools FILE` gives it)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand run" -l session -d 'Continue (or start) the conversation NAME kept in the store (`--state`, else the default store): the model is sent its earlier turns, and this run becomes its next turn. `chassis serve` keeps its sessions in the same store, so one started there continues here. One turn at a time: while another process is taking a turn of NAME, this run is refused before it starts (exit 2, `run::session-busy`). NAME is 1 to 128 of `A-Z a-z 0-9 . _ -`' -r
complete -c chassis -n "__fish_chassis_using_subcommand run" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand run" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand run" -l yes -d 'Approve every tool call that needs approval'
complete -c chassis -n "__fish_chassis_using_subcommand run" -l allow-pending -d 'Run even when some entries are pending (they are left out)'
complete -c chassis -n "__fish_chassis_using_subcommand run" -l update-lock -d 'Start the `mcp` servers first and pin what they offer in `chassis.lock` (otherwise a server that differs from the lock fails the run before the agent starts, with the tool diff)'
complete -c chassis -n "__fish_chassis_using_subcommand run" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand run" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand check" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand check" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand check" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand check" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand snapshot" -l out -d 'Write the snapshot here instead of stdout (stdout then gets the digests)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand snapshot" -l agent -d 'Snapshot what a run of this agent executes against (its revision, `prompt_hash` and `graph_definition_hash`): the digest `chassis run` stamps on a run without a store' -r
complete -c chassis -n "__fish_chassis_using_subcommand snapshot" -l request-tools -d 'With `--agent`: the digest of a run whose request brings the tools of this file (`chassis run --request-tools`)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand snapshot" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand snapshot" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand snapshot" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand snapshot" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand snapshot" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -f -a "requirement" -d 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -f -a "scope" -d 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -f -a "reuse" -d 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -f -a "budgets" -d 'Each agent\'s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and not __fish_seen_subcommand_from requirement scope reuse budgets help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from requirement" -l scope -d 'The consumer\'s scope, to make sure it is the one you mean' -r
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from requirement" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from requirement" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from requirement" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from requirement" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from requirement" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from scope" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from scope" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from scope" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from scope" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from scope" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from reuse" -l state -d 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from reuse" -l composition -d 'Whose history, when compositions share the store: a composition file, or its lineage name (the file\'s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too' -r
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from reuse" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from reuse" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from reuse" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from reuse" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from reuse" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from budgets" -l agent -d 'Only this agent' -r
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from budgets" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from budgets" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from budgets" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from budgets" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from budgets" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from help" -f -a "requirement" -d 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from help" -f -a "scope" -d 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from help" -f -a "reuse" -d 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from help" -f -a "budgets" -d 'Each agent\'s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)'
complete -c chassis -n "__fish_chassis_using_subcommand explain; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and not __fish_seen_subcommand_from generations help" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand diff; and not __fish_seen_subcommand_from generations help" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand diff; and not __fish_seen_subcommand_from generations help" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and not __fish_seen_subcommand_from generations help" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and not __fish_seen_subcommand_from generations help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and not __fish_seen_subcommand_from generations help" -f -a "generations" -d 'Compare two generations'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and not __fish_seen_subcommand_from generations help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -l state -d 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -l composition -d 'Whose history, when compositions share the store: a composition file, or its lineage name (the file\'s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too' -r
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -l include-unchanged -d 'Also list what did not change'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -l exit-code -d 'Exit 1 exactly when the semantic digests differ (like `git diff --exit-code`)'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -l all -d 'With two stored generations: list reused nodes too in text and markdown (they are counted otherwise; JSON always lists them)'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from generations" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from help" -f -a "generations" -d 'Compare two generations'
complete -c chassis -n "__fish_chassis_using_subcommand diff; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand publish" -l state -d 'The store (default: the composition\'s `[store] path`, else `.chassis/state.db` beside FILE)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand publish" -l trace -d 'Write every telemetry signal of the publish (redacted) to FILE as JSON lines' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand publish" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand publish" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand publish" -l allow-pending -d 'Publish even when some entries are pending (they are left out)'
complete -c chassis -n "__fish_chassis_using_subcommand publish" -l update-lock -d 'Start the `mcp` servers first and pin what they offer in `chassis.lock` (otherwise a server that differs from the lock fails the publication with the tool diff)'
complete -c chassis -n "__fish_chassis_using_subcommand publish" -l all -d 'List every node in text output (reused ones are counted otherwise; JSON always lists them)'
complete -c chassis -n "__fish_chassis_using_subcommand publish" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand publish" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand publish" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l listen -d 'Address to listen on (port 0 picks a free port; the address is printed on stderr)' -r
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l state -d 'The store (default: the composition\'s `[store] path`, else `.chassis/state.db` beside FILE)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l env-file -d 'Secrets and `enabled_if` variables from this env file too' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l approve -d 'Approve every call of this tool without asking a client (repeatable)' -r
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l grant -d 'Widen the default policy: `name[:resource-pattern]` (repeatable)' -r
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l max-runs -d 'Runs at once; more are refused with 429 and `Retry-After`' -r
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l max-body -d 'Largest request body, in bytes' -r
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l drain-timeout -d 'Seconds runs in flight may take to finish after SIGTERM/SIGINT before they are cancelled' -r
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l read-timeout -d 'Seconds a client may take to send a request\'s headers, or between two chunks of its body; an idle kept-alive connection is closed after as long' -r
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l tls-cert -d 'Serve HTTPS with this PEM certificate chain (with --tls-key)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l tls-key -d 'The PEM private key of --tls-cert' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l allow-pending -d 'Publish without the pending entries instead of refusing'
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l allow-request-tools -d 'Let a run request bring its own `command` tools (`request_tools`, a request-tools file\'s TOML). A client can then name any program, run as this server\'s user: each call of one waits for a client\'s approval, starts in the composition\'s folder with none of the server\'s environment; without this flag such a request is refused (403)'
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l no-watch -d 'Do not reload when the composition\'s files change (SIGHUP and `POST /v1/reload` still do)'
complete -c chassis -n "__fish_chassis_using_subcommand serve" -l allow-insecure-bind -d 'Listen on a non-loopback address without TLS (tokens still required): only behind a proxy that terminates TLS'
complete -c chassis -n "__fish_chassis_using_subcommand serve" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand serve" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand plan" -l state -d 'The store (default: the composition\'s `[store] path`, else `.chassis/state.db` beside FILE)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand plan" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand plan" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand plan" -l allow-pending -d 'Plan as `publish --allow-pending` would'
complete -c chassis -n "__fish_chassis_using_subcommand plan" -l all -d 'List every node in text output (reused ones are counted otherwise; JSON always lists them)'
complete -c chassis -n "__fish_chassis_using_subcommand plan" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand plan" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand plan" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and not __fish_seen_subcommand_from list show help" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand generations; and not __fish_seen_subcommand_from list show help" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand generations; and not __fish_seen_subcommand_from list show help" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and not __fish_seen_subcommand_from list show help" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and not __fish_seen_subcommand_from list show help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and not __fish_seen_subcommand_from list show help" -f -a "list" -d 'Every published generation, grouped by composition (lineage), oldest first'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and not __fish_seen_subcommand_from list show help" -f -a "show" -d 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and not __fish_seen_subcommand_from list show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from list" -l state -d 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from list" -l composition -d 'Whose history, when compositions share the store: a composition file, or its lineage name (the file\'s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too' -r
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from list" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from list" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from list" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from show" -l state -d 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from show" -l composition -d 'Whose history, when compositions share the store: a composition file, or its lineage name (the file\'s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too' -r
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from show" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from show" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from show" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from show" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from help" -f -a "list" -d 'Every published generation, grouped by composition (lineage), oldest first'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from help" -f -a "show" -d 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node'
complete -c chassis -n "__fish_chassis_using_subcommand generations; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and not __fish_seen_subcommand_from list show help" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand runs; and not __fish_seen_subcommand_from list show help" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand runs; and not __fish_seen_subcommand_from list show help" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and not __fish_seen_subcommand_from list show help" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and not __fish_seen_subcommand_from list show help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and not __fish_seen_subcommand_from list show help" -f -a "list" -d 'Every recorded run, oldest first'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and not __fish_seen_subcommand_from list show help" -f -a "show" -d 'One run'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and not __fish_seen_subcommand_from list show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from list" -l state -d 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from list" -l composition -d 'Whose history, when compositions share the store: a composition file, or its lineage name (the file\'s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too' -r
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from list" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from list" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from list" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from show" -l state -d 'The store (default `.chassis/state.db` beside `--composition FILE`, else in the current directory)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from show" -l composition -d 'Whose history, when compositions share the store: a composition file, or its lineage name (the file\'s path in the workspace, or its `name = "…"`). A qualified id (`NAME:gen_0002`) names one too' -r
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from show" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from show" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from show" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from show" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from help" -f -a "list" -d 'Every recorded run, oldest first'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from help" -f -a "show" -d 'One run'
complete -c chassis -n "__fish_chassis_using_subcommand runs; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand tools" -l entry -d 'Only the tools of this entry (and only its server with `--live`)' -r
complete -c chassis -n "__fish_chassis_using_subcommand tools" -l scope -d 'Only this scope in the per-scope listing (e.g. `/research`)' -r
complete -c chassis -n "__fish_chassis_using_subcommand tools" -l env-file -d 'Read KEY=VALUE lines as extra environment (secrets for the servers)' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand tools" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand tools" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand tools" -l live -d 'Start the `mcp` servers and compare what they offer with the lock'
complete -c chassis -n "__fish_chassis_using_subcommand tools" -l update-lock -d 'Start the `mcp` servers and write what they offer to `chassis.lock`'
complete -c chassis -n "__fish_chassis_using_subcommand tools" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand tools" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand tools" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and not __fish_seen_subcommand_from new check help" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and not __fish_seen_subcommand_from new check help" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and not __fish_seen_subcommand_from new check help" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and not __fish_seen_subcommand_from new check help" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and not __fish_seen_subcommand_from new check help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and not __fish_seen_subcommand_from new check help" -f -a "new" -d 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and not __fish_seen_subcommand_from new check help" -f -a "check" -d 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and not __fish_seen_subcommand_from new check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from new" -l lang -d 'Its language' -r -f -a "python\t'Python 3.9+ (the SDK is one file of the standard library only)'
typescript\t'JavaScript for Node 18+, with TypeScript declarations'"
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from new" -l dir -d 'The folder to create (default: ./NAME); it must not exist or be empty' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from new" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from new" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from new" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from new" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from new" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from check" -l plugin -d 'Which plugin, when the file has several process plugins' -r
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from check" -l env-file -d 'Read secrets the entry\'s configuration references from this dotenv file too' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from check" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from check" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from check" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from check" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from help" -f -a "new" -d 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from help" -f -a "check" -d 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails'
complete -c chassis -n "__fish_chassis_using_subcommand plugin; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand graph" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand graph" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand graph" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand graph" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand graph" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand schema" -l write -d 'Write `composition.schema.json` into this directory instead of printing' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand schema" -l kind -d 'Print the `config` schema of one built-in plugin kind instead (`scripted`, `command`, …)' -r
complete -c chassis -n "__fish_chassis_using_subcommand schema" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand schema" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand schema" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand schema" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand schema" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand completions" -l dir -d 'Write the script into this directory (created when missing), named as clap_complete names it' -r -F
complete -c chassis -n "__fish_chassis_using_subcommand completions" -l format -d 'Output format: text, or json (one document with `format_version`; `schema` prints the JSON Schema itself); some commands also take markdown, dot or mermaid' -r -f -a "text\t'Human-readable text'
json\t'One JSON document with `format_version`'
markdown\t'Markdown (diff: a pull-request comment)'
dot\t'Graphviz dot (graph)'
mermaid\t'Mermaid flowchart (graph)'"
complete -c chassis -n "__fish_chassis_using_subcommand completions" -l color -d 'When to colour diagnostics' -r -f -a "auto\t'Colour when stderr is a terminal and `NO_COLOR` is unset'
always\t'Always colour'
never\t'Never colour'"
complete -c chassis -n "__fish_chassis_using_subcommand completions" -s v -l verbose -d 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
complete -c chassis -n "__fish_chassis_using_subcommand completions" -s q -l quiet -d 'Only errors on stderr'
complete -c chassis -n "__fish_chassis_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "run" -d 'Publish a composition and run an agent against exactly that generation'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "check" -d 'Load, validate and resolve compositions; list what does not resolve'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "snapshot" -d 'Print the snapshot of a resolved composition with its three digests'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "explain" -d 'Explain a requirement or a scope'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "diff" -d 'Compare two compositions, snapshots or git revisions semantically'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "publish" -d 'Reconcile a composition against the store and record a new generation'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "serve" -d 'Publish a composition and serve its agents over HTTP, reloading it as new generations'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "plan" -d 'Show what `publish` would do, changing nothing'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "generations" -d 'List or show the generations in the store'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "runs" -d 'List or show the runs recorded in the store'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "tools" -d 'List the tools a composition mounts, per scope, with their policy; start MCP servers and pin their tools in `chassis.lock`'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "plugin" -d 'Scaffold a plugin in Python or TypeScript, or check one against the plugin protocol'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "graph" -d 'Draw the dependency graph, scopes as clusters'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "schema" -d 'Print the JSON Schema of the composition format'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "completions" -d 'Print a shell completion script'
complete -c chassis -n "__fish_chassis_using_subcommand help; and not __fish_seen_subcommand_from run check snapshot explain diff publish serve plan generations runs tools plugin graph schema completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from explain" -f -a "requirement" -d 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from explain" -f -a "scope" -d 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from explain" -f -a "reuse" -d 'Why a node was reused, rebuilt or rewired between two stored generations: which identity parts changed'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from explain" -f -a "budgets" -d 'Each agent\'s budget limits per dimension and how they are enforced (the built-in loop enforces every dimension at its boundaries)'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from diff" -f -a "generations" -d 'Compare two generations'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from generations" -f -a "list" -d 'Every published generation, grouped by composition (lineage), oldest first'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from generations" -f -a "show" -d 'One generation: digests, nodes (entry, instance id, mount, identity hashes) and what its publish did to each node'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from runs" -f -a "list" -d 'Every recorded run, oldest first'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from runs" -f -a "show" -d 'One run'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from plugin" -f -a "new" -d 'Write a working plugin into a new folder: the plugin, its SDK vendored beside it, its manifest as an include file, and a test'
complete -c chassis -n "__fish_chassis_using_subcommand help; and __fish_seen_subcommand_from plugin" -f -a "check" -d 'Run the protocol conformance suite against a plugin, started as chassis starts it: version negotiation and refusal, its declaration against the TOML manifest, -32601 for an unknown method, -32602 for malformed params, its registrations, `$/cancel`, teardown within the grace period, and nothing but protocol messages on stdout. Exit 1 when a check fails'
