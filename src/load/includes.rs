//! Reading the root file and its includes, depth first in include order.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use toml::de::DeTable;

use super::pieces::{PIECE_BYTES, SPLIT_FROM_BYTES, split};
use super::reader::{FileCtx, span};
use super::source::{Source, SourceError, SourceErrorKind, is_toml, normalize};
use super::source_map::SourceMap;
use super::walk::{FileOut, walk_file};
use crate::engine::diag::{Code, Diagnostic};
use crate::engine::span::{Origin, SourceId, Span};

/// How many diagnostics a file with syntax errors reports before the rest
/// are summed up in one line: one missing bracket can echo into thousands,
/// and only the first few help.
pub const MAX_DIAGNOSTICS_AFTER_SYNTAX_ERROR: usize = 20;

/// Parse and walk a whole file: its output (`None` past an unsupported
/// format version) and whether it had syntax errors.
fn walk_whole(
    id: SourceId,
    text: &str,
    root: bool,
    diags: &mut Vec<Diagnostic>,
    concealed: &mut Vec<Span>,
) -> (Option<FileOut>, bool) {
    let (doc, errors) = DeTable::parse_recoverable(text);
    let has_syntax = !errors.is_empty();
    for e in errors {
        let at = e.span().map(span).unwrap_or_default();
        let d = Diagnostic::error(
            Code::Syntax,
            format!("invalid TOML: {}", e.message().trim_end()),
        )
        .at(Some(Origin::new(id, at)), "");
        diags.push(d);
    }
    let mut cx = FileCtx {
        source: id,
        text,
        base: 0,
        diags,
        concealed: Vec::new(),
    };
    let mut out = FileOut::default();
    let read = walk_file(&mut cx, doc.get_ref(), root, true, &mut out);
    concealed.append(&mut cx.concealed);
    (read.then_some(out), has_syntax)
}

/// Parse and walk a file a piece at a time ([`super::pieces`]), each
/// piece's tree dropped before the next is parsed; the first half of the
/// pieces and the second are walked side by side when a second core
/// exists ([`crate::engine::parallel::join`]), and their outputs joined in
/// file order. `None` when a piece has a syntax error: the file is then
/// walked whole, so syntax errors read as the parser sees the whole file.
fn walk_pieces(
    id: SourceId,
    text: &str,
    pieces: &[std::ops::Range<usize>],
    root: bool,
    diags: &mut Vec<Diagnostic>,
    concealed: &mut Vec<Span>,
) -> Option<Option<FileOut>> {
    let (first, rest) = pieces.split_at(pieces.len().div_ceil(2));
    let (a, b) = crate::engine::parallel::join(
        text.len(),
        || walk_run(id, text, first, root, true),
        || walk_run(id, text, rest, root, false),
    );
    let (mut a, b) = (a?, b?);
    diags.append(&mut a.diags);
    concealed.append(&mut a.concealed);
    if !a.read {
        // Past an unsupported format version nothing more is read.
        return Some(None);
    }
    let (mut out, mut b) = (a.out, b);
    diags.append(&mut b.diags);
    concealed.append(&mut b.concealed);
    out.append(b.out);
    Some(Some(out))
}

/// What walking a run of consecutive pieces found.
struct PieceRun {
    out: FileOut,
    diags: Vec<Diagnostic>,
    concealed: Vec<Span>,
    /// `false`: the file's format version is unsupported.
    read: bool,
}

/// Walk `pieces` in order; `starts` says whether they start the file.
/// `None` when one has a syntax error.
fn walk_run(
    id: SourceId,
    text: &str,
    pieces: &[std::ops::Range<usize>],
    root: bool,
    starts: bool,
) -> Option<PieceRun> {
    let mut run = PieceRun {
        out: FileOut::default(),
        diags: Vec::new(),
        concealed: Vec::new(),
        read: true,
    };
    for (i, piece) in pieces.iter().enumerate() {
        let piece_text = &text[piece.clone()];
        let (doc, errors) = DeTable::parse_recoverable(piece_text);
        if !errors.is_empty() {
            return None;
        }
        let mut cx = FileCtx {
            source: id,
            text: piece_text,
            base: u32::try_from(piece.start).ok()?,
            diags: &mut run.diags,
            concealed: Vec::new(),
        };
        let read = walk_file(&mut cx, doc.get_ref(), root, starts && i == 0, &mut run.out);
        run.concealed.append(&mut cx.concealed);
        if !read {
            run.read = false;
            break;
        }
    }
    Some(run)
}

