
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
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand check 'Load, validate and resolve compositions; list what does not resolve'
            cand snapshot 'Print the snapshot of a resolved composition with its three digests'
            cand explain 'Explain a requirement or a scope'
            cand diff 'Compare two compositions, snapshots or git revisions semantically'
            cand graph 'Draw the dependency graph, scopes as clusters'
            cand schema 'Print the JSON Schema of the composition format'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;check'= {
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
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
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;explain'= {
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand requirement 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected'
            cand scope 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;explain;requirement'= {
            cand --scope 'The consumer''s scope, to make sure it is the one you mean'
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;explain;scope'= {
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
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
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;explain;help;requirement'= {
        }
        &'chassis;explain;help;scope'= {
        }
        &'chassis;explain;help;help'= {
        }
        &'chassis;diff'= {
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
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
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand --include-unchanged 'Also list what did not change'
            cand --exit-code 'Exit 1 exactly when the semantic digests differ (like `git diff --exit-code`)'
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
        &'chassis;graph'= {
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
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
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;completions'= {
            cand --dir 'Write the script into this directory (as clap_complete names it)'
            cand --format 'Output format: text, or json (one document with `format_version`); some commands also take markdown, dot or mermaid'
            cand --color 'When to colour diagnostics'
            cand -v 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand --verbose 'More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides'
            cand -q 'Only errors on stderr'
            cand --quiet 'Only errors on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'chassis;help'= {
            cand check 'Load, validate and resolve compositions; list what does not resolve'
            cand snapshot 'Print the snapshot of a resolved composition with its three digests'
            cand explain 'Explain a requirement or a scope'
            cand diff 'Compare two compositions, snapshots or git revisions semantically'
            cand graph 'Draw the dependency graph, scopes as clusters'
            cand schema 'Print the JSON Schema of the composition format'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'chassis;help;check'= {
        }
        &'chassis;help;snapshot'= {
        }
        &'chassis;help;explain'= {
            cand requirement 'Every candidate for one requirement: origin, visibility, eligibility, selection, and the reason each was rejected'
            cand scope 'A scope: parent, children, effective view, providers (local, inherited, visible), entries, requirements, tools. Metadata values are redacted'
        }
        &'chassis;help;explain;requirement'= {
        }
        &'chassis;help;explain;scope'= {
        }
        &'chassis;help;diff'= {
            cand generations 'Compare two generations'
        }
        &'chassis;help;diff;generations'= {
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