/// One walked file.
pub(crate) struct Walked {
    pub out: FileOut,
}

/// Reads files through a [`Source`], assigning source ids in traversal order.
pub(crate) struct Reader<'s> {
    source: &'s dyn Source,
    pub sources: SourceMap,
    pub diags: Vec<Diagnostic>,
    pub files: Vec<Walked>,
    /// Whether some file had syntax errors (its tree is incomplete).
    pub syntax_errors: bool,
    /// Whether some include was not read (missing, refused, a pattern not
    /// supported): what it declares is unknown, so a reference to it is no
    /// finding of its own.
    pub unread: bool,
    /// Files read, by identity ([`Source::resolve`]: two spellings of one
    /// file are one file).
    loaded: BTreeSet<PathBuf>,
    /// The include chain: each file (path, identity) with the include that
    /// brought it in.
    stack: Vec<(PathBuf, PathBuf, Option<Origin>)>,
    /// What includes and prompt files must stay inside ([`Source::workspace`]).
    workspace: Option<PathBuf>,
    /// How large files are cut ([`super::pieces`]).
    pub pieces: Pieces,
}

/// When a file is parsed in pieces, and how large the pieces grow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pieces {
    /// Files from this size on are cut.
    pub from: usize,
    /// Each piece grows to this size before the next cut.
    pub size: usize,
}

impl Default for Pieces {
    fn default() -> Self {
        Self {
            from: SPLIT_FROM_BYTES,
            size: PIECE_BYTES,
        }
    }
}

/// What a file other than the root is read as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Include,
    /// A directory whose `*.toml` files are included.
    Listed,
    Prompt,
    PluginFile,
}

impl<'s> Reader<'s> {
    pub fn new(source: &'s dyn Source) -> Self {
        Self {
            source,
            sources: SourceMap::new(),
            diags: Vec::new(),
            files: Vec::new(),
            syntax_errors: false,
            unread: false,
            loaded: BTreeSet::new(),
            stack: Vec::new(),
            workspace: None,
            pieces: Pieces::default(),
        }
    }

    /// Read `path` (the root when `via` is `None`) and, recursively, its includes.
    ///
    /// A file with syntax errors reports at most
    /// [`MAX_DIAGNOSTICS_AFTER_SYNTAX_ERROR`] diagnostics, then one line
    /// saying how many more there were.
    pub fn read(&mut self, path: &Path, via: Option<Origin>) {
        let path = normalize(path);
        if via.is_none() {
            self.workspace = self.source.workspace(&path);
            // The root itself may be a link to a file elsewhere.
            if let (Some(ws), Some(real)) = (&self.workspace, self.source.resolve(&path))
                && !real.starts_with(ws)
            {
                let d = Diagnostic::error(
                    Code::IncludeOutside,
                    format!(
                        "`{}` is a link to a file outside the workspace `{}`",
                        self.source.display_name(&path),
                        ws.display()
                    ),
                )
                .with_help("name the file itself, inside the work tree");
                self.diags.push(d);
                return;
            }
        }
        let text = match self.source.read(&path) {
            Ok(text) => text,
            Err(e) => return self.read_error(e, via),
        };
        let identity = self.identity(&path);
        self.loaded.insert(identity.clone());
        let name = self.source.display_name(&path);
        let id = self.sources.add(name, path.clone(), text);
        let text = self.sources.text(id).to_owned();
        let mut file_diags = Vec::new();
        let mut concealed = Vec::new();
        let walked = split(&text, self.pieces.from, self.pieces.size)
            .and_then(|pieces| {
                walk_pieces(
                    id,
                    &text,
                    &pieces,
                    via.is_none(),
                    &mut file_diags,
                    &mut concealed,
                )
            })
            .map(|out| (out, false))
            .unwrap_or_else(|| {
                file_diags.clear();
                concealed.clear();
                walk_whole(id, &text, via.is_none(), &mut file_diags, &mut concealed)
            });
        let (out, has_syntax) = walked;
        drop(text);
        self.sources.conceal(id, concealed);
        if has_syntax {
            // The recovered tree lacks what did not parse: a "missing" key is
            // most likely the broken line, so do not report it twice.
            self.syntax_errors = true;
            // Recovery also fills broken values with placeholders that have
            // no position of their own; a type error on one of those would
            // point at the top of the file about a value nobody wrote.
            file_diags.retain(|d| {
                d.code != Code::MissingKey
                    && !(d.code == Code::WrongType
                        && d.labels.iter().all(|l| l.origin.span.is_empty()))
            });
            // After a syntax error, what follows is mostly its echo: the
            // first few, in file order, then one line saying how many more.
            if file_diags.len() > MAX_DIAGNOSTICS_AFTER_SYNTAX_ERROR {
                file_diags.sort_by_key(|d| d.labels.first().map_or(0, |l| l.origin.span.start));
                let more = file_diags.len() - MAX_DIAGNOSTICS_AFTER_SYNTAX_ERROR;
                file_diags.truncate(MAX_DIAGNOSTICS_AFTER_SYNTAX_ERROR);
                file_diags.push(Diagnostic::warning(
                    Code::Suppressed,
                    format!(
                        "… {more} more diagnostics in `{}` suppressed: fix the syntax errors above first",
                        self.sources.name(id)
                    ),
                ));
            }
        }
        self.diags.extend(file_diags);
        // Past an unsupported format version the file declares nothing.
        let mut out = out.unwrap_or_default();
        let includes = std::mem::take(&mut out.includes);
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        self.read_prompts(&dir, &mut out);
        self.read_plugin_files(&dir, &mut out);
        self.files.push(Walked { out });
        self.stack.push((path.clone(), identity, via));
        for inc in includes {
            for file in self.expand(&dir, &inc.path, inc.origin) {
                self.include(&file, inc.origin);
            }
        }
        self.stack.pop();
    }

    /// Read every agent's `prompt_file`, relative to the declaring file.
    fn read_prompts(&mut self, dir: &Path, out: &mut FileOut) {
        for def in &mut out.agents {
            let Some(agent) = def.value.as_mut() else {
                continue;
            };
            let Some((file, origin)) = agent.prompt_file.clone() else {
                continue;
            };
            let target = normalize(&dir.join(&file));
            let real = self.real(&target);
            if !self.admit(&target, real.as_deref(), origin, Part::Prompt) {
                def.value = None;
                continue;
            }
            match self.source.read(&target) {
                Ok(text) => agent.decl.prompt = text,
                Err(e) => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::IncludeMissing,
                            format!("cannot read the prompt file `{file}`: {}", e.message),
                        )
                        .at(Some(origin), "prompt file")
                        .with_help("prompt files are relative to the file that declares the agent"),
                    );
                    def.value = None;
                }
            }
        }
    }

    /// Read and hash the files of every process plugin, relative to the
    /// declaring file: what the plugin *is* (see
    /// [`crate::engine::model::ProcessCommand`]). A file listed in `files`
    /// must exist; an argv entry that is not a file is an argument.
    fn read_plugin_files(&mut self, dir: &Path, out: &mut FileOut) {
        use sha2::Digest;
        let wanted_by: std::collections::HashMap<Origin, Vec<super::plugin::WantedFile>> =
            std::mem::take(&mut out.plugin_files).into_iter().collect();
        if wanted_by.is_empty() {
            return;
        }
        for def in &mut out.plugins {
            let Some(wanted) = wanted_by.get(&def.origin) else {
                continue;
            };
            let Some(process) = def.value.as_mut().and_then(|m| m.process.as_mut()) else {
                continue;
            };
            let mut files = Vec::new();
            let mut broken = false;
            // Arguments first: the program counts only when none is a file.
            let (program, arguments): (Vec<_>, Vec<_>) = wanted.iter().partition(|w| w.program);
            for w in arguments.into_iter().chain(program) {
                if w.program && !files.is_empty() {
                    continue;
                }
                let target = normalize(&dir.join(&w.path));
                let real = self.real(&target);
                if !w.required {
                    // `python3` is a program on PATH, `-u` an option: an
                    // argv entry counts only when it is a file beside the
                    // manifest (inside the workspace).
                    let inside = match (&self.workspace, &real) {
                        (Some(ws), Some(r)) => r.starts_with(ws),
                        _ => true,
                    };
                    if !inside || self.source.read_bytes(&target).is_err() {
                        continue;
                    }
                } else if !self.admit(&target, real.as_deref(), w.origin, Part::PluginFile) {
                    broken = true;
                    continue;
                }
                match self.source.read_bytes(&target) {
                    Ok(bytes) => files.push(crate::engine::model::PluginFile {
                        path: relative_spelling(&w.path),
                        sha256: format!("{:x}", sha2::Sha256::digest(&bytes)),
                    }),
                    Err(e) => {
                        broken = true;
                        self.diags.push(
                            Diagnostic::error(
                                Code::IncludeMissing,
                                format!("cannot read the plugin file `{}`: {}", w.path, e.message),
                            )
                            .at(Some(w.origin), "plugin file")
                            .with_help(
                                "plugin files are relative to the file that declares the plugin",
                            ),
                        );
                    }
                }
            }
            if broken {
                // The load fails on the error above. The manifest stays, so
                // its plugin, tools and capabilities are known: else an agent
                // listing its tool would first be told no plugin declares it.
                continue;
            }
            files.sort_by(|a, b| a.path.cmp(&b.path));
            files.dedup_by(|a, b| a.path == b.path);
            let process = std::sync::Arc::make_mut(process);
            process.files = files;
            let here = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            process.dir = std::path::absolute(here).unwrap_or_else(|_| here.to_path_buf());
        }
    }

    fn include(&mut self, file: &Path, origin: Origin) {
        let file = normalize(file);
        let real = self.real(&file);
        let identity = real.clone().unwrap_or_else(|| file.clone());
        if let Some(k) = self.stack.iter().position(|(_, id, _)| *id == identity) {
            let names: Vec<String> = self.stack[k..]
                .iter()
                .map(|(p, _, _)| self.source.display_name(p))
                .chain([self.source.display_name(&file)])
                .collect();
            let (first, label) = match self.stack[k].2 {
                Some(o) => (Some(o), "first included here"),
                None => (
                    self.stack.get(k + 1).and_then(|s| s.2),
                    "the cycle starts here",
                ),
            };
            let mut d = Diagnostic::error(
                Code::IncludeCycle,
                format!("include cycle: {}", names.join(" → ")),
            )
            .at(Some(origin), "this include closes the cycle")
            .with_help("remove one of the includes; each file may be included once");
            if first != Some(origin) {
                d = d.also(first, label);
            }
            self.diags.push(d);
            return;
        }
        if self.loaded.contains(&identity) {
            // Included twice without a cycle (a diamond): read it once.
            return;
        }
        if self.admit(&file, real.as_deref(), origin, Part::Include) {
            self.read(&file, Some(origin));
        }
    }

    /// Where `path` really is, when the source confines files to a
    /// workspace (a file system: symbolic links followed); `None` otherwise
    /// or when nothing is there.
    fn real(&self, path: &Path) -> Option<PathBuf> {
        self.workspace
            .as_ref()
            .and_then(|_| self.source.resolve(path))
    }

    /// What makes two paths the same file: where it really is, else the
    /// (normalized) path.
    fn identity(&self, path: &Path) -> PathBuf {
        self.real(path).unwrap_or_else(|| path.to_path_buf())
    }

    /// Whether `file` may be read as `part` of the composition: an include
    /// is a `.toml` file, and nothing leaves the workspace once symbolic
    /// links are followed. A path that does not exist is admitted (reading
    /// it reports that). `real` is [`Self::real`] of `file`. Reports the
    /// refusal.
    fn admit(&mut self, file: &Path, real: Option<&Path>, origin: Origin, part: Part) -> bool {
        let name = self.source.display_name(file);
        let what = match part {
            Part::Include => "include",
            Part::Listed => "included directory",
            Part::Prompt => "prompt file",
            Part::PluginFile => "plugin file",
        };
        let outside = match (&self.workspace, real) {
            (Some(ws), Some(real)) => (!real.starts_with(ws)).then_some(ws),
            _ => None,
        };
        let d = if let Some(ws) = outside {
            Diagnostic::error(
                Code::IncludeOutside,
                format!(
                    "the {what} `{name}` lies outside the workspace `{}`",
                    ws.display()
                ),
            )
            .at(Some(origin), "outside the workspace")
            .with_help(
                "includes and prompt files stay inside the git work tree that holds the \
                 composition (its directory outside one), symbolic links followed: \
                 move or copy the file there",
            )
        } else if part == Part::Include
            && (!is_toml(file) || real.is_some_and(|r| !is_toml(r)))
            && (real.is_some() || self.source.resolve(file).is_some())
        {
            Diagnostic::error(
                Code::IncludeNotToml,
                format!("the include `{name}` is not a `.toml` file"),
            )
            .at(Some(origin), "not a `.toml` file")
            .with_help("include a `.toml` file, a directory (its `*.toml` files) or `dir/*.toml`")
        } else {
            return true;
        };
        self.diags.push(d);
        if matches!(part, Part::Include | Part::Listed) {
            self.unread = true;
        }
        false
    }

    /// The files an include names: a file, a directory's `*.toml` files, or
    /// `dir/*.toml`.
    fn expand(&mut self, dir: &Path, include: &str, origin: Origin) -> Vec<PathBuf> {
        let target = dir.join(include);
        let listed = if let Some(prefix) = include.strip_suffix("*.toml") {
            if !(prefix.is_empty() || prefix.ends_with('/') || prefix.ends_with('\\')) {
                self.unsupported_pattern(include, origin);
                return Vec::new();
            }
            Some(dir.join(prefix))
        } else if include.contains(['*', '?', '[']) {
            self.unsupported_pattern(include, origin);
            return Vec::new();
        } else if self.source.is_dir(&target) {
            Some(target.clone())
        } else {
            None
        };
        let Some(list_dir) = listed else {
            return vec![target];
        };
        let list_dir = normalize(&list_dir);
        let real = self.real(&list_dir);
        if !self.admit(&list_dir, real.as_deref(), origin, Part::Listed) {
            return Vec::new();
        }
        match self.source.list_toml(&list_dir) {
            Ok(files) => files,
            Err(e) => {
                self.read_error(e, Some(origin));
                Vec::new()
            }
        }
    }

    fn unsupported_pattern(&mut self, include: &str, origin: Origin) {
        let d = Diagnostic::error(
            Code::InvalidValue,
            format!("include pattern `{include}` is not supported"),
        )
        .at(Some(origin), "unsupported pattern")
        .with_help("include a file, a directory (all its `*.toml` files) or `dir/*.toml`");
        self.diags.push(d);
        self.unread = true;
    }

    fn read_error(&mut self, e: SourceError, via: Option<Origin>) {
        self.unread |= via.is_some();
        let code = match (e.kind, via) {
            (SourceErrorKind::NotFound, Some(_)) => Code::IncludeMissing,
            _ => e.code(),
        };
        let label = if code == Code::IncludeMissing {
            "included here"
        } else {
            "while reading this include"
        };
        let mut d = Diagnostic::error(code, e.message).at(via, label);
        d.help = e.help;
        self.diags.push(d);
    }
}

/// A plugin file's path as the identity keeps it: lexically normalized,
/// relative to the manifest's folder, `/`-separated, so two spellings of one
/// file (`plugin.py`, `./plugin.py`, `lib/../plugin.py`) are one file, as
/// two spellings of one include are.
fn relative_spelling(path: &str) -> String {
    normalize(Path::new(path))
        .components()
        .map(|c| match c {
            // An absolute path keeps its one leading `/` (joining the root
            // as a component of its own wrote `//opt/p.py`).
            std::path::Component::RootDir => std::borrow::Cow::Borrowed(""),
            c => c.as_os_str().to_string_lossy(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod spelling_tests {
    use super::relative_spelling;

    #[test]
    fn a_plugin_file_has_one_spelling_absolute_paths_one_leading_slash() {
        assert_eq!(relative_spelling("plugin.py"), "plugin.py");
        assert_eq!(relative_spelling("./plugin.py"), "plugin.py");
        assert_eq!(relative_spelling("lib/../plugin.py"), "plugin.py");
        assert_eq!(relative_spelling("/opt/p.py"), "/opt/p.py");
        assert_eq!(relative_spelling("/opt/./x/../p.py"), "/opt/p.py");
    }
}
